package api

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"

	"github.com/wapipe/wapipe/internal/contact"
	"github.com/wapipe/wapipe/internal/graph"
	"github.com/wapipe/wapipe/internal/httpserver"
	"github.com/wapipe/wapipe/internal/keyedid"
	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/internal/outbox"
	"github.com/wapipe/wapipe/internal/ratelimit"
	"github.com/wapipe/wapipe/internal/refusal"
	"github.com/wapipe/wapipe/internal/secrets"
	"github.com/wapipe/wapipe/internal/service"
	"github.com/wapipe/wapipe/internal/signup"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/taskqueue"
	"github.com/wapipe/wapipe/internal/tenantcache"
	"github.com/wapipe/wapipe/internal/usage"
)

// KeyReader reads API keys and records their use; *store.APIKeys implements it.
type KeyReader interface {
	GetAPIKey(ctx context.Context, id string) (store.APIKeyRecord, error)
	TouchAPIKey(ctx context.Context, rec store.APIKeyRecord) error
}

// TenantStore reads tenants and, for Embedded Signup (internal/signup), registers their numbers
// and token; *store.Tenants implements it.
type TenantStore = signup.TenantStore

// SendStore keeps the send records; *store.Sends implements it.
type SendStore interface {
	CreateSend(ctx context.Context, seed store.OutboundRecord) (store.OutboundRecord, bool, error)
	GetSend(ctx context.Context, key string) (store.OutboundRecord, error)
	ReleaseParked(ctx context.Context, tenantID string) ([]store.OutboundRecord, error)
}

// WindowReader reads the conversation that holds a contact's last_inbound_at, and locates a
// contact's conversation; *store.ConversationStore implements it.
type WindowReader = outbox.WindowReader

// ContactFinder finds a tenant's contact by any of its identifiers; *store.Contacts implements
// it.
type ContactFinder interface {
	Find(ctx context.Context, tenantID string, id contact.Identity) (store.Contact, bool, error)
}

// OptOutReader says whether a template must not go to a contact who stopped marketing messages;
// *store.ContactPrefs implements it.
type OptOutReader interface {
	OptedOutOfMarketing(ctx context.Context, tenantID string, c store.Contact, name, language string) (bool, error)
}

// Enqueuer creates tasks; *taskqueue.Client implements it.
type Enqueuer interface {
	Enqueue(ctx context.Context, t taskqueue.Task) (taskqueue.Result, error)
}

// Keeper seals and opens secrets for Embedded Signup; *secrets.Keeper implements it.
type Keeper = signup.Keeper

// TenantSettings reads the tenant of every authenticated request for its settings (its API
// keys' limit, limits.api) from a per-instance cache, so that a hit costs no Firestore read;
// *tenantcache.TenantCache implements it.
type TenantSettings interface {
	Tenant(ctx context.Context, id string) (store.TenantRecord, error)
}

// Deps are the api's dependencies.
type Deps struct {
	Keys    KeyReader
	Tenants TenantStore
	// Settings gives each tenant's own API key limit; without it every key has the
	// configuration's (API_RATE_PER_KEY, API_BURST_PER_KEY).
	Settings TenantSettings
	Sends    SendStore
	Windows  WindowReader
	// Contacts finds the contact a send names by phone or BSUID (its opt-out).
	Contacts ContactFinder
	// OptOuts refuses MARKETING templates to contacts who stopped them; no check when nil.
	OptOuts OptOutReader
	// Templates refuses templates known not to be approved; no check when nil (templates.go).
	Templates TemplateReader
	Tasks     Enqueuer
	// Graph calls Meta for Embedded Signup; it has no token of its own.
	Graph  *graph.Client
	Keeper Keeper
	// Keyer tags connect links' states (the store's: LOG_HASH_KEY's key).
	Keyer *keyedid.Keyer
	// Usage reports a tenant's month (GET /v1/usage); 503 without it.
	Usage *usage.Reporter
	// Worker calls the worker's tenant routes (media.go: uploads; templates.go); POST /v1/media
	// and /v1/templates answer 503 without it.
	Worker WorkerCaller
	// Hasher makes the keyed refs stored for lookups (to_hash); the dev key when nil.
	Hasher *logging.Hasher
	Logger *slog.Logger
	Now    func() time.Time
}

