package console

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/wapipe/wapipe/internal/config"
	"github.com/wapipe/wapipe/internal/identity"
	"github.com/wapipe/wapipe/internal/operator"
	"github.com/wapipe/wapipe/internal/secrets"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/tasks"
)

// Config is the console service's configuration, read from the environment. The shared Base
// gives Firestore, Cloud Tasks and the worker's URL and token: a replay creates the same task
// `wapipe replay` does.
type Config struct {
	config.Base

	// InboundQueue and OutboundQueue are the queues the health report watches.
	InboundQueue  string `env:"INBOUND_TASK_QUEUE_NAME, default=wa-inbound"`
	OutboundQueue string `env:"OUTBOUND_TASK_QUEUE_NAME, default=wa-outbound"`
	// PublicBaseURL is the api service's public URL: with it set, a tenant's Reconnect button
	// makes an Embedded Signup link (as `wapipe tenants connect-link`), sealed with
	// ConnectStateKMSKeyName's key (the development key in dev when unset). Unset, Reconnect says
	// it is not available.
	PublicBaseURL string `env:"PUBLIC_BASE_URL"`
	// ConnectStateKMSKeyName is the key of connect links' states. The console holds no key of
	// tenant secrets (KMS_KEY_NAME): it neither reads nor writes them.
	ConnectStateKMSKeyName string `env:"CONNECT_STATE_KMS_KEY_NAME"`

	// Hosts are the host names (host or host:port) the console answers besides its own Cloud Run
	// URLs (Service) and, in dev, loopback at its port: a custom domain behind IAP, say.
	Hosts []string `env:"CONSOLE_HOSTS"`
	// Service is the Cloud Run service's name, which Cloud Run sets: its run.app URLs are hosts.
	Service string `env:"K_SERVICE"`
	// IAPAudience is the audience of IAP's signed header when IAP fronts the console; unset, the
	// header is ignored.
	IAPAudience string `env:"IAP_AUDIENCE"`
	// IDTokenAudiences are the audiences accepted in an operator's ID token besides the console's
	// own URLs: the OAuth client of the tokens `gcloud run services proxy` sends for a user.
	IDTokenAudiences []string `env:"CONSOLE_ID_TOKEN_AUDIENCES"`
	// OIDCVerifiedByPlatform says Cloud Run's IAM check verified each request's ID token (and
	// removed its signature) before the console saw it, as for the worker.
	OIDCVerifiedByPlatform bool `env:"OIDC_VERIFIED_BY_PLATFORM, default=false"`
	// ReplayInvokers are the invoker accounts the console's replays act as, by worker route:
	// each route's own enqueuer's, the only account the worker admits there. Required outside
	// dev; Terraform writes it and lets the console act as those accounts.
	ReplayInvokers tasks.ReplayInvokers `env:"REPLAY_INVOKERS"`
}

// HostPolicy is the set of host names the console answers.
func (c *Config) HostPolicy() HostPolicy {
	return HostPolicy{Names: c.Hosts, Loopback: c.IsDev(), CloudRunService: c.Service}
}

// IdentityKeys name where the identity's keys come from; the zero value is Google's (tests give
// their own issuers).
type IdentityKeys struct {
	// IAPKeysURL is IAP's key set, identity.IAPKeysURL when empty.
	IAPKeysURL string
	// IDTokenIssuer issues the operators' ID tokens, identity.GoogleIssuer when empty.
	IDTokenIssuer string
}

// Authenticator verifies the operators: IAP's assertion when IAP_AUDIENCE is set, the ID token
// of Cloud Run's IAM check, and in dev a loopback caller.
func (c *Config) Authenticator(keys IdentityKeys) *identity.Authenticator {
	if keys.IAPKeysURL == "" {
		keys.IAPKeysURL = identity.IAPKeysURL
	}
	if keys.IDTokenIssuer == "" {
		keys.IDTokenIssuer = identity.GoogleIssuer
	}
	hosts := c.HostPolicy()
	a := &identity.Authenticator{
		IDToken: identity.NewOIDCVerifierFunc(keys.IDTokenIssuer, func(aud string) bool {
			return slices.Contains(c.IDTokenAudiences, aud) || hosts.ServesURL(aud)
		}, c.OIDCVerifiedByPlatform),
		TrustLoopback: c.IsDev(),
	}
	if c.IAPAudience != "" {
		a.IAP = identity.NewIAPVerifier(c.IAPAudience, keys.IAPKeysURL)
	}
	return a
}

