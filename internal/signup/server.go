package signup

import (
	"context"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/wapipe/wapipe/internal/graph"
	"github.com/wapipe/wapipe/internal/outbox"
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
}

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
	Now    func() time.Time
}

// Server serves the flow's routes.
type Server struct {
	cfg  Config
	deps Deps
}

// New returns the flow over deps.
func New(cfg Config, deps Deps) *Server { return &Server{cfg: cfg, deps: deps} }

// Routes adds the flow's routes to r, under whatever limits the api puts on r (the caller's
// address: the pages take no API key). The api wraps its whole handler in HideSecrets.
func (s *Server) Routes(r chi.Router) {
	r.Get(ConnectPath, s.handleConnectPage)
	r.Method(http.MethodPost, ConnectPath, s.handleConnectStart())
	r.Get(CallbackPath, s.handleCallback)
}
