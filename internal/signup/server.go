package signup

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/wapipe/wapipe/internal/graph"
	"github.com/wapipe/wapipe/internal/keyedid"
	"github.com/wapipe/wapipe/internal/outbox"
	"github.com/wapipe/wapipe/internal/ratelimit"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/tenant"
)

// Config is what the flow needs of the api's configuration: all of AppID (META_APP_ID),
// ConfigID (META_CONFIG_ID), PublicBaseURL (PUBLIC_BASE_URL) and AppSecret (WHATSAPP_APP_SECRET,
// the code exchange's client secret), or none: the routes then say it is not configured.
type Config struct {
	AppID, ConfigID, AppSecret string
	// PublicBaseURL is the api's URL: the callback's and the cookie's (Secure when https).
	PublicBaseURL string
	// DialogURL is Meta's OAuth dialog (FACEBOOK_DIALOG_URL).
	DialogURL string
	// TrustProxy: the client's address is the last X-Forwarded-For entry (behind Google's front
	// end, outside dev), else the connection's (ratelimit.ClientAddr).
	TrustProxy bool
}

// ConnectRate and ConnectBurst are the flow's own limit per client address, on top of the
// limit the api puts on every keyless route: a person connecting makes a handful of requests
// (the page, the button, the callback), while each request may open a sealed state, a Cloud KMS
// call, before anything is known of it.
const (
	ConnectRate  = 1.0 / 6 // one request every 6 s once the burst is spent
	ConnectBurst = 10
)

// Enabled reports whether Embedded Signup is configured.
func (c Config) Enabled() bool { return c.AppID != "" }

// TenantStore reads tenants and registers their numbers, token and grants; *store.Tenants
// implements it.
type TenantStore interface {
	Get(ctx context.Context, id string) (store.TenantRecord, error)
	AddPhoneNumbers(ctx context.Context, id string, nums []tenant.PhoneNumber) ([]string, error)
	SetAccessToken(ctx context.Context, id string, ciphertext []byte) (store.TenantRecord, error)
	UseConnectState(ctx context.Context, nonce, tenantID string, expireAt time.Time) error
	ConnectStateUsed(ctx context.Context, nonce string) (bool, error)
	CheckPhoneNumbers(ctx context.Context, id string, nums []tenant.PhoneNumber) error
	RecordWABAGrants(ctx context.Context, id string, wabas []string) error
}

// Keeper seals and opens secrets (connect states, the new token); *secrets.Keeper implements it.
type Keeper interface {
	Sealer
	Decrypt(ctx context.Context, ciphertext, ad []byte) ([]byte, error)
}

// Deps are the flow's dependencies, all required.
type Deps struct {
	Tenants TenantStore
	// Sends and Tasks release the sends parked while the tenant needed a new token.
	Sends outbox.ParkedStore
	Tasks outbox.Enqueuer
	// Graph calls Meta: the code exchange, debug_token, the accounts' numbers, the subscription.
	// It has no token of its own.
	Graph  *graph.Client
	Keeper Keeper
	// Keyer tags the states (LOG_HASH_KEY's key, as the CLI and the console tag theirs); the
	// dev key's when nil.
	Keyer *keyedid.Keyer
	Now   func() time.Time
}

// Server serves the flow's routes.
type Server struct {
	cfg       Config
	deps      Deps
	byAddress *ratelimit.Limiter
}

// New returns the flow over deps.
func New(cfg Config, deps Deps) *Server {
	return &Server{cfg: cfg, deps: deps, byAddress: ratelimit.New(ConnectRate, ConnectBurst, ratelimit.Options{Now: deps.Now})}
}

// Routes adds the flow's routes to r, under whatever limits the api puts on r (the caller's
// address: the pages take no API key). The api wraps its whole handler in HideSecrets.
func (s *Server) Routes(r chi.Router) {
	r.Group(func(r chi.Router) {
		r.Use(s.limit)
		r.Get(ConnectPath, s.handleConnectPage)
		r.Method(http.MethodPost, ConnectPath, s.handleConnectStart())
		r.Get(CallbackPath, s.handleCallback)
	})
}

// limit answers 429, with Retry-After and a page saying so, to a client address over
// ConnectRate.
func (s *Server) limit(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d := s.byAddress.Allow(ratelimit.ClientAddr(r, s.cfg.TrustProxy))
		if d.OK {
			next.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Retry-After", strconv.Itoa(d.RetryAfterSeconds()))
		page(w, http.StatusTooManyRequests, "Too many requests", "Too many requests from your address: wait a minute, then open the link again.")
	})
}
