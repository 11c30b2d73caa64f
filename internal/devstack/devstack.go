// Package devstack runs the whole wapipe pipeline on one machine: the Firestore emulator (through
// gcloud, or one already running), the project's Cloud Tasks emulator with the queues of
// tasks/queues.yaml, the fake Graph API, and the webhook and worker services with dev settings,
// wired to each other exactly as in production. On start it applies the sample tenant
// (tenants/sample.yaml, whose first number is the sample webhooks') with its send queue and the
// fake Graph API's token. cmd/devstack runs it for people; the end-to-end
// tests run it in-process.
package devstack

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/wapipe/wapipe/internal/actioncall/actionfake"
	"github.com/wapipe/wapipe/internal/api"
	"github.com/wapipe/wapipe/internal/cloudtasksemu"
	"github.com/wapipe/wapipe/internal/config"
	"github.com/wapipe/wapipe/internal/console"
	"github.com/wapipe/wapipe/internal/firestoreemu"
	"github.com/wapipe/wapipe/internal/graph"
	"github.com/wapipe/wapipe/internal/graph/graphfake"
	"github.com/wapipe/wapipe/internal/httpserver"
	"github.com/wapipe/wapipe/internal/llm/geminifake"
	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/internal/media/mediasample"
	"github.com/wapipe/wapipe/internal/operator"
	"github.com/wapipe/wapipe/internal/secrets"
	"github.com/wapipe/wapipe/internal/service"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/taskqueue"
	"github.com/wapipe/wapipe/internal/telemetry"
	"github.com/wapipe/wapipe/internal/tenantcalls"
	"github.com/wapipe/wapipe/internal/webhook"
	"github.com/wapipe/wapipe/internal/worker"
	"github.com/wapipe/wapipe/internal/workerclient"
	"github.com/wapipe/wapipe/tasks"
	"github.com/wapipe/wapipe/tenants"
)

// Dev secrets: fixed so that a person can copy them from the README; never used outside dev.
const (
	DevAppSecret     = "dev-app-secret"
	DevVerifyToken   = "dev-verify-token"
	DevInternalToken = "dev-internal-token"
	DevAccessToken   = "dev-access-token"
	// DevActionSecret signs the sample tenants' action calls; the fake action endpoint
	// verifies with it.
	DevActionSecret = "whsec_dev-action-secret-0123456789abcdefghijklmn"
)

// sampleActionURL is tenants/sample.yaml's action_url: the fake action endpoint at its default
// address.
const sampleActionURL = "http://127.0.0.1:8095/wapipe/actions"

// Options configure Start. Zero values take dev defaults.
type Options struct {
	// FirestoreHost reuses a running Firestore emulator; empty starts one through gcloud.
	FirestoreHost string
	// Project and Location name the emulated project; "wapipe-dev" and "us-central1" by default.
	Project, Location string
	// Queues are created in the Cloud Tasks emulator; the embedded queues.yaml when nil.
	Queues *tasks.QueueFile
	// Addresses to listen on; "127.0.0.1:0" (a free port) when empty.
	WebhookAddr, WorkerAddr, TasksAddr, GraphAddr string
	// GeminiAddr and ActionAddr are the fake Vertex AI Gemini's and the fake business action
	// endpoint's; "127.0.0.1:0" when empty.
	GeminiAddr, ActionAddr string
	// ConsoleAddr is where the operators' console listens; "127.0.0.1:0" when empty.
	ConsoleAddr string
	// Console adjusts the console's dependencies (the api's Replier and LinkMaker, fakes).
	Console []func(*console.Deps)
	// Tenants are tenant files applied on start, as `wapipe tenants apply` does (the tenant, its
	// send queue), each given DevAccessToken as its token (as `set-token --no-verify`); nil means
	// tenants/sample.yaml. The sample's action URL, in any of them, is replaced by the fake action
	// endpoint's (ActionURL). NoTenants applies none.
	Tenants   [][]byte
	NoTenants bool
	// ServiceAccountEmail, when set, makes every task carry an OIDC token the worker verifies.
	ServiceAccountEmail string
	// Logs returns where a component's logs go ("webhook", "worker", "tasks-emulator",
	// "firestore", "graph"); nil discards them.
	Logs func(component string) io.Writer
	// LogLevel for the services; INFO when zero.
	LogLevel slog.Level
	// Webhook and Worker adjust the services' dependencies (tests wrap or replace one).
	Webhook []func(*webhook.Deps)
	Worker  []func(*worker.Deps)
	// WorkerConfig adjusts the worker's configuration before it starts.
	WorkerConfig func(*worker.Config)
	// SweepEvery is how often the stack posts the worker's POST /internal/sweep, as Cloud
	// Scheduler does in production (sweep.go); DefaultSweepEvery when zero, never when negative.
	SweepEvery time.Duration
	// APIAddr is the api service's address (api.go); API adjusts its dependencies.
	APIAddr string
	API     []func(*api.Deps)
	// Tracing installs a tracer provider for the process (both services share it, as they share
	// the process), exporting as TraceExporter says (a TRACE_EXPORTER value; none when empty), or
	// to SpanExporter when set.
	// ExternalWorker leaves the worker to the caller, which runs it (cmd/worker, as a process a
	// test can kill) at WorkerAddr, which must then be set: the stack's tasks target it.
	ExternalWorker bool
	Tracing        bool
	TraceExporter  string
	SpanExporter   sdktrace.SpanExporter
}

