package worker

import (
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/wapipe/wapipe/internal/actionrun"
	"github.com/wapipe/wapipe/internal/admission"
	"github.com/wapipe/wapipe/internal/conversation/turn"
	"github.com/wapipe/wapipe/internal/delivery"
	"github.com/wapipe/wapipe/internal/fanout"
	"github.com/wapipe/wapipe/internal/health"
	"github.com/wapipe/wapipe/internal/httpserver"
	"github.com/wapipe/wapipe/internal/keyedid"
	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/internal/media"
	"github.com/wapipe/wapipe/internal/members"
	"github.com/wapipe/wapipe/internal/responder"
	"github.com/wapipe/wapipe/internal/service"
	"github.com/wapipe/wapipe/internal/sweep"
	"github.com/wapipe/wapipe/internal/tenantcache"
	"github.com/wapipe/wapipe/tasks"
)

// Enqueuer creates tasks; *taskqueue.Client implements it.
type Enqueuer = fanout.Enqueuer

// Sender talks to the Graph API; delivery.GraphSender implements it.
type Sender = delivery.Sender

// OutboundStore is the outbound records: delivery begins and settles sends on them, and the
// inbound task applies statuses to them; *store.Outbound implements it.
type OutboundStore interface {
	delivery.Records
	fanout.DeliveryUpdater
}

// TokenVerifier checks the OIDC token of a caller and returns its service account email.
type TokenVerifier = admission.Verifier

// Deps are the worker's dependencies.
type Deps struct {
	Tasks       Enqueuer
	Payloads    fanout.PayloadReader
	Outbound    OutboundStore
	Statuses    fanout.StatusRecords
	Traces      fanout.TraceRecords
	DeadLetters DeadLetters
	Sender      Sender
	// Responder answers the single-tenant default's messages.
	Responder responder.Responder
	// Tenants routes business numbers to tenants (cached); with none, every number is the
	// single-tenant default's.
	Tenants TenantResolver
	// Members are the tenants' members who joined by invite, and the invites.
	Members members.Store
	// Contacts routes the messages of shared numbers by contact and moves a contact between
	// a shared number's tenants by invite code; with none a shared number is its first
	// tenant's, like any number.
	Contacts ContactRouter
	// Money counts what statuses price (the ledger) and checks the budget's thresholds.
	Money fanout.Money
	// Choices holds the messages of a member of several tenants of a shared number until they
	// choose one (package choice); with none the number's primary tenant takes them.
	Choices fanout.Chooser
	// Tokens opens the tenants' access tokens and action signing secrets (cached).
	Tokens TokenSource
	// Conversations keeps the tenants' conversations: a tenant's message is stored in its
	// conversation and answered by Assistant, one turn at a time (package conversation), and a
	// contact's last message opens its 24-hour window. A worker without it serves the
	// single-tenant default only (a tenant's message is kept as a dead letter).
	Conversations ConversationStore
	// Assistant decides the turns; required with Conversations.
	Assistant TurnEngine
	// Media fetches the files of media messages for the assistant (media.Fetcher). Nil: the
	// assistant answers them "can't read this message", as before media were understood.
	Media media.LoaderMaker
	// TenantRoutes serves the tenant routes (package tenantcalls: uploads, templates, the
	// console's media), mounted under tasks.TenantRoutePrefix behind the worker's admission;
	// without it every tenant route answers 404 once admitted.
	TenantRoutes http.Handler
	// Actions records the action calls and Caller makes them; required with Conversations.
	Actions actionrun.Records
	Caller  actionrun.Caller
	// Lease is how long a conversation's holder keeps it without committing a turn;
	// conversation.DefaultLease when zero.
	Lease time.Duration
	// Health answers GET /internal/health; the route answers 404 without it.
	Health health.Reporter
	// SweepJobs are the periodic jobs POST /internal/sweep runs (sweep.go; NewDeps sets
	// sweepJobs); with none the sweep does nothing.
	SweepJobs []sweep.Job
	// Verifier checks the callers' OIDC tokens when cfg.TasksServiceAccountEmail or
	// cfg.RouteCallers is set (Config.OIDCVerifier).
	Verifier TokenVerifier
	// Queues gives each queue's max_attempts for dead letters; the embedded queues.yaml when nil.
	Queues *tasks.QueueFile
	// Hasher makes the keyed refs stored for lookups (outbound records' to_hash, statuses'
	// recipient_hash, traces' event_ref); NewDeps keys it with LOG_HASH_KEY. The dev key when nil.
	Hasher *logging.Hasher
	Logger *slog.Logger
	Now    func() time.Time
	// FanOut bounds the outbound tasks created at once by one inbound task; 16 when zero.
	FanOut int
	// MarkReadTimeout bounds the best-effort mark-as-read call; 5 s when zero.
	MarkReadTimeout time.Duration

	// Sends are the records process_send sends from, and the parking of a tenant's sends.
	Sends delivery.Parker

	// Notifier tells the members an intent's notify names of its succeeded actions (package
	// notify); none are told without it.
	Notifier actionrun.Notifier

	// Events applies Meta's events other than ordinary messages (revokes, edits, number
	// changes, preferences, echoes, account updates); with none they are only answered or traced.
	Events EventApplier

	// People says who a tenant's message is from: its contact and conversation; required with
	// Conversations. It also follows identity changes.
	People People
	// Keyer keys the ids derived from people and messages (reply keys); the development key's
	// when nil. NewDeps takes the database's, keyed with LOG_HASH_KEY.
	Keyer *keyedid.Keyer
}

