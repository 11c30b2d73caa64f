package console

import (
	"errors"
	"io"
	"net/http"

	"github.com/wapipe/wapipe/internal/console/page"
	"github.com/wapipe/wapipe/internal/httpserver"
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

// healthPath is answered to anyone: Cloud Run's probes carry no identity and no configured Host.
const healthPath = "/healthz"

// withOperator lets in only a request whose operator is verified (the IAP assertion or the ID
// token Cloud Run's IAM check accepted; loopback in dev), and puts the operator and a logger
// naming them in its context (page.OperatorFrom reads it). A header that merely names a user is
// never read: anyone who may invoke the service could set it.
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
		ctx := page.WithOperator(r.Context(), op)
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
	// A refusal is no page: nothing in it runs, and nothing keeps it.
	httpserver.SetSecurityHeaders(w.Header(), httpserver.Browser{CSP: "default-src 'none'", Cache: "no-store"})
	w.WriteHeader(code)
	_, _ = io.WriteString(w, line+"\n")
}