// Stack is a running local pipeline.
type Stack struct {
	WebhookURL    string
	WorkerURL     string
	APIURL        string // the api service (api.go)
	ConsoleURL    string
	GraphURL      string
	TasksAddr     string
	FirestoreHost string
	Project       string
	Location      string
	AppSecret     string
	VerifyToken   string
	InternalToken string

	Graph *graphfake.Fake
	Tasks *cloudtasksemu.Server
	// Gemini is the fake Vertex AI the worker's assistant asks (GeminiURL, its LLM_BASE_URL);
	// Action the fake business endpoint (ActionURL is its action URL), which verifies calls
	// with DevActionSecret and answers a repeated Idempotency-Key with its first answer.
	Gemini    *geminifake.Server
	GeminiURL string
	Action    *actionfake.Fake
	ActionURL string
	// Tenants are the ids of the tenants applied on start.
	Tenants []string

	cancel   context.CancelFunc
	wg       sync.WaitGroup
	closers  []func()
	firestor *firestoreemu.Emulator
	// externalWorker: the caller runs the worker (Options.ExternalWorker).
	externalWorker bool
	errs           chan error
	// startup warms the services' shared clients up; every service's startup probe
	// (service.StartupPath) answers from it, as each one's own does in production.
	startup *service.Warmup
}

