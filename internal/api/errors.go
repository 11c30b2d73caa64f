package api

import (
	"errors"
	"net/http"

	"github.com/wapipe/wapipe/internal/outbox"
)

// Error codes of {"error":{"code","message"}} (CONTRACT.md, Sending on a tenant's behalf).
const (
	CodeUnauthenticated      = "unauthenticated"
	CodeInvalidRequest       = outbox.CodeInvalidRequest
	CodeReauthRequired       = outbox.CodeReauthRequired
	CodeOutsideWindow        = outbox.CodeOutsideWindow
	CodeIdempotencyKeyReused = outbox.CodeIdempotencyKeyReused
	CodeNotFound             = "not_found"
	CodeUnavailable          = "unavailable"
	// CodeRateLimited answers 429 (API_RATE_PER_ADDRESS, API_RATE_PER_KEY).
	CodeRateLimited = "rate_limited"
	// CodeContactOptedOut answers 422: a MARKETING template to a contact who stopped marketing
	// messages (Meta would answer 131050).
	CodeContactOptedOut = "contact_opted_out"
)

// Codes of the body's transport problems, which HTTP names with statuses of their own; the
// caller reads invalid_request for each (answers).
const (
	codeUnsupportedMediaType = "unsupported_media_type"
	codeBodyTooLarge         = "body_too_large"
	codeBodyTimeout          = "body_timeout"
	codeInternal             = "internal"
)

// answer is how one code is answered: the HTTP status, and the code the caller reads.
type answer struct {
	status int
	code   string
}

// answers is the one table of the api's error answers, by the code of the error (a refusal's,
// or the code of the api's own answer). Every status the api answers with an error is here.
var answers = map[string]answer{
	CodeInvalidRequest:       {http.StatusBadRequest, CodeInvalidRequest},
	codeUnsupportedMediaType: {http.StatusUnsupportedMediaType, CodeInvalidRequest},
	codeBodyTooLarge:         {http.StatusRequestEntityTooLarge, CodeInvalidRequest},
	codeBodyTimeout:          {http.StatusRequestTimeout, CodeInvalidRequest},
	CodeUnauthenticated:      {http.StatusUnauthorized, CodeUnauthenticated},
	CodeNotFound:             {http.StatusNotFound, CodeNotFound},
	CodeReauthRequired:       {http.StatusConflict, CodeReauthRequired},
	CodeOutsideWindow:        {http.StatusUnprocessableEntity, CodeOutsideWindow},
	CodeIdempotencyKeyReused: {http.StatusUnprocessableEntity, CodeIdempotencyKeyReused},
	CodeRateLimited:          {http.StatusTooManyRequests, CodeRateLimited},
	CodeContactOptedOut:      {http.StatusUnprocessableEntity, CodeContactOptedOut},
	CodeUnavailable:          {http.StatusServiceUnavailable, CodeUnavailable},
	codeInternal:             {http.StatusInternalServerError, codeInternal},
}

// refusalOf returns the refusal in err's chain: the outbox's, or the api's own refusal of a
// request it cannot read (refuse).
func refusalOf(err error) (*outbox.Refusal, bool) {
	var r *outbox.Refusal
	ok := errors.As(err, &r)
	return r, ok
}

// refuse is the api's own refusal of a send request, before the outbox's rules.
func refuse(code, message string) *outbox.Refusal {
	return &outbox.Refusal{Code: code, Message: message}
}

// writeRefusal answers r as {"error":{"code","message"}} with its code's status.
func writeRefusal(w http.ResponseWriter, r *outbox.Refusal) { writeError(w, r.Code, r.Message) }

// writeError answers {"error":{"code","message"}} with the status answers gives code; a code
// missing from the table is an internal error (500), shown under its own code.
func writeError(w http.ResponseWriter, code, message string) {
	a, ok := answers[code]
	if !ok {
		a = answer{answers[codeInternal].status, code}
	}
	writeJSON(w, a.status, map[string]any{"error": map[string]string{"code": a.code, "message": message}})
}
