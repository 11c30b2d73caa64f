package console

import (
	"github.com/wapipe/wapipe/internal/console/failures"
	"github.com/wapipe/wapipe/internal/console/inbox"
	"github.com/wapipe/wapipe/internal/console/page"
)

// The names this package's tests use for what its rooms and the page kit hold: the tests drive
// the whole console (its routes, over fakes), as operators do.
const (
	CSRFCookie           = page.CSRFCookie
	CSRFField            = page.CSRFField
	RequestIDField       = page.RequestIDField
	InboxPageSize        = inbox.PageSize
	MaxReplyRunes        = inbox.MaxReplyRunes
	MaxPhoneRequestRunes = inbox.MaxPhoneRequestRunes
	DefaultPhoneRequest  = inbox.DefaultPhoneRequest
	usernameScan         = inbox.UsernameScan
	operatorReplyEvent   = inbox.OperatorReplyEvent
)

type (
	ReplyRequest = inbox.ReplyRequest
	ReplyResult  = inbox.ReplyResult
	Replayer     = failures.Replayer
)

var (
	newRequestID = page.NewRequestID
	validToken   = page.ValidToken
)
