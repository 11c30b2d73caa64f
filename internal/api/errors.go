package api

import (
	"errors"
	"net/http"

	"github.com/wapipe/wapipe/internal/logging"
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
	// CodeMediaTooLarge answers 413: an upload over its type's limit (POST /v1/media).
	CodeMediaTooLarge = "media_too_large"
	// CodeMediaRefused answers 422: WhatsApp refused an uploaded file of a type it takes.
	CodeMediaRefused = "media_refused"
	// CodePhoneNumberRequired answers 422: an authentication template with a one-tap, zero-tap
	// or copy-code button addressed by recipient (a BSUID) alone, which Meta refuses (131062).
	CodePhoneNumberRequired = "phone_number_required"
)

// Codes of the body's transport problems, which HTTP names with statuses of their own; the
// caller reads invalid_request for each (answers).
const (
	codeUnsupportedMediaType = "unsupported_media_type"
	codeBodyTooLarge         = "body_too_large"
	codeBodyTimeout          = "body_timeout"
	codeInternal             = "internal"
	// codeMediaTypeRefused is an upload of a type WhatsApp does not take: 415 under the
	// contract's code unsupported_media_type (a body that is not the expected format reads
	// invalid_request).
	codeMediaTypeRefused = "media_type_refused"
)

// Codes of refusals that are neither the caller's request nor a dependency that is down. The
// Embedded Signup pages (internal/signup) answer with the same statuses.
const (
	// codeForbidden: the tenant may not do this (delete a template another tenant created).
	codeForbidden = "forbidden"
	// codeBadGateway: Meta's side failed.
	codeBadGateway = "bad_gateway"
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
// or the code of the api's own answer). Every status the api answers with an error is here.
var answers = map[string]answer{
	CodeInvalidRequest:       {http.StatusBadRequest, CodeInvalidRequest, ""},
	codeUnsupportedMediaType: {http.StatusUnsupportedMediaType, CodeInvalidRequest, ""},
	codeBodyTooLarge:         {http.StatusRequestEntityTooLarge, CodeInvalidRequest, ""},
	codeBodyTimeout:          {http.StatusRequestTimeout, CodeInvalidRequest, ""},
	CodeUnauthenticated:      {http.StatusUnauthorized, CodeUnauthenticated, msgUnauthenticated},
	// A key whose tenant is gone is a key that no longer opens anything.
	outbox.CodeTenantNotFound: {http.StatusUnauthorized, CodeUnauthenticated, msgUnauthenticated},
	CodeNotFound:              {http.StatusNotFound, CodeNotFound, ""},
	CodeReauthRequired:        {http.StatusConflict, CodeReauthRequired, ""},
	CodeOutsideWindow:         {http.StatusUnprocessableEntity, CodeOutsideWindow, ""},
	CodePhoneNumberRequired:   {http.StatusUnprocessableEntity, CodePhoneNumberRequired, ""},
	CodeIdempotencyKeyReused:  {http.StatusUnprocessableEntity, CodeIdempotencyKeyReused, ""},
	CodeRateLimited:           {http.StatusTooManyRequests, CodeRateLimited, ""},
	CodeUnavailable:           {http.StatusServiceUnavailable, CodeUnavailable, msgUnavailable},
	CodeContactOptedOut:       {http.StatusUnprocessableEntity, CodeContactOptedOut, ""},
	CodeTemplateNotApproved:   {http.StatusUnprocessableEntity, CodeTemplateNotApproved, ""},
	CodeMediaTooLarge:         {http.StatusRequestEntityTooLarge, CodeMediaTooLarge, ""},
	codeMediaTypeRefused:      {http.StatusUnsupportedMediaType, codeUnsupportedMediaType, ""},
	CodeMediaRefused:          {http.StatusUnprocessableEntity, CodeMediaRefused, ""},
	codeInternal:              {http.StatusInternalServerError, codeInternal, ""},
	codeForbidden:             {http.StatusForbidden, codeForbidden, ""},
	codeBadGateway:            {http.StatusBadGateway, codeBadGateway, ""},
}

// errUnauthenticated is every failed authentication: the answer never says which part failed.
var errUnauthenticated = refuse(CodeUnauthenticated, "missing, unknown, revoked or expired API key")

// refusalOf returns the refusal in err's chain: the outbox's, or the api's own refusal of a
// request it cannot read (refuse).
func refusalOf(err error) (*outbox.Refusal, bool) {
	var r *outbox.Refusal
	ok := errors.As(err, &r)
	return r, ok
}

// refuse is the api's own refusal of a request, before the outbox's rules.
func refuse(code, message string) *outbox.Refusal {
	return &outbox.Refusal{Code: code, Message: message}
}

// fail answers err, the one way a handler answers an error: a refusal in err's chain (the
// outbox's or the api's own) with its code's row of answers, anything else as a dependency that
// failed (503 unavailable; the error is logged, never shown).
func fail(w http.ResponseWriter, r *http.Request, err error) {
	ctx := r.Context()
	logger := logging.FromContext(ctx)
	code, message := CodeUnavailable, ""
	if ref, ok := refusalOf(err); ok {
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
		a = answer{answers[codeInternal].status, code, ""}
	}
	if a.message != "" {
		message = a.message
	}
	writeJSON(w, a.status, map[string]any{"error": map[string]string{"code": a.code, "message": message}})
}
