package webhook

import (
	"context"
	"crypto/subtle"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/wapipe/wapipe/internal/httpserver"
	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/internal/service"
	"github.com/wapipe/wapipe/internal/taskqueue"
)

// MaxBodyBytes caps a webhook body. Meta sends up to 3 MB.
const MaxBodyBytes = 4 << 20

// Path is the webhook route Meta is configured with.
const Path = "/webhooks/whatsapp"

// Deduper is mark_if_new; *store.Markers implements it.
type Deduper interface {
	// MarkIfNew creates the event's marker and reports whether it was new.
	MarkIfNew(ctx context.Context, eventID, correlationID string) (bool, error)
}

// PayloadStore keeps payloads too large for a task; *store.Payloads implements it.
type PayloadStore interface {
	Put(ctx context.Context, eventID string, body []byte) (string, error)
}

// Enqueuer creates tasks; *taskqueue.Client implements it.
type Enqueuer interface {
	Enqueue(ctx context.Context, t taskqueue.Task) (taskqueue.Result, error)
}

// Deps are the webhook's dependencies.
type Deps struct {
	Dedupe   Deduper
	Payloads PayloadStore
	Tasks    Enqueuer
	Logger   *slog.Logger
	// Now is time.Now when nil.
	Now func() time.Time
	// CallBudget bounds mark_if_new and CreateTask together (WEBHOOK_CALL_BUDGET; its
	// default when zero): mark_if_new may take two thirds of it, CreateTask at least one third.
	// An unreachable store or queue is answered within it, well inside Meta's 5 s timeout.
	CallBudget time.Duration
	// PayloadTimeout bounds the out-of-band write of a payload too large for a task; 3 s when
	// zero.
	PayloadTimeout time.Duration
	// BodyWait is how long a delivery waits to charge a chunk of its body under
	// MAX_INFLIGHT_BODY_BYTES before answering 503; 500 ms when zero. Unused with Bodies set.
	BodyWait time.Duration
	// BodyGrace and BodyMinRate bound the time a body may take (httpserver.BodyLimits): Grace,
	// then the floor rate in bytes a second; a body slower than that is answered 408. The
	// httpserver defaults when zero.
	BodyGrace   time.Duration
	BodyMinRate int64
	// Bodies is the budget of body bytes in flight; one of MAX_INFLIGHT_BODY_BYTES with a share
	// of WEBHOOK_UNVERIFIED_BYTES_PER_ADDRESS per client address when nil (tests pass their own
	// to read its peak).
	Bodies *httpserver.Budget
}

// Server is the webhook service.
type Server struct {
	cfg  *Config
	deps Deps
	// bodies bounds the time a delivery's body may take; its bytes are charged as they arrive
	// to deps.Bodies.
	bodies httpserver.BodyLimits
}

// NewServer returns the webhook service for cfg, which must have been validated.
func NewServer(cfg *Config, deps Deps) *Server {
	service.Defaults(&deps.Logger, nil, &deps.Now)
	if deps.CallBudget == 0 {
		deps.CallBudget = DefaultCallBudget
	}
	if deps.PayloadTimeout == 0 {
		deps.PayloadTimeout = 3 * time.Second
	}
	if deps.Bodies == nil {
		budget, share := cfg.MaxInflightBodyBytes, cfg.UnverifiedBytesPerAddress
		if budget < MaxBodyBytes {
			// Not validated (tests build configs by hand): the default.
			budget = DefaultMaxInflightBodyBytes
		}
		if share <= 0 || share > budget {
			share = unverifiedShare(budget)
		}
		deps.Bodies = httpserver.NewClientBudget(budget, share, deps.BodyWait)
	}
	limits := httpserver.BodyLimits{Grace: deps.BodyGrace, MinRate: deps.BodyMinRate}
	return &Server{cfg: cfg, deps: deps, bodies: limits}
}

// Routes returns the service's handler with its middleware.
func (s *Server) Routes() http.Handler {
	r := chi.NewRouter()
	r.Get("/healthz", func(w http.ResponseWriter, _ *http.Request) { writeText(w, http.StatusOK, "ok") })
	r.Method(http.MethodGet, Path, s.handleVerify())
	r.Method(http.MethodPost, Path, s.bodies.Handler(s.handleEvent()))
	return httpserver.Middleware{Service: "webhook", Logger: s.deps.Logger}.Wrap(r)
}

// handleVerify answers Meta's subscription handshake.
func (s *Server) handleVerify() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		logger := logging.FromContext(r.Context())
		token := q.Get("hub.verify_token")
		if q.Get("hub.mode") != "subscribe" || token == "" ||
			subtle.ConstantTimeCompare([]byte(token), []byte(s.cfg.VerifyToken)) != 1 {
			logger.WarnContext(r.Context(), "subscription handshake refused", "event", "verify_refused", "mode", q.Get("hub.mode"))
			writeText(w, http.StatusForbidden, "forbidden")
			return
		}
		logger.InfoContext(r.Context(), "subscription handshake accepted", "event", "verify_accepted")
		writeText(w, http.StatusOK, q.Get("hub.challenge"))
	})
}

func writeText(w http.ResponseWriter, code int, s string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(code)
	_, _ = io.WriteString(w, s)
}
