package refusal

import (
	"errors"
	"fmt"
)

// The codes of refusals, as callers read them (CONTRACT.md names them).
const (
	// InvalidRequest: the request, or Meta's refusal of it; 400 unless HTTP names the problem
	// (a body too large, too slow, of the wrong type).
	InvalidRequest = "invalid_request"
	// Unauthenticated: no valid API key (401).
	Unauthenticated = "unauthenticated"
	// TenantNotFound: the tenant no longer exists. The api answers it as Unauthenticated (a key
	// whose tenant is gone opens nothing); the tenant routes say NotFound.
	TenantNotFound = "tenant_not_found"
	// NotFound: no such thing (404): a message, or the tenant of a tenant route.
	NotFound = "not_found"
	// Forbidden: the tenant may not do this (403): delete a template of a shared account that
	// another tenant created.
	Forbidden = "forbidden"
	// ReauthRequired: Meta refused the tenant's token, which must be renewed (409).
	ReauthRequired = "WHATSAPP_REAUTH_REQUIRED"
	// NoToken: the tenant has no usable access token (409).
	NoToken = "no_token"
	// OutsideWindow: a free-form message outside the contact's 24-hour customer service window
	// (422): only a template may go.
	OutsideWindow = "outside_customer_service_window"
	// IdempotencyKeyReused: an Idempotency-Key used before with another request body (422).
	IdempotencyKeyReused = "idempotency_key_reused"
	// ContactOptedOut: a MARKETING template to a contact who stopped marketing messages (422;
	// Meta would answer 131050).
	ContactOptedOut = "contact_opted_out"
	// PhoneNumberRequired: an authentication template with a one-tap, zero-tap or copy-code
	// button addressed by recipient (a BSUID) alone, which Meta refuses (131062) (422).
	PhoneNumberRequired = "phone_number_required"
	// TemplateNotApproved: a template wapipe knows not to be approved at Meta (422).
	TemplateNotApproved = "template_not_approved"
	// TemplateNameTaken: a template name another business created on the account shared with
	// it (409).
	TemplateNameTaken = "template_name_taken"
	// RateLimited: over a rate limit (429).
	RateLimited = "rate_limited"
	// MediaTooLarge: a file over its limit (413).
	MediaTooLarge = "media_too_large"
	// UnsupportedMediaType: WhatsApp takes no file of this type (415).
	UnsupportedMediaType = "unsupported_media_type"
	// MediaRefused: WhatsApp refused a file of a type it takes (the api's 422).
	MediaRefused = "media_refused"
	// WhatsAppRefused: WhatsApp refused the file (the tenant route's 502, the api's MediaRefused).
	WhatsAppRefused = "whatsapp_refused"
	// MediaGone: Meta no longer has the file (404).
	MediaGone = "media_gone"
	// Unavailable: a dependency failed; the caller may try again (503).
	Unavailable = "unavailable"
	// BadGateway: Meta's side failed (502).
	BadGateway = "bad_gateway"
	// Internal: a defect (500).
	Internal = "internal"
)

// Error is a refusal: Code says which rule (one of the codes above), Message is what the caller
// reads. Status is the HTTP status it was answered with, when it was read from an answer (a
// client sets it, for any answer other than the route's success, with Code and Message empty
// when the body was not a refusal), or is answered with (a tenant route's); zero otherwise, and
// the answering service maps the code to a status.
type Error struct {
	Status  int    `json:"-"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

// New is a refusal with code and message, and no status of its own.
func New(code, message string) *Error { return &Error{Code: code, Message: message} }

// WithStatus is a refusal answered with status.
func WithStatus(status int, code, message string) *Error {
	return &Error{Status: status, Code: code, Message: message}
}

func (e *Error) Error() string {
	if e.Status != 0 {
		return fmt.Sprintf("%d %s: %s", e.Status, e.Code, e.Message)
	}
	return e.Code + ": " + e.Message
}

// UserMessage is the text to show the person who asked (the console shows it as it is).
func (e *Error) UserMessage() string { return e.Message }

// As returns the refusal in err's chain, if there is one.
func As(err error) (*Error, bool) {
	var e *Error
	ok := errors.As(err, &e)
	return e, ok
}

// Body is a refusal's body over HTTP: {"error":{"code","message"}}.
type Body struct {
	Error *Error `json:"error"`
}
