package console

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"io"
	"net/http"

	"github.com/wapipe/wapipe/internal/identity"
	"github.com/wapipe/wapipe/internal/logging"
)

// OperatorDev is the operator's name for a loopback request in dev: no proxy stands in front of
// the console there to say who it is.
const OperatorDev = "local operator (dev)"

// Authenticator finds the verified identity of a request; *identity.Authenticator is the real one.
type Authenticator interface {
	Authenticate(r *http.Request) (identity.Identity, error)
}

type operatorKey struct{}

// OperatorFrom returns the operator of the request's context: a verified email, or OperatorDev.
func OperatorFrom(ctx context.Context) string {
	op, _ := ctx.Value(operatorKey{}).(string)
	return op
}

// healthPath is answered to anyone: Cloud Run's probes carry no identity and no configured Host.
const healthPath = "/healthz"

// withOperator lets in only a request whose operator is verified (the IAP assertion or the ID
// token Cloud Run's IAM check accepted; loopback in dev), and puts the operator and a logger
// naming them in its context. A header that merely names a user is never read: anyone who may
// invoke the service could set it.
func (s *Server) withOperator(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == healthPath {
			next.ServeHTTP(w, r)
			return
		}
		var id identity.Identity
		err := errors.New("no authenticator configured")
		if s.deps.Identity != nil {
			id, err = s.deps.Identity.Authenticate(r)
		}
		if err != nil {
			s.deps.Logger.Warn("request without a verified operator refused", "event", "console_unauthenticated",
				"path", r.URL.Path, "error", err)
			plainError(w, http.StatusUnauthorized, "401 Unauthorized: no verified operator identity (an IAP assertion, or the ID token Cloud Run's IAM check accepted).")
			return
		}
		op := id.Email
		if id.Via == identity.ViaLoopback {
			op = OperatorDev
		}
		ctx := context.WithValue(r.Context(), operatorKey{}, op)
		ctx = logging.WithLogger(ctx, s.deps.Logger.With("operator", op, "identity_via", id.Via))
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// withHost answers only requests for one of the console's own host names: a page of another
// name that DNS rebinding pointed at the console's address would otherwise read its pages.
func (s *Server) withHost(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != healthPath && !s.deps.Hosts.Allows(r) {
			host := r.Host
			if len(host) > 100 {
				host = host[:100]
			}
			s.deps.Logger.Warn("request for another host name refused", "event", "console_host_refused", "host", host, "path", r.URL.Path)
			plainError(w, http.StatusMisdirectedRequest, "421 Misdirected Request: this console answers only at its own host names (CONSOLE_HOSTS).")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// plainError answers a refusal that comes before any page can be rendered.
func plainError(w http.ResponseWriter, code int, line string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_, _ = io.WriteString(w, line+"\n")
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