// Server is the worker service.
type Server struct {
	cfg  *Config
	deps Deps
	// turner runs tenants' messages through their conversations; nil without
	// Deps.Conversations. defaultTurn answers the single-tenant default's.
	turner      *turn.Turner
	defaultTurn turn.Default
	// deliver sends every message, exactly once.
	deliver *delivery.Deliverer
	// fanner fans the inbound deliveries out.
	fanner *fanout.Fanner
	// actions runs the actions of confirmed turns.
	actions *actionrun.Runner
	// routes are the task routes (task.go).
	routes []taskRoute
	// door admits each /internal request or refuses it (package admission).
	door *admission.Door
}

// NewServer returns the worker service for a validated cfg.
func NewServer(cfg *Config, deps Deps) *Server {
	service.Defaults(&deps.Logger, &deps.Hasher, &deps.Now)
	if deps.Queues == nil {
		deps.Queues = tasks.DefaultQueues()
	}
	if deps.Responder == nil {
		deps.Responder = responder.Ack{}
	}
	if deps.Tenants == nil {
		deps.Tenants = tenantcache.None{}
	}
	if deps.FanOut <= 0 {
		deps.FanOut = 16
	}
	if deps.MarkReadTimeout <= 0 {
		deps.MarkReadTimeout = 5 * time.Second
	}
	if deps.Keyer == nil {
		deps.Keyer = keyedid.Dev()
	}
	srv := &Server{cfg: cfg, deps: deps, deliver: &delivery.Deliverer{
		Records: deps.Outbound, Sender: deps.Sender, Tenants: deps.Tenants, Tokens: deps.Tokens,
		Hasher: deps.Hasher, Now: deps.Now, MarkReadTimeout: deps.MarkReadTimeout, Spending: deps.Money.Spending,
	}}
	srv.fanner = &fanout.Fanner{
		Tasks: deps.Tasks, Payloads: deps.Payloads, Statuses: deps.Statuses, Outbound: deps.Outbound, Traces: deps.Traces,
		Tenants: deps.Tenants, Hasher: deps.Hasher, Keyer: deps.Keyer, Now: deps.Now, Limit: deps.FanOut,
	}
	if deps.People != nil {
		// A nil interface stays nil: the fanner tells "identity changes not followed" by it.
		srv.fanner.Identities = deps.People
	}
	if cfg.AccessToken != "" {
		srv.fanner.DefaultQueue = cfg.OutboundQueue
	}
	if deps.Contacts != nil {
		// A nil interface stays nil: the fanner tells "no shared routing" by it.
		srv.fanner.Contacts = deps.Contacts
	}
	if deps.Choices != nil {
		srv.fanner.Choices = deps.Choices
	}
	srv.fanner.Money = deps.Money
	if deps.Events != nil {
		// A nil interface stays nil: the fanner and the turns tell "no events" by it.
		srv.fanner.Events, srv.defaultTurn.Events = deps.Events, deps.Events
	}
	srv.defaultTurn.Responder = deps.Responder
	// A turn's replies and an action's result leave alike (delivery.ReplySender).
	replies := delivery.ReplySender{Deliverer: srv.deliver}
	srv.actions = &actionrun.Runner{Tenants: deps.Tenants, Members: deps.Members, Records: deps.Actions, Caller: deps.Caller,
		Secrets: deps.Tokens, Messages: deps.Conversations, Tell: replies, Notify: deps.Notifier, Keyer: deps.Keyer}
	// A nil interface stays nil: the deliverer tells "no parking" and "no window" by it.
	if deps.Sends != nil {
		srv.deliver.Sends = deps.Sends
	}
	if u, ok := deps.Outbound.(delivery.Unknowns); ok && deps.DeadLetters != nil {
		srv.deliver.Unknowns, srv.deliver.DeadLetters, srv.deliver.MaxUnknownWait = u, deps.DeadLetters, cfg.UnknownMaxWait
		// A status held up behind the record comes back within the inbound queue's backoff.
		if q, ok := deps.Queues.Queue(tasks.InboundQueueID); ok {
			srv.deliver.ResendConfirm = max(2*q.RetryConfig.MaxBackoff.Duration, delivery.DefaultResendConfirm)
		}
	}
	if deps.Conversations != nil {
		if deps.Assistant == nil || deps.Actions == nil || deps.Caller == nil || deps.Tokens == nil || deps.People == nil {
			panic("worker.NewServer: Deps.Conversations needs Assistant, Actions, Caller, Tokens and People")
		}
		srv.deliver.Windows = deps.Conversations
		srv.turner = newTurner(deps, srv.deliver, replies)
	}
	srv.routes, srv.door = srv.taskRoutes(), newDoor(cfg, deps.Verifier)
	return srv
}

