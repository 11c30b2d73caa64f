package worker

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"

	"github.com/wapipe/wapipe/internal/actioncall"
	"github.com/wapipe/wapipe/internal/assistant"
	"github.com/wapipe/wapipe/internal/budget"
	"github.com/wapipe/wapipe/internal/choice"
	"github.com/wapipe/wapipe/internal/delivery"
	"github.com/wapipe/wapipe/internal/events"
	"github.com/wapipe/wapipe/internal/fanout"
	"github.com/wapipe/wapipe/internal/graph"
	"github.com/wapipe/wapipe/internal/health"
	"github.com/wapipe/wapipe/internal/llm"
	"github.com/wapipe/wapipe/internal/media"
	"github.com/wapipe/wapipe/internal/outbox"
	"github.com/wapipe/wapipe/internal/people"
	"github.com/wapipe/wapipe/internal/responder"
	"github.com/wapipe/wapipe/internal/secrets"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/taskqueue"
	"github.com/wapipe/wapipe/internal/tenantcache"
	"github.com/wapipe/wapipe/pricing"
)

// newActionClient calls the businesses' action URLs: outside dev only https:// to public
// addresses, every connection's address checked (actioncall.NewClient).
func newActionClient(dev bool) *actioncall.Client {
	return actioncall.NewClient(actioncall.WithDev(dev),
		actioncall.WithTransportWrapper(func(rt http.RoundTripper) http.RoundTripper { return otelhttp.NewTransport(rt) }))
}

// newModel is the assistant's model client: Vertex AI with the service's credentials, or the fake
// at LLM_BASE_URL in dev. It is built on the first llm turn, not here: a worker whose tenants all
// answer in ack mode needs no Gemini credentials. A failure to build answers the turn like an LLM
// outage (retried) and is logged here.
func newModel(cfg *Config, logger *slog.Logger) (*llm.Lazy, error) {
	lc, err := llm.NewLazy(llm.Config{
		Project: cfg.ProjectID, Location: cfg.LLMLocation, BaseURL: cfg.LLMBaseURL,
		HTTPClient: &http.Client{Transport: otelhttp.NewTransport(http.DefaultTransport)},
	}, func(err error) {
		logger.Error("the Vertex AI client could not be built: the turn is retried", "event", "llm_client_unavailable", "error", err)
	})
	if err != nil {
		return nil, fmt.Errorf("llm.NewLazy: %w", err)
	}
	return lc, nil
}

// newMediaFetcher fetches the assistant's media files, with each turn's tenant token (plain http
// only to the fake Graph API in dev), charged to MEDIA_INFLIGHT_BYTES.
func newMediaFetcher(cfg *Config, gc *graph.Client) (*media.Fetcher, error) {
	mf, err := media.New(gc, media.Config{MaxBytes: cfg.MediaMaxBytes, AllowInsecureURL: cfg.IsDev(), InflightBytes: cfg.MediaInflightBytes})
	if err != nil {
		return nil, fmt.Errorf("media.New: %w", err)
	}
	return mf, nil
}

