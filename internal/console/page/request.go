package page

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
)

type operatorKey struct{}

// WithOperator returns ctx naming op, the verified operator of the request (the console's
// middleware, which verifies them).
func WithOperator(ctx context.Context, op string) context.Context {
	return context.WithValue(ctx, operatorKey{}, op)
}

// OperatorFrom returns the operator of the request's context: a verified email, or the dev
// operator.
func OperatorFrom(ctx context.Context) string {
	op, _ := ctx.Value(operatorKey{}).(string)
	return op
}

// CSRFCookie holds the double-submit token: every form carries the same value in CSRFField, which
// a page of another origin can neither read nor set.
const (
	CSRFCookie = "wapipe_console_csrf"
	CSRFField  = "csrf"
	// RequestIDField carries the id made when the form was rendered: the audit entry's id.
	RequestIDField = "request_id"
)

type csrfKey struct{}

// WithCSRFCookie gives the browser a CSRF token when it has none, and puts the token in the
// context for the forms.
func WithCSRFCookie(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok := ""
		if c, err := r.Cookie(CSRFCookie); err == nil && ValidToken(c.Value) {
			tok = c.Value
		} else if r.Method == http.MethodGet || r.Method == http.MethodHead {
			tok = randomToken()
			http.SetCookie(w, &http.Cookie{
				Name: CSRFCookie, Value: tok, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode,
				Secure: r.TLS != nil || r.Header.Get("X-Forwarded-Proto") == "https",
			})
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), csrfKey{}, tok)))
	})
}

// CSRFToken is the request's CSRF token, which its page's forms carry.
func CSRFToken(ctx context.Context) string {
	tok, _ := ctx.Value(csrfKey{}).(string)
	return tok
}

// Protect guards a state-changing handler: net/http's cross-origin protection (Sec-Fetch-Site,
// Origin) and the double-submit token must both pass.
func (k *Kit) Protect(h http.Handler) http.Handler {
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		Logger(r.Context()).Warn("cross-origin POST refused", "event", "console_csrf_refused", "path", r.URL.Path)
		k.RenderError(w, r, http.StatusForbidden, "Cross-origin request refused.")
	}))
	return cop.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
		if err := r.ParseForm(); err != nil {
			k.RenderError(w, r, http.StatusRequestEntityTooLarge, "The form is too large.")
			return
		}
		c, err := r.Cookie(CSRFCookie)
		form := r.PostForm.Get(CSRFField)
		if err != nil || !ValidToken(c.Value) || subtle.ConstantTimeCompare([]byte(c.Value), []byte(form)) != 1 {
			Logger(r.Context()).Warn("POST without a valid CSRF token refused", "event", "console_csrf_refused", "path", r.URL.Path)
			k.RenderError(w, r, http.StatusForbidden, "The form has expired or did not come from this console: reload the page and try again.")
			return
		}
		h.ServeHTTP(w, r)
	}))
}

// maxFormBytes caps a form: a reply is at most a WhatsApp text (4096 characters).
const maxFormBytes = 64 << 10

// randomToken returns 32 random bytes, base64url: a CSRF token.
func randomToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// NewRequestID returns a fresh request id for a form (store.ValidRequestID accepts it).
func NewRequestID() string {
	b := make([]byte, 18)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// ValidToken reports whether s is a CSRF token as randomToken makes them.
func ValidToken(s string) bool {
	if len(s) != 43 {
		return false
	}
	_, err := base64.RawURLEncoding.DecodeString(s)
	return err == nil
}