// Start brings the stack up and returns once every part answers.
func Start(ctx context.Context, o Options) (_ *Stack, err error) {
	if o.ExternalWorker && o.WorkerAddr == "" {
		return nil, errors.New("devstack: ExternalWorker needs WorkerAddr, where the caller's worker listens")
	}
	o.setDefaults()
	logs := o.logTo
	s := &Stack{
		Project: o.Project, Location: o.Location,
		AppSecret: DevAppSecret, VerifyToken: DevVerifyToken, InternalToken: DevInternalToken,
		errs: make(chan error, 4),
	}
	defer func() {
		if err != nil {
			s.Stop()
		}
	}()
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s.cancel = cancel
	if err := s.startTracing(ctx, o); err != nil {
		return nil, err
	}
	if err := s.startEmulators(ctx, runCtx, o); err != nil {
		return nil, err
	}

	s.Graph = graphfake.New(graphfake.WithToken(DevAccessToken))
	graphLn, err := net.Listen("tcp", orFree(o.GraphAddr))
	if err != nil {
		return nil, fmt.Errorf("listen for the fake Graph API: %w", err)
	}
	s.GraphURL = "http://" + graphLn.Addr().String() + "/" + graph.Version
	s.serve(runCtx, "graph", graphLn, s.Graph, logging.New(logs("graph"), logging.Options{Hasher: logging.DevHasher()}))

	// The sample media files read as the default rules' words: the voice note books bus 01.
	s.Gemini = geminifake.New(geminifake.WithRules(geminifake.DefaultRules()...), geminifake.WithTranscripts(mediasample.Transcripts()))
	geminiLn, err := net.Listen("tcp", orFree(o.GeminiAddr))
	if err != nil {
		return nil, fmt.Errorf("listen for the fake Gemini: %w", err)
	}
	s.GeminiURL = "http://" + geminiLn.Addr().String()
	s.serve(runCtx, "gemini", geminiLn, s.Gemini, logging.New(logs("gemini"), logging.Options{Hasher: logging.DevHasher()}))

	actionLog := logging.New(logs("actions"), logging.Options{Hasher: logging.DevHasher()})
	s.Action = actionfake.New(DevActionSecret, actionfake.WithDedupe(), actionfake.WithLogger(actionLog))
	actionLn, err := net.Listen("tcp", orFree(o.ActionAddr))
	if err != nil {
		return nil, fmt.Errorf("listen for the fake action endpoint: %w", err)
	}
	s.ActionURL = "http://" + actionLn.Addr().String() + "/wapipe/actions"
	s.serve(runCtx, "actions", actionLn, s.Action, actionLog)

	c, base, err := s.startTaskServices(ctx, runCtx, o)
	if err != nil {
		return nil, err
	}
	// The fake's template status webhooks reach the stack's webhook, signed as Meta's are.
	s.Graph.SetWebhook(s.WebhookURL, s.AppSecret)
	if err := s.startAPI(ctx, runCtx, o, base, c.DB, c.Tasks, logs); err != nil { // api.go
		return nil, err
	}
	if err := s.serveConsole(runCtx, o, base, c.DB, c.Tasks, c.Admin, c.Keeper, logs("console")); err != nil {
		return nil, err
	}
	if err := s.waitHealthy(ctx); err != nil {
		return nil, err
	}
	s.startSweeps(runCtx, o)
	return s, nil
}

// setDefaults fills the options left empty.
func (o *Options) setDefaults() {
	if o.Project == "" {
		o.Project = "wapipe-dev"
	}
	if o.Location == "" {
		o.Location = "us-central1"
	}
	if o.Queues == nil {
		o.Queues = tasks.DefaultQueues()
	}
}

// logTo is where component c logs: Options.Logs, else nowhere.
func (o Options) logTo(c string) io.Writer {
	if o.Logs == nil {
		return io.Discard
	}
	return o.Logs(c)
}

// startTracing sets up the traces when o asks for them; Stop flushes them.
func (s *Stack) startTracing(ctx context.Context, o Options) error {
	if !o.Tracing && o.SpanExporter == nil {
		return nil
	}
	shutdown, err := telemetry.Setup(ctx, telemetry.Options{ServiceName: "wapipe-devstack", ProjectID: o.Project,
		Exporter: o.TraceExporter, Dev: true, SpanExporter: o.SpanExporter,
		Logger: logging.New(o.logTo("webhook"), logging.Options{})})
	if err != nil {
		return err
	}
	s.closers = append(s.closers, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = shutdown(ctx)
	})
	return nil
}

// startEmulators reuses Firestore's emulator or starts one through gcloud, and starts the
// Cloud Tasks emulator.
func (s *Stack) startEmulators(ctx, runCtx context.Context, o Options) error {
	s.FirestoreHost = o.FirestoreHost
	if s.FirestoreHost == "" {
		emu, err := firestoreemu.Start(ctx, firestoreemu.Options{Log: o.logTo("firestore")})
		if err != nil {
			return err
		}
		s.firestor = emu
		s.FirestoreHost = emu.Host
	}
	tasksEmu, err := cloudtasksemu.Start(runCtx, cloudtasksemu.Options{
		Addr: orFree(o.TasksAddr), Project: o.Project, Location: o.Location, Queues: o.Queues,
		Logger: logging.New(o.logTo("tasks-emulator"), logging.Options{Level: o.LogLevel}),
	})
	if err != nil {
		return fmt.Errorf("start tasks emulator: %w", err)
	}
	s.Tasks, s.TasksAddr = tasksEmu, tasksEmu.Addr()
	s.closers = append(s.closers, tasksEmu.Stop)
	return nil
}