// newDoor is the worker's door as cfg says who may call it, with v verifying the callers' tokens.
func newDoor(cfg *Config, v TokenVerifier) *admission.Door {
	return admission.New(admission.Config{InternalToken: cfg.InternalTaskToken, RouteCallers: cfg.RouteCallers, Dev: cfg.IsDev(),
		Invoker: cfg.TasksServiceAccountEmail, InternalCallers: cfg.InternalCallers, Verifier: v})
}

// admit is the door in front of next; a request it lets through is marked authenticated, so
// that a panic on its last attempt is kept as a dead letter (answerPanic).
func (s *Server) admit(next http.Handler) http.Handler {
	return s.door.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		taskFrom(r.Context(), r.URL.Path).authenticated = true
		next.ServeHTTP(w, r)
	}))
}

// Routes returns the service's handler with its middleware.
func (s *Server) Routes() http.Handler {
	r := chi.NewRouter()
	r.Get("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, "ok")
	})
	r.Route("/internal", func(r chi.Router) {
		// One door for every route below, whatever group it is in: its row of tasks.Routes
		// says who may call it (package admission). A route missing from that table is refused.
		r.Use(s.admit)
		for _, tr := range s.routes {
			r.Method(http.MethodPost, strings.TrimPrefix(tr.path, "/internal"), tr.handler)
		}
		r.Method(http.MethodGet, "/health", health.Handler(s.deps.Health))
		r.Method(http.MethodPost, strings.TrimPrefix(tasks.SweepPath, "/internal"), s.handleSweep())
		if s.deps.TenantRoutes != nil {
			r.Mount(strings.TrimPrefix(tasks.TenantRoutePrefix, "/internal"), s.deps.TenantRoutes)
		}
	})
	return httpserver.Middleware{Service: "worker", Logger: s.deps.Logger,
		Request: s.withTask, OnPanic: s.answerPanic, PanicAttrs: panicAttrs}.Wrap(r)
}

// readTask reads a task body, one JSON object under the size cap, into v, and returns the task
// (run on path) with its raw body. A body that could not be read (the connection broke) a retry can fix: the
// outcome is then a retry and ok is false. Any other error is the body's own fault, which no retry
// will fix: the caller keeps it as a dead letter.
func (s *Server) readTask(r *http.Request, path string, v any) (t *task, o outcome, ok bool, err error) {
	ctx := r.Context()
	t = taskFrom(ctx, path)
	body, err := io.ReadAll(io.LimitReader(r.Body, tasks.MaxBodyBytes+1))
	if err != nil {
		logging.FromContext(ctx).WarnContext(ctx, "task body not read: Cloud Tasks will retry", "event", "task_retry", "error", err)
		return t, retryLater("body_unreadable", 0), false, nil
	}
	t.raw, err = tasks.DecodeBody(body, v)
	return t, outcome{}, true, err
}
