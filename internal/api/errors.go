package api

import (
	"net/http"

	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/internal/refusal"
)

// The api answers an error as {"error":{"code","message"}} (CONTRACT.md, Sending on a tenant's
// behalf): a *refusal.Error, the outbox's or the api's own, with the codes of package refusal.

// Keys of the answers to the body's transport problems, which HTTP names with statuses of their
// own: they are never on the wire, the caller reads invalid_request for each (answers).
const (
	// codeWrongContentType: a body that is not the expected format (415).
	codeWrongContentType = "wrong_content_type"
	codeBodyTooLarge     = "body_too_large"
	codeBodyTimeout      = "body_timeout"
)

// Messages of the answers whose caller must not learn more than the code.
const (
	msgUnauthenticated = "a valid API key is required: Authorization: Bearer wpk_…"
	msgUnavailable     = "temporarily unavailable, retry with the same Idempotency-Key"
)

// answer is how one code is answered: the HTTP status, the code the caller reads and, when set,
// the message that replaces the error's own.
type answer struct {
	status  int
	code    string
	message string
}

// answers is the one table of the api's error answers, by the code of the error (a refusal's,
// or the key of a transport problem). Every status the api answers with an error is here.
var answers = map[string]answer{
	refusal.InvalidRequest:  {http.StatusBadRequest, refusal.InvalidRequest, ""},
	codeWrongContentType:    {http.StatusUnsupportedMediaType, refusal.InvalidRequest, ""},
	codeBodyTooLarge:        {http.StatusRequestEntityTooLarge, refusal.InvalidRequest, ""},
	codeBodyTimeout:         {http.StatusRequestTimeout, refusal.InvalidRequest, ""},
	refusal.Unauthenticated: {http.StatusUnauthorized, refusal.Unauthenticated, msgUnauthenticated},
	// A key whose tenant is gone is a key that no longer opens anything.
	refusal.TenantNotFound:       {http.StatusUnauthorized, refusal.Unauthenticated, msgUnauthenticated},
	refusal.NotFound:             {http.StatusNotFound, refusal.NotFound, ""},
	refusal.ReauthRequired:       {http.StatusConflict, refusal.ReauthRequired, ""},
	refusal.OutsideWindow:        {http.StatusUnprocessableEntity, refusal.OutsideWindow, ""},
	refusal.PhoneNumberRequired:  {http.StatusUnprocessableEntity, refusal.PhoneNumberRequired, ""},
	refusal.IdempotencyKeyReused: {http.StatusUnprocessableEntity, refusal.IdempotencyKeyReused, ""},
	refusal.RateLimited:          {http.StatusTooManyRequests, refusal.RateLimited, ""},
	refusal.Unavailable:          {http.StatusServiceUnavailable, refusal.Unavailable, msgUnavailable},
	refusal.ContactOptedOut:      {http.StatusUnprocessableEntity, refusal.ContactOptedOut, ""},
	refusal.TemplateNotApproved:  {http.StatusUnprocessableEntity, refusal.TemplateNotApproved, ""},
	refusal.TemplateNameTaken:    {http.StatusConflict, refusal.TemplateNameTaken, ""},
	refusal.MediaTooLarge:        {http.StatusRequestEntityTooLarge, refusal.MediaTooLarge, ""},
	refusal.UnsupportedMediaType: {http.StatusUnsupportedMediaType, refusal.UnsupportedMediaType, ""},
	refusal.MediaRefused:         {http.StatusUnprocessableEntity, refusal.MediaRefused, ""},
	refusal.Internal:             {http.StatusInternalServerError, refusal.Internal, ""},
	// Neither the caller's request nor a dependency that is down; the Embedded Signup pages
	// (internal/signup) answer with the same statuses.
	refusal.Forbidden:  {http.StatusForbidden, refusal.Forbidden, ""},
	refusal.BadGateway: {http.StatusBadGateway, refusal.BadGateway, ""},
}

// errUnauthenticated is every failed authentication: the answer never says which part failed.
var errUnauthenticated = refusal.New(refusal.Unauthenticated, "missing, unknown, revoked or expired API key")

// fail answers err, the one way a handler answers an error: a refusal in err's chain (the
// outbox's or the api's own) with its code's row of answers, anything else as a dependency that
// failed (503 unavailable; the error is logged, never shown).
func fail(w http.ResponseWriter, r *http.Request, err error) {
	ctx := r.Context()
	logger := logging.FromContext(ctx)
	code, message := refusal.Unavailable, ""
	if ref, ok := refusal.As(err); ok {
		code, message = ref.Code, ref.Message
	}
	switch answers[code].status {
	case http.StatusUnauthorized:
		logger.InfoContext(ctx, "request refused: not authenticated", "event", "api_unauthenticated")
		w.Header().Set("WWW-Authenticate", `Bearer realm="wapipe"`)
	case http.StatusServiceUnavailable:
		logger.ErrorContext(ctx, "request failed: a dependency is unavailable", "event", "api_unavailable", "error", err)
		w.Header().Set("Retry-After", "5")
	}
	writeError(w, code, message)
}

// writeError answers {"error":{"code","message"}} with the status answers gives code; a code
// missing from the table is an internal error (500), shown under its own code.
func writeError(w http.ResponseWriter, code, message string) {
	a, ok := answers[code]
	if !ok {
		a = answer{answers[refusal.Internal].status, code, ""}
	}
	if a.message != "" {
		message = a.message
	}
	writeJSON(w, a.status, refusal.Body{Error: refusal.New(a.code, message)})
}
