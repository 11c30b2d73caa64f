package actioncall

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/wapipe/wapipe/internal/fault"
)

// Kind is what the worker should do after a call.
type Kind int

const (
	// KindNone is the Kind of a zero Result; Call never returns it.
	KindNone Kind = iota
	// Done: the business ran the action (2xx). Tell the user Result.Reply, or a localized
	// "done" when it is empty.
	Done
	// Refused: the business declined (4xx other than 408 and 429). Tell the user Result.Reply,
	// or a localized action error when it is empty. Do not retry.
	Refused
	// Retry: the business could not answer now (5xx, 408, 429, timeout, network error). Retry
	// the call later, no sooner than Result.RetryAfter when it is set, with the same Request;
	// after the last attempt, tell the user a localized action error.
	Retry
	// Failed: the call cannot succeed as it is (invalid URL or request, outside dev an address
	// that is not public, a redirect, an unexpected status). Tell the user a localized action
	// error. Do not retry.
	Failed
)

func (k Kind) String() string {
	switch k {
	case KindNone:
		return "none"
	case Done:
		return "done"
	case Refused:
		return "refused"
	case Retry:
		return "retry"
	case Failed:
		return "failed"
	default:
		return "Kind(" + strconv.Itoa(int(k)) + ")"
	}
}

// Result is the outcome of one call.
type Result struct {
	Kind Kind
	// Reply is the business's text for the user from a Done or Refused answer's
	// {"reply":"…"}, trimmed and cut to MaxReplyRunes; "" when it sent none.
	Reply string
	// HTTPStatus is the answer's status; 0 when no answer arrived.
	HTTPStatus int
	// RetryAfter is the answer's Retry-After (Retry only); 0 when absent.
	RetryAfter time.Duration
	// Note says, for logs, why the answer's body was not used as it came ("answer over 64 KiB
	// ignored", "reply cut to 4096 characters"…); "" when nothing was left out. It never
	// quotes the body.
	Note string
}

// The kinds of Call errors (fault.Kind), for errors.Is. The error itself is an *Error.
var (
	// ErrRetryable: the call may succeed later (Kind Retry).
	ErrRetryable = fault.NewKind(fault.Retryable, "action_retryable", "action call retryable")
	// ErrPermanent: the call cannot succeed as it is (Kind Failed).
	ErrPermanent = fault.NewKind(fault.Permanent, "action_failed", "action call failed")
)

// The causes of permanent failures, also for errors.Is.
var (
	// ErrInvalidURL: the action URL is not an absolute https:// URL (or http:// to a loopback
	// host), or carries a user or password.
	ErrInvalidURL = errors.New("invalid action URL")
	// ErrInvalidRequest: the Request misses a field, its data cannot be encoded, or the
	// secret is empty.
	ErrInvalidRequest = errors.New("invalid action request")
	// ErrRedirect: the business answered a redirect, which is never followed.
	ErrRedirect = errors.New("action URL answered a redirect")
	// ErrUnexpectedStatus: the answer's status is outside 200–599 and means nothing here.
	ErrUnexpectedStatus = errors.New("unexpected HTTP status")
	// ErrNotPublic (addr.go): outside dev, the URL is not https:// or its host is, or
	// resolves to, an address that is not public. No connection was made.
)

// Error is a call that ended in Retry or Failed: its Kind (ErrRetryable or ErrPermanent), the
// answer's status (0 when no answer arrived) and Retry-After, a Reason without the secret, the
// body or the URL's query, and the cause (one of the sentinels above, context.DeadlineExceeded,
// a net.Error…).
type Error = fault.Error

// classifyStatus returns the Kind of an answer with this HTTP status.
func classifyStatus(status int) Kind {
	switch {
	case status >= 200 && status <= 299:
		return Done
	case status == http.StatusRequestTimeout, status == http.StatusTooManyRequests:
		// The business (or a proxy in front of it) asks to come back later: not a refusal.
		return Retry
	case status >= 400 && status <= 499:
		return Refused
	case status >= 500 && status <= 599:
		return Retry
	default: // 1xx as a final answer, 3xx (redirects are not followed), 600+
		return Failed
	}
}

// maxRetryAfter caps a Retry-After: a business asking for more than a day is misconfigured,
// and the worker's queue has its own maximum backoff anyway.
const maxRetryAfter = 24 * time.Hour

// parseRetryAfter reads a Retry-After header: delay-seconds or an HTTP date.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs <= 0 {
			return 0
		}
		return time.Duration(min(secs, int64(maxRetryAfter/time.Second))) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return min(d.Round(time.Second), maxRetryAfter)
		}
	}
	return 0
}