// startTaskServices starts the worker (unless the caller runs it) and the webhook on the
// clients they share, and applies the stack's tenants; the api and the console use the same.
func (s *Stack) startTaskServices(ctx, runCtx context.Context, o Options) (_ *service.Clients, _ config.Base, err error) {
	workerLn, err := net.Listen("tcp", orFree(o.WorkerAddr))
	if err != nil {
		return nil, config.Base{}, fmt.Errorf("listen for the worker: %w", err)
	}
	s.WorkerURL = "http://" + workerLn.Addr().String()
	webhookLn, err := net.Listen("tcp", orFree(o.WebhookAddr))
	if err != nil {
		workerLn.Close()
		return nil, config.Base{}, fmt.Errorf("listen for the webhook: %w", err)
	}
	s.WebhookURL = "http://" + webhookLn.Addr().String() + webhook.Path
	served := false
	defer func() {
		if !served {
			workerLn.Close()
			webhookLn.Close()
		}
	}()
	base, wcfg, hcfg, err := s.serviceConfigs(o)
	if err != nil {
		return nil, base, err
	}
	// The services read the same Firestore and Cloud Tasks settings, so they share one set of
	// clients.
	c, cleanup, err := service.Start(ctx, service.Options{Name: "devstack", Base: &base, InProcess: true,
		Logger: logging.New(o.logTo("webhook"), logging.Options{}), FirestoreEmulatorHost: s.FirestoreHost,
		Tasks: true, Admin: true, Keeper: service.Keeper(wcfg.Secrets())})
	if err != nil {
		return nil, base, err
	}
	s.closers = append(s.closers, cleanup)
	s.startup = c.Warmup()
	s.wg.Go(func() { s.startup.Run(runCtx) })
	if err := s.applyTenants(ctx, o, c.DB, c.Admin); err != nil {
		return nil, base, err
	}
	if err := s.serveWorker(runCtx, o, base, wcfg, c, workerLn); err != nil {
		return nil, base, err
	}
	served = true
	hlog := logging.New(o.logTo("webhook"), logging.Options{Level: o.LogLevel, ProjectID: o.Project, Hasher: base.Hasher()})
	hdeps := webhook.NewDeps(hcfg, c.DB, c.Tasks, hlog)
	for _, adjust := range o.Webhook {
		adjust(&hdeps)
	}
	s.serve(runCtx, "webhook", webhookLn, s.startup.Handler(webhook.NewServer(hcfg, hdeps).Routes()), hlog)
	return c, base, nil
}

// serviceConfigs returns the shared, the worker's and the webhook's configuration, validated.
func (s *Stack) serviceConfigs(o Options) (config.Base, *worker.Config, *webhook.Config, error) {
	base := config.Base{
		AppEnv: config.EnvDev, ProjectID: o.Project, FirestoreDatabase: "(default)",
		TasksEmulatorHost: s.TasksAddr, TasksLocation: o.Location,
		InternalTaskBaseURL: s.WorkerURL, InternalTaskToken: DevInternalToken,
		TasksServiceAccountEmail: o.ServiceAccountEmail, LogLevel: o.LogLevel.String(), TraceSampleRatio: 1,
	}
	wcfg := &worker.Config{Base: base, OutboundQueue: tasks.OutboundQueueID, InboundQueue: tasks.InboundQueueID, GraphAPIBaseURL: s.GraphURL,
		AccessToken: DevAccessToken, LLMBaseURL: s.GeminiURL}
	wcfg.SetDefaults()
	if o.WorkerConfig != nil {
		o.WorkerConfig(wcfg)
	}
	hcfg := &webhook.Config{Base: base, InboundQueue: tasks.InboundQueueID, AppSecret: DevAppSecret,
		VerifyToken: DevVerifyToken, DedupeTTL: time.Hour}
	hcfg.SetDefaults()
	for _, v := range []config.Validator{wcfg, hcfg} {
		if err := v.Validate(); err != nil {
			return base, nil, nil, err
		}
	}
	return base, wcfg, hcfg, nil
}

