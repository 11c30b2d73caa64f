package admission

import (
	"context"
	"crypto/subtle"
	"errors"
	"net/http"
	"slices"
	"strings"

	"github.com/wapipe/wapipe/internal/httpserver"
	"github.com/wapipe/wapipe/internal/identity"
	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/tasks"
)

// The worker's one door: every /internal route passes it, and it reads the route's row of
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

// Verifier checks a caller's OIDC token and returns its service account email;
// *identity.OIDCVerifier implements it.
type Verifier interface {
	Verify(ctx context.Context, rawToken string) (email string, err error)
}

// Config is who may call the worker's routes, from the worker's configuration.
type Config struct {
	// InternalToken is INTERNAL_TASK_TOKEN, which every request carries (but the sweep's outside
	// dev).
	InternalToken string
	// RouteCallers is ROUTE_CALLERS: by route, the accounts admitted. nil (dev, tests) is the
	// check before the table (Invoker, InternalCallers).
	RouteCallers tasks.RouteCallers
	// Dev is APP_ENV=dev: the sweep is admitted on the internal token alone.
	Dev bool
	// Invoker is TASKS_SERVICE_ACCOUNT_EMAIL: without RouteCallers, when set, the one account
	// admitted on every route but the tenant routes, which admit InternalCallers
	// (INTERNAL_CALLERS).
	Invoker         string
	InternalCallers []string
	// Verifier checks the callers' OIDC tokens; none are verified (and every token is refused)
	// when nil.
	Verifier Verifier
}

// Door admits a request to the route it asks for only when its caller may call it (see above).
type Door struct{ cfg Config }

// New returns the door of cfg.
func New(cfg Config) *Door { return &Door{cfg: cfg} }

// Wrap is the door as middleware in front of next: a refused request never reaches it.
func (d *Door) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		// The path the router matches: escaped, so an id's encoded "/" stays in its segment.
		path := r.URL.EscapedPath()
		route, known := tasks.RouteOf(path)
		reason, caller, err := refusedUnknownRoute, "", error(nil)
		if known {
			reason, caller, err = d.refusal(r, route)
		}
		if reason != "" {
			// caller is a service account's address, never a person's: Cloud Run's IAM check
			// lets only the invoker accounts through.
			logging.FromContext(ctx).WarnContext(ctx, "internal request refused", "event", "auth_refused",
				"reason", reason, "path", r.URL.Path, "route", route.Path, "caller", caller,
				"queue", r.Header.Get(tasks.HeaderQueueName), "error", err)
			httpserver.WriteJSON(w, http.StatusUnauthorized, map[string]string{"status": "error", "error": "unauthorized"})
			return
		}
		next.ServeHTTP(w, r)
	})
}

// refusal is why r may not call route ("" when it may), with the verified caller when known.
func (d *Door) refusal(r *http.Request, route tasks.Route) (reason, caller string, err error) {
	byTable := d.cfg.RouteCallers != nil
	scheduled := route.Via == tasks.ViaScheduler
	// The sweep outside dev: Cloud Scheduler's OIDC token alone. In dev: the internal token
	// alone, as the local stack's ticker sends it (the contract's dev admission).
	oidcAlone := byTable && scheduled && !d.cfg.Dev
	if !oidcAlone && !d.internalTokenOK(r) {
		return refusedInternalToken, "", nil
	}
	if scheduled && d.cfg.Dev {
		return "", "", nil
	}
	if !byTable {
		return d.refusalBeforeTable(r, route)
	}
	caller, err = d.verifiedCaller(r)
	switch {
	case err != nil:
		return refusedOIDC, "", err
	case !d.cfg.RouteCallers.Admits(route, caller):
		return refusedCaller, caller, nil
	case route.Via == tasks.ViaTask && !route.FromQueue(r.Header.Get(tasks.HeaderQueueName)):
		return refusedQueue, caller, nil
	}
	return "", caller, nil
}

// refusalBeforeTable is the check without ROUTE_CALLERS: beyond the internal token, when
// TASKS_SERVICE_ACCOUNT_EMAIL is set, that account on every route but the tenant routes, which
// admit INTERNAL_CALLERS.
func (d *Door) refusalBeforeTable(r *http.Request, route tasks.Route) (reason, caller string, err error) {
	if d.cfg.Invoker == "" {
		return "", "", nil
	}
	caller, err = d.verifiedCaller(r)
	allowed := caller == d.cfg.Invoker
	if strings.HasPrefix(route.Path, tasks.TenantRoutePrefix+"/") {
		allowed = caller != "" && slices.Contains(d.cfg.InternalCallers, caller)
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
func (d *Door) internalTokenOK(r *http.Request) bool {
	token := r.Header.Get(tasks.HeaderInternalToken)
	return token != "" && subtle.ConstantTimeCompare([]byte(token), []byte(d.cfg.InternalToken)) == 1
}

// verifiedCaller is the email of the token Cloud Run's IAM check verified: X-Serverless-Authorization
// when the caller used it (Authorization then passes through unchecked), else Authorization.
func (d *Door) verifiedCaller(r *http.Request) (string, error) {
	raw := identity.BearerToken(r)
	switch {
	case raw == "":
		return "", errNoBearer
	case d.cfg.Verifier == nil:
		return "", errNoVerifier
	}
	return d.cfg.Verifier.Verify(r.Context(), raw)
}