// Secrets is the configuration of the keeper that seals connect links.
func (c *Config) Secrets() secrets.Config {
	return secrets.Config{KMSKeyName: c.ConnectStateKMSKeyName, Dev: c.IsDev(), Variable: "CONNECT_STATE_KMS_KEY_NAME"}
}

// OpenKeeper opens the console's keeper: connect states only (secrets.Split), so a tenant secret
// is refused rather than sealed under the states' key. The caller closes it.
func (c *Config) OpenKeeper(ctx context.Context) (*secrets.Keeper, error) {
	state := c.Secrets()
	k, err := secrets.NewSplit(ctx, nil, &state)
	if err != nil {
		return nil, fmt.Errorf("secrets.NewSplit: %w", err)
	}
	return k, nil
}

// UseInboundDatabase points the inspector at db, the webhook's own database
// (service.Clients.InboundDB), for dedupe markers.
func (c *Config) UseInboundDatabase(db *store.DB, deps *Deps) {
	if inspector, ok := deps.Inspector.(*operator.Inspector); ok {
		inspector.Markers = store.NewMarkers(db, store.MarkerOptions{EventRef: c.Hasher().Ref})
	}
}

// Validate checks the console's values on top of the shared ones.
func (c *Config) Validate() error {
	errs := []error{c.Base.Validate()}
	if c.PublicBaseURL != "" {
		errs = append(errs, c.CheckServiceURL("PUBLIC_BASE_URL", c.PublicBaseURL))
		errs = append(errs, c.Secrets().Validate())
	}
	errs = append(errs, c.validateIdentity())
	// Its replies (process_send) carry its own invoker's token; its replays, the token of the
	// route's own enqueuer (REPLAY_INVOKERS), required where the worker checks it.
	errs = append(errs, tasks.CheckInvoker(c.TasksServiceAccountEmail, c.IsDev()))
	errs = append(errs, c.ReplayInvokers.Validate(!c.IsDev()))
	for _, q := range []struct{ env, id string }{
		{"INBOUND_TASK_QUEUE_NAME", tasks.QueueID(c.InboundQueue)},
		{"OUTBOUND_TASK_QUEUE_NAME", tasks.QueueID(c.OutboundQueue)},
	} {
		if _, ok := tasks.DefaultQueues().Queue(q.id); !ok {
			errs = append(errs, fmt.Errorf("%s: queue %q is not defined in tasks/queues.yaml", q.env, q.id))
		}
	}
	return errors.Join(errs...)
}

// validateIdentity checks the host names and that, outside dev, some operator can be verified.
func (c *Config) validateIdentity() error {
	var errs []error
	for _, h := range c.Hosts {
		if u, err := url.Parse("//" + h); err != nil || h == "" || u.Host != h || u.User != nil {
			errs = append(errs, fmt.Errorf("CONSOLE_HOSTS: %q is not a host or host:port", h))
		}
	}
	if c.IAPAudience != "" && !strings.HasPrefix(c.IAPAudience, "/projects/") {
		errs = append(errs, errors.New("IAP_AUDIENCE: must be IAP's audience, /projects/NUMBER/global/backendServices/ID or /projects/NUMBER/apps/PROJECT_ID"))
	}
	if !c.IsDev() {
		if len(c.Hosts) == 0 && c.Service == "" {
			errs = append(errs, errors.New("CONSOLE_HOSTS: required outside dev when not on Cloud Run (K_SERVICE unset): the host names operators reach the console at"))
		}
		if !c.OIDCVerifiedByPlatform && c.IAPAudience == "" {
			errs = append(errs, errors.New("OIDC_VERIFIED_BY_PLATFORM or IAP_AUDIENCE: outside dev one is needed to verify operators (true behind Cloud Run's IAM check, the audience behind IAP); otherwise every request is refused"))
		}
	}
	return errors.Join(errs...)
}