// serveWorker serves the worker on ln, or closes ln when the caller runs the worker.
func (s *Stack) serveWorker(runCtx context.Context, o Options, base config.Base, wcfg *worker.Config, c *service.Clients, ln net.Listener) error {
	wlog := logging.New(o.logTo("worker"), logging.Options{Level: o.LogLevel, ProjectID: o.Project, Hasher: base.Hasher()})
	wdeps, err := worker.NewDeps(wcfg, c.DB, c.Tasks, c.Admin, c.Keeper, wlog)
	if err != nil {
		return fmt.Errorf("worker.NewDeps: %w", err)
	}
	// The worker judges a task's last attempt against the queues the emulator really has.
	wdeps.Queues = o.Queues
	for _, adjust := range o.Worker {
		adjust(&wdeps)
	}
	if o.ExternalWorker {
		s.externalWorker = true
		ln.Close()
		return nil
	}
	// The tenant routes, as cmd/worker mounts them, on the worker's caches as the tests left them.
	calls, err := tenantcalls.NewDeps(tenantcalls.Config{GraphAPIBaseURL: wcfg.GraphAPIBaseURL, MediaMaxBytes: wcfg.MediaMaxBytes, Dev: wcfg.IsDev()},
		c.DB, wdeps.Tenants, wdeps.Tokens, wdeps.Sends)
	if err != nil {
		return fmt.Errorf("tenantcalls.NewDeps: %w", err)
	}
	wdeps.TenantRoutes = tenantcalls.New(calls).Routes()
	s.serve(runCtx, "worker", ln, s.startup.Handler(worker.NewServer(wcfg, wdeps).Routes()), wlog)
	return nil
}

// applyTenants applies the stack's tenant files (ApplyTenants).
func (s *Stack) applyTenants(ctx context.Context, o Options, db *store.DB, admin *taskqueue.Admin) error {
	files := o.Tenants
	if files == nil {
		files = [][]byte{tenants.Sample()}
	}
	if o.NoTenants || len(files) == 0 {
		return nil
	}
	// The sample names the fake action endpoint at its default address; it follows wherever the
	// endpoint really listens (--action-addr, --port-base), in the sample and in every file made
	// from it.
	followed := make([][]byte, len(files))
	for i, f := range files {
		followed[i] = bytes.ReplaceAll(f, []byte(sampleActionURL), []byte(s.ActionURL))
	}
	files = followed
	ids, err := ApplyTenants(ctx, db, admin, o.Queues, files)
	s.Tenants = append(s.Tenants, ids...)
	return err
}

// ApplyTenants applies tenant files as `wapipe tenants apply` does (the tenant, its send queue
// from queues' template), sets each tenant's token to DevAccessToken and its action secret to
// DevActionSecret, sealed with the development key that every dev process shares, and returns
// the tenants' ids. It applies as in dev: an action URL may be http on loopback. Tests that run the services as processes use it to set up the same tenants
// as the stack.
func ApplyTenants(ctx context.Context, db *store.DB, admin *taskqueue.Admin, queues *tasks.QueueFile, files [][]byte) ([]string, error) {
	keeper, err := secrets.New(ctx, secrets.Config{Dev: true})
	if err != nil {
		return nil, fmt.Errorf("secrets.New: %w", err)
	}
	defer keeper.Close()
	ts := store.NewTenants(db, store.Options{})
	ops := &operator.Tenants{Store: ts, Queues: admin, QueueFile: queues, Sealer: keeper, Dev: true}
	var ids []string
	for _, f := range files {
		rep, err := ops.Apply(ctx, f, false)
		if err != nil {
			return ids, fmt.Errorf("apply tenant: %w", err)
		}
		if _, err := ops.SetToken(ctx, rep.ID, DevAccessToken, false); err != nil {
			return ids, fmt.Errorf("set the token of tenant %s: %w", rep.ID, err)
		}
		sealed, err := keeper.Encrypt(ctx, []byte(DevActionSecret), secrets.AD(rep.ID, secrets.PurposeActionSecret))
		if err != nil {
			return ids, fmt.Errorf("seal the action secret of tenant %s: %w", rep.ID, err)
		}
		if err := ts.SetActionSecret(ctx, rep.ID, sealed); err != nil {
			return ids, err
		}
		ids = append(ids, rep.ID)
	}
	return ids, nil
}

