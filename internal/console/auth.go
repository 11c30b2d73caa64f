package console

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"strings"

	"github.com/wapipe/wapipe/internal/logging"
)

// IdentityHeader is the header IAP sets to the signed-in user's email, as
// "accounts.google.com:alice@example.com".
const IdentityHeader = "X-Goog-Authenticated-User-Email"

// Operator names shown when no identity header comes: Cloud Run's IAM check (gcloud run services
// proxy) lets an invoker in without telling who; on loopback in dev there is no proxy at all.
const (
	OperatorUnknown = "unknown operator (IAM)"
	OperatorDev     = "local operator (dev)"
)

type operatorKey struct{}

// OperatorFrom returns the operator of the request's context.
func OperatorFrom(ctx context.Context) string {
	if op, ok := ctx.Value(operatorKey{}).(string); ok {
		return op
	}
	return OperatorUnknown
}

// operatorOf reads the operator's identity from the IAP header, without its
// "accounts.google.com:" prefix.
func operatorOf(r *http.Request, dev bool) string {
	v := strings.TrimSpace(r.Header.Get(IdentityHeader))
	if _, after, ok := strings.Cut(v, ":"); ok {
		v = after
	}
	if v == "" || len(v) > 320 || strings.ContainsAny(v, "\r\n<>\"") {
		if dev {
			return OperatorDev
		}
		return OperatorUnknown
	}
	return v
}

// withOperator puts the operator and a logger naming them in the request's context.
func (s *Server) withOperator(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		op := operatorOf(r, s.deps.Dev)
		ctx := context.WithValue(r.Context(), operatorKey{}, op)
		ctx = logging.WithLogger(ctx, s.deps.Logger.With("operator", op))
		next.ServeHTTP(w, r.WithContext(ctx))
	})
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

// withCSRFCookie gives the browser a CSRF token when it has none, and puts the token in the
// context for the forms.
func (s *Server) withCSRFCookie(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok := ""
		if c, err := r.Cookie(CSRFCookie); err == nil && validToken(c.Value) {
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

func csrfToken(ctx context.Context) string {
	tok, _ := ctx.Value(csrfKey{}).(string)
	return tok
}

// protect guards a state-changing handler: net/http's cross-origin protection (Sec-Fetch-Site,
// Origin) and the double-submit token must both pass.
func (s *Server) protect(h http.Handler) http.Handler {
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.logger(r.Context()).Warn("cross-origin POST refused", "event", "console_csrf_refused", "path", r.URL.Path)
		s.renderError(w, r, http.StatusForbidden, "Cross-origin request refused.")
	}))
	return cop.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
		if err := r.ParseForm(); err != nil {
			s.renderError(w, r, http.StatusRequestEntityTooLarge, "The form is too large.")
			return
		}
		c, err := r.Cookie(CSRFCookie)
		form := r.PostForm.Get(CSRFField)
		if err != nil || !validToken(c.Value) || subtle.ConstantTimeCompare([]byte(c.Value), []byte(form)) != 1 {
			s.logger(r.Context()).Warn("POST without a valid CSRF token refused", "event", "console_csrf_refused", "path", r.URL.Path)
			s.renderError(w, r, http.StatusForbidden, "The form has expired or did not come from this console: reload the page and try again.")
			return
		}
		h.ServeHTTP(w, r)
	}))
}

// maxFormBytes caps a form: a reply is at most a WhatsApp text (4096 characters).
const maxFormBytes = 64 << 10

// randomToken returns 32 random bytes, base64url: a CSRF token or a request id.
func randomToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// newRequestID returns a fresh request id for a form (store.ValidRequestID accepts it).
func newRequestID() string {
	b := make([]byte, 18)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

func validToken(s string) bool {
	if len(s) != 43 {
		return false
	}
	_, err := base64.RawURLEncoding.DecodeString(s)
	return err == nil
}