// NewDeps builds the worker's dependencies from its configuration and the clients its caller
// opened (and closes): cmd/worker, the Cloud Functions entry point and the local stack. admin
// reads the queues' stats for the health report; keeper opens the tenants' access tokens.
// TenantRoutes is the caller's to set: the worker mounts the tenant routes without knowing them
// (package tenantcalls, built on this Deps' Tenants, Tokens and Sends).
func NewDeps(cfg *Config, db *store.DB, tq *taskqueue.Client, admin *taskqueue.Admin, keeper *secrets.Keeper, logger *slog.Logger) (Deps, error) {
	if keeper == nil {
		return Deps{}, errors.New("worker.NewDeps: a secrets keeper is required (tenant access tokens)")
	}
	httpClient := &http.Client{Timeout: graph.DefaultTimeout, Transport: otelhttp.NewTransport(http.DefaultTransport)}
	// The client has no token of its own: every call carries its tenant's (or the default's).
	gc, err := graph.NewClient(cfg.GraphAPIBaseURL, "", httpClient)
	if err != nil {
		return Deps{}, fmt.Errorf("graph.NewClient: %w", err)
	}
	lc, err := newModel(cfg, logger)
	if err != nil {
		return Deps{}, err
	}
	mf, err := newMediaFetcher(cfg, gc)
	if err != nil {
		return Deps{}, err
	}
	prices, err := pricing.Load()
	if err != nil {
		return Deps{}, fmt.Errorf("pricing.Load: %w", err)
	}
	tenants := store.NewTenants(db, store.Options{})
	conversations := store.NewConversationStore(db, store.Options{Retention: cfg.ConversationRetention})
	tokens := tenantcache.NewTokenCache(keeper, tenantcache.TokenCacheTTL)
	guard := store.NewGuard(db, store.Options{})
	outbound := store.NewOutbound(db, store.Options{ReconcileWindow: cfg.ReconcileWindow})
	deadLetters := store.NewDeadLetters(db, store.Options{})
	tenantCache := tenantcache.NewTenantCache(tenants, tenantcache.TenantCacheTTL)
	notifier := newNotifier(db, tq, tenants, cfg.Hasher())
	watcher := &budget.Watcher{Ledger: guard, Tenants: tenantCache, Teller: notifier}
	directory := &people.Directory{Contacts: store.NewContacts(db, store.Options{}), Tenants: tenants, Reader: tenantCache,
		Conversations: conversations}
	deps := Deps{
		Tasks:         tq,
		Payloads:      store.NewPayloads(db, 0),
		Outbound:      outbound,
		Statuses:      store.NewStatuses(db, store.Options{}),
		Traces:        store.NewTraces(db, store.Options{}),
		DeadLetters:   deadLetters,
		Sender:        delivery.NewGraphSender(gc),
		Responder:     responder.Ack{Text: cfg.AckText},
		Hasher:        cfg.Hasher(),
		Tenants:       tenantCache,
		Members:       tenants,
		Contacts:      tenantcache.NewContactRouter(tenants, tenantCache, tenantcache.TenantCacheTTL),
		Tokens:        tokens,
		Conversations: conversations,
		Assistant:     assistant.New(lc, guard).WithPrices(prices, guard, watcher),
		Money:         fanout.Money{Ledger: guard, Prices: prices, Budget: watcher, Spending: guard},
		Media:         mf,
		Actions:       store.NewActionStore(db, store.Options{Retention: cfg.ConversationRetention}),
		Caller:        newActionClient(cfg.IsDev()),
		Notifier:      notifier,
		Choices: &choice.Chooser{Holds: tenants, Tenants: tenantCache, Tasks: tq, Keyer: db.Keyer(), Hasher: cfg.Hasher(),
			Outbox: &outbox.Outbox{Sends: store.NewSends(db, store.Options{}), Tasks: tq, Hasher: cfg.Hasher()}},
		Lease:  cfg.ConversationLease,
		Sends:  store.NewSends(db, store.Options{}),
		Events: events.New(conversations, tenants, store.NewContactPrefs(db, store.Options{}), directory),
		People: directory,
		Keyer:  db.Keyer(),
		Logger: logger,
		Health: health.ForStore(db, admin, []string{tq.QueuePath(cfg.InboundQueue), tq.QueuePath(cfg.OutboundQueue)}),
	}
	if v := cfg.OIDCVerifier(); v != nil {
		deps.Verifier = v
	}
	if deps.Queues, err = cfg.Queues(); err != nil {
		return Deps{}, err
	}
	deps.SweepJobs = sweepJobs(cfg, deps, db, conversations, outbound, tq)
	logger.Info("worker configured", "event", "config_loaded", "app_env", cfg.AppEnv,
		"outbound_queue", tq.QueuePath(cfg.OutboundQueue), "tasks_emulator", cfg.TasksEmulatorHost != "",
		"oidc", cfg.TasksServiceAccountEmail != "", "oidc_verified_by_platform", cfg.OIDCVerifiedByPlatform,
		"default_token", cfg.AccessToken != "", "secrets_dev_key", keeper.Dev(),
		"llm_location", cfg.LLMLocation, "llm_fake", cfg.LLMBaseURL != "", "media_max_bytes", mf.MaxBytes())
	return deps, nil
}
