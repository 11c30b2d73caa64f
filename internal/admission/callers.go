package admission

import (
	"errors"
	"fmt"

	"github.com/wapipe/wapipe/internal/identity"
	"github.com/wapipe/wapipe/tasks"
)

// Callers is who may call the worker, as its environment says; the worker's Config embeds it,
// and Door reads it (Config).
type Callers struct {
	// OIDCVerifiedByPlatform says Cloud Run (IAM required, invoker only) verifies each task's
	// OIDC token before the request reaches the worker, and hands it on with its signature
	// removed. Terraform sets it for the IAM-only worker; without it a token must carry its
	// signature.
	OIDCVerifiedByPlatform bool `env:"OIDC_VERIFIED_BY_PLATFORM, default=false"`
	// InternalCallers are the service accounts (the api's, the console's) whose ID tokens may
	// call the worker's tenant routes (/internal/tenants/…): the Graph calls that need a
	// tenant's access token, which only the worker can open. Read only where tokens are
	// verified (TASKS_SERVICE_ACCOUNT_EMAIL set) and ROUTE_CALLERS is unset, which replaces it
	// (its tenant routes' entries); setting both is refused.
	InternalCallers []string `env:"INTERNAL_CALLERS"`
	// RouteCallers (ROUTE_CALLERS, JSON) names, route by route of tasks.Routes, the accounts
	// whose verified OIDC tokens the worker admits: each enqueuer's invoker on its task routes,
	// the api's and the console's own accounts on their tenant routes, the scheduler's on the
	// sweep. Required outside dev, for every route. Unset (dev), the internal token and, with
	// TASKS_SERVICE_ACCOUNT_EMAIL, that one account (INTERNAL_CALLERS on tenant routes) admit.
	RouteCallers tasks.RouteCallers `env:"ROUTE_CALLERS"`
}

// Validate checks c beside invoker (TASKS_SERVICE_ACCOUNT_EMAIL: the worker creates tasks too),
// for APP_ENV appEnv (dev when dev): ROUTE_CALLERS complete outside dev, and INTERNAL_CALLERS
// not set beside it.
func (c Callers) Validate(invoker, appEnv string, dev bool) error {
	errs := []error{tasks.CheckInvoker(invoker, dev)}
	if c.OIDCVerifiedByPlatform && invoker == "" {
		errs = append(errs, errors.New("OIDC_VERIFIED_BY_PLATFORM: needs TASKS_SERVICE_ACCOUNT_EMAIL (the account whose tokens the platform verifies)"))
	}
	switch {
	case c.RouteCallers == nil && !dev:
		errs = append(errs, fmt.Errorf("ROUTE_CALLERS: required when APP_ENV is %s: the service accounts admitted on each worker route (Terraform writes it)", appEnv))
	case c.RouteCallers != nil:
		errs = append(errs, c.RouteCallers.Validate(!dev))
		if len(c.InternalCallers) > 0 {
			errs = append(errs, errors.New("INTERNAL_CALLERS: replaced by ROUTE_CALLERS (its tenant routes' entries); set only ROUTE_CALLERS"))
		}
	}
	return errors.Join(errs...)
}

// Verifier returns the verifier of the OIDC tokens of the callers, or nil when they carry none
// (invoker and ROUTE_CALLERS unset: dev). Tokens come from Google in production and from the
// Cloud Tasks emulator's issuer (at emulatorHost) locally; audience is the worker's base URL.
func (c Callers) Verifier(invoker, emulatorHost, audience string) *identity.OIDCVerifier {
	if invoker == "" && c.RouteCallers == nil {
		return nil
	}
	issuer := identity.GoogleIssuer
	if emulatorHost != "" {
		issuer = "http://" + emulatorHost
	}
	return identity.NewOIDCVerifier(issuer, audience, c.OIDCVerifiedByPlatform)
}
