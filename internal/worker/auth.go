package worker

import (
	"crypto/subtle"
	"errors"
	"net/http"
	"strings"

	"github.com/wapipe/wapipe/internal/identity"
	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/tasks"
)

// The worker's one door: every /internal route passes admit, which reads the route's row of
// tasks.Routes. With ROUTE_CALLERS set (always outside dev) a request needs, on top of ingress
// and Cloud Run's IAM check:
//   - X-Internal-Token, except on the sweep outside dev (Cloud Scheduler carries no secret);
//   - a verified OIDC token whose email ROUTE_CALLERS lists for the route (but on the sweep in
//     dev, which the local stack posts with the internal token alone);
//   - on a task route, X-CloudTasks-QueueName one of the route's queues. Cloud Tasks sets that
//     header itself and replaces any X-CloudTasks-* header a task asks for, and only Cloud Tasks
//     can mint a token for an enqueuer's invoker account, so with the identity it proves the
//     queue. A direct caller could send the header, but not with an invoker's identity.
//
// Without ROUTE_CALLERS (dev, tests) the check is the one before the table: the internal token
// and, with TASKS_SERVICE_ACCOUNT_EMAIL, that one account's token (INTERNAL_CALLERS' on the
// tenant routes).
//
// A refusal answers 401, processes nothing, and is logged auth_refused with its reason.

// Reasons of a refusal (auth_refused's reason).
const (
	refusedUnknownRoute  = "unknown_route"
	refusedInternalToken = "internal_token"
	refusedOIDC          = "oidc"
	refusedCaller        = "caller"
	refusedQueue         = "queue"
)

var (
	errNoBearer   = errors.New("no ID token (Authorization or X-Serverless-Authorization)")
	errNoVerifier = errors.New("this worker verifies no ID token")
)

// admit lets a request on to its route only when its caller may call it (see above).
func (s *Server) admit(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		// The path the router matches: escaped, so an id's encoded "/" stays in its segment.
		path := r.URL.EscapedPath()
		route, known := tasks.RouteOf(path)
		reason, caller, err := refusedUnknownRoute, "", error(nil)
		if known {
			reason, caller, err = s.refusal(r, route)
		}
		if reason != "" {
			// caller is a service account's address, never a person's: Cloud Run's IAM check
			// lets only the invoker accounts through.
			logging.FromContext(ctx).WarnContext(ctx, "internal request refused", "event", "auth_refused",
				"reason", reason, "path", r.URL.Path, "route", route.Path, "caller", caller,
				"queue", r.Header.Get(tasks.HeaderQueueName), "error", err)
			respond(w, outcome{kind: unauthorized})
			return
		}
		taskFrom(ctx, r.URL.Path).authenticated = true
		next.ServeHTTP(w, r)
	})
}

// refusal is why r may not call route ("" when it may), with the verified caller when known.
func (s *Server) refusal(r *http.Request, route tasks.Route) (reason, caller string, err error) {
	byTable := s.cfg.RouteCallers != nil
	scheduled := route.Via == tasks.ViaScheduler
	// The sweep outside dev: Cloud Scheduler's OIDC token alone. In dev: the internal token
	// alone, as the local stack's ticker sends it (the contract's dev admission).
	oidcAlone := byTable && scheduled && !s.cfg.IsDev()
	if !oidcAlone && !s.internalTokenOK(r) {
		return refusedInternalToken, "", nil
	}
	if scheduled && s.cfg.IsDev() {
		return "", "", nil
	}
	if !byTable {
		return s.refusalBeforeTable(r, route)
	}
	caller, err = s.verifiedCaller(r)
	switch {
	case err != nil:
		return refusedOIDC, "", err
	case !s.cfg.RouteCallers.Admits(route, caller):
		return refusedCaller, caller, nil
	case route.Via == tasks.ViaTask && !route.FromQueue(r.Header.Get(tasks.HeaderQueueName)):
		return refusedQueue, caller, nil
	}
	return "", caller, nil
}

// refusalBeforeTable is the check without ROUTE_CALLERS: beyond the internal token, when
// TASKS_SERVICE_ACCOUNT_EMAIL is set, that account on every route but the tenant routes, which
// admit INTERNAL_CALLERS.
func (s *Server) refusalBeforeTable(r *http.Request, route tasks.Route) (reason, caller string, err error) {
	if s.cfg.TasksServiceAccountEmail == "" {
		return "", "", nil
	}
	caller, err = s.verifiedCaller(r)
	allowed := caller == s.cfg.TasksServiceAccountEmail
	if strings.HasPrefix(route.Path, tasks.TenantRoutePrefix+"/") {
		allowed = s.isInternalCaller(caller)
	}
	switch {
	case err != nil:
		return refusedOIDC, "", err
	case !allowed:
		return refusedOIDC, caller, nil
	}
	return "", caller, nil
}

// internalTokenOK compares X-Internal-Token in constant time.
func (s *Server) internalTokenOK(r *http.Request) bool {
	token := r.Header.Get(tasks.HeaderInternalToken)
	return token != "" && subtle.ConstantTimeCompare([]byte(token), []byte(s.cfg.InternalTaskToken)) == 1
}

// verifiedCaller is the email of the token Cloud Run's IAM check verified: X-Serverless-Authorization
// when the caller used it (Authorization then passes through unchecked), else Authorization.
func (s *Server) verifiedCaller(r *http.Request) (string, error) {
	raw := identity.BearerToken(r)
	switch {
	case raw == "":
		return "", errNoBearer
	case s.deps.Verifier == nil:
		return "", errNoVerifier
	}
	return s.deps.Verifier.Verify(r.Context(), raw)
}