// NewDeps builds the api's dependencies from its configuration and the clients its caller opened
// (and closes).
func NewDeps(cfg *Config, db *store.DB, tq *taskqueue.Client, keeper *secrets.Keeper, logger *slog.Logger) (Deps, error) {
	if keeper == nil {
		return Deps{}, errors.New("api.NewDeps: a secrets keeper is required")
	}
	hc := &http.Client{Timeout: graph.DefaultTimeout, Transport: otelhttp.NewTransport(http.DefaultTransport, otelhttp.WithFilter(signup.TraceableGraphCall))}
	gc, err := graph.NewClient(cfg.GraphAPIBaseURL, "", hc)
	if err != nil {
		return Deps{}, fmt.Errorf("graph.NewClient: %w", err)
	}
	logger.Info("api configured", "event", "config_loaded", "app_env", cfg.AppEnv, "signup", cfg.SignupEnabled(),
		"tasks_emulator", cfg.TasksEmulatorHost != "", "secrets_dev_key", keeper.Dev())
	tenants := store.NewTenants(db, store.Options{})
	settings := tenantcache.NewTenantCache(tenants, tenantcache.TenantCacheTTL)
	return Deps{
		Keys:      store.NewAPIKeys(db, store.Options{}),
		Tenants:   tenants,
		Settings:  settings,
		Sends:     store.NewSends(db, store.Options{}),
		Windows:   store.NewConversationStore(db, store.Options{}),
		Contacts:  store.NewContacts(db, store.Options{}),
		OptOuts:   store.NewContactPrefs(db, store.Options{}),
		Templates: store.NewTemplates(db, store.Options{}),
		Tasks:     tq,
		Graph:     gc,
		Keeper:    keeper,
		Keyer:     db.Keyer(),
		Usage:     &usage.Reporter{Ledgers: store.NewGuard(db, store.Options{}), Tenants: settings},
		Hasher:    cfg.Hasher(),
		Logger:    logger,
	}, nil
}

// Server is the api service.
type Server struct {
	cfg    *Config
	deps   Deps
	outbox *outbox.Outbox
	// byAddress and byKey are the rate limits (API_RATE_PER_ADDRESS, API_RATE_PER_KEY; a
	// tenant's limits.api for its keys).
	byAddress, byKey *ratelimit.Limiter
	// keyLimit is the configuration's limit of a key, for tenants that set none.
	keyLimit ratelimit.Limit
	// signup is Embedded Signup, mounted at its routes.
	signup *signup.Server
}

// NewServer returns the api service for a validated cfg.
func NewServer(cfg *Config, deps Deps) *Server {
	service.Defaults(&deps.Logger, &deps.Hasher, &deps.Now)
	ob := &outbox.Outbox{Tenants: deps.Tenants, Sends: deps.Sends, Tasks: deps.Tasks, Hasher: deps.Hasher, Now: deps.Now}
	if deps.Windows != nil {
		ob.Windows = deps.Windows
	}

	limits := *cfg
	limits.SetDefaults()
	return &Server{cfg: cfg, deps: deps, outbox: ob,
		byAddress: ratelimit.New(limits.AddressRate, limits.AddressBurst, ratelimit.Options{Now: deps.Now}),
		byKey:     ratelimit.New(limits.KeyRate, limits.KeyBurst, ratelimit.Options{Now: deps.Now}),
		keyLimit:  ratelimit.Limit{Rate: limits.KeyRate, Burst: limits.KeyBurst},
		signup: signup.New(cfg.Signup(), signup.Deps{Tenants: deps.Tenants, Sends: deps.Sends, Tasks: deps.Tasks,
			Graph: deps.Graph, Keeper: deps.Keeper, Keyer: deps.Keyer, Now: deps.Now}),
	}
}

// Routes returns the service's handler with its middleware.
func (s *Server) Routes() http.Handler {
	r := chi.NewRouter()
	r.Get("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, "ok")
	})
	r.Group(func(r chi.Router) {
		// The body's pace (a slow upload is cut off with 408 instead of holding a request, a
		// refused one is not waited for), then the caller's limits before anything else runs
		// (the body): the /v1 routes authenticate the key first (auth.go), so that a business's
		// burst is held to its key's limit only, and a request without a valid key to its
		// address's; the signup pages, which take no key, to the address's.
		r.Use(httpserver.BodyLimits{}.Handler)
		r.Group(func(r chi.Router) {
			r.Use(s.withCaller)
			r.Post("/v1/messages", s.handleSend)
			r.Get("/v1/messages/{id}", s.handleGet)
			r.Get("/v1/templates", s.handleTemplatesList)            // templates.go
			r.Post("/v1/templates", s.handleTemplateCreate)          // templates.go
			r.Delete("/v1/templates/{name}", s.handleTemplateDelete) // templates.go
			r.Post("/v1/media", s.handleUpload)                      // media.go
			r.Get("/v1/usage", s.handleUsage)                        // messages.go
		})
		r.Group(func(r chi.Router) {
			r.Use(s.withAddressLimit)
			s.signup.Routes(r)
		})
	})
	// The signup routes' secrets leave the URL before the span or a log line can see it.
	return signup.HideSecrets(httpserver.Middleware{Service: "api", Logger: s.deps.Logger, OnPanic: func(w http.ResponseWriter, _ *http.Request, _ any) {
		writeError(w, refusal.Internal, "internal error")
	}}.Wrap(r))
}

// internalJSON is the api's answer when a body cannot be encoded (a defect, for the logs).
var internalJSON = []byte(`{"error":{"code":"` + refusal.Internal + `","message":"encode response"}}`)

// writeJSON answers v as JSON (httpserver.WriteJSONOr), in the api's error shape if it fails.
func writeJSON(w http.ResponseWriter, status int, v any) {
	httpserver.WriteJSONOr(w, status, v, internalJSON)
}