// serveConsole serves the operators' console on the stack's emulators, as cmd/console would.
func (s *Stack) serveConsole(ctx context.Context, o Options, base config.Base, db *store.DB, tq *taskqueue.Client, admin *taskqueue.Admin, keeper *secrets.Keeper, w io.Writer) error {
	ln, err := net.Listen("tcp", orFree(o.ConsoleAddr))
	if err != nil {
		return fmt.Errorf("listen for the console: %w", err)
	}
	s.ConsoleURL = "http://" + ln.Addr().String()
	ccfg := &console.Config{Base: base, InboundQueue: tasks.InboundQueueID, OutboundQueue: tasks.OutboundQueueID, PublicBaseURL: s.APIURL}
	clog := logging.New(w, logging.Options{Level: o.LogLevel, ProjectID: o.Project, Hasher: base.Hasher()})
	deps := console.NewDeps(ccfg, db, tq, admin, keeper, clog)
	// A message's image comes through the worker's tenant route, with the internal token.
	deps.Worker = workerclient.NewWithHTTPClient(s.WorkerURL, DevInternalToken, http.DefaultClient)
	for _, adjust := range o.Console {
		adjust(&deps)
	}
	s.serve(ctx, "console", ln, s.startup.Handler(console.NewServer(deps).Routes()), clog)
	return nil
}

func orFree(addr string) string {
	if addr == "" {
		return "127.0.0.1:0"
	}
	return addr
}

func (s *Stack) serve(ctx context.Context, name string, ln net.Listener, h http.Handler, logger *slog.Logger) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if err := httpserver.Serve(ctx, ln, h, logger); err != nil {
			select {
			case s.errs <- fmt.Errorf("%s: %w", name, err):
			default:
			}
		}
	}()
}

// waitHealthy waits until every service answers its startup probe 200: its clients are warm,
// and the first request the caller makes pays no connection set-up.
func (s *Stack) waitHealthy(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	client := &http.Client{Timeout: time.Second}
	urls := []string{s.WebhookURL[:len(s.WebhookURL)-len(webhook.Path)] + service.StartupPath, s.APIURL + service.StartupPath,
		s.ConsoleURL + service.StartupPath}
	if !s.externalWorker {
		urls = append(urls, s.WorkerURL+service.StartupPath)
	}
	for _, u := range urls {
		for {
			resp, err := client.Get(u)
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					break
				}
			}
			select {
			case err := <-s.errs:
				return err
			case <-ctx.Done():
				return fmt.Errorf("%s not ready: %w", u, ctx.Err())
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	return nil
}

// Err returns a channel that receives a service's failure while the stack runs.
func (s *Stack) Err() <-chan error { return s.errs }

// QueuePath is the full name of a queue of the stack.
func (s *Stack) QueuePath(id string) string {
	return fmt.Sprintf("projects/%s/locations/%s/queues/%s", s.Project, s.Location, id)
}

// Stop drains the services and stops the emulators it started.
func (s *Stack) Stop() {
	if s.cancel != nil {
		s.cancel()
	}
	s.wg.Wait()
	for i := len(s.closers) - 1; i >= 0; i-- {
		s.closers[i]()
	}
	s.closers = nil
	if s.firestor != nil {
		s.firestor.Stop()
		s.firestor = nil
	}
}

// ErrNoGcloud is returned when the Firestore emulator cannot be started for want of gcloud.
var ErrNoGcloud = firestoreemu.ErrNoGcloud

// IsNoGcloud reports whether err means gcloud is missing.
func IsNoGcloud(err error) bool { return errors.Is(err, firestoreemu.ErrNoGcloud) }
