package service

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/wapipe/wapipe/internal/config"
	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/internal/memlimit"
	"github.com/wapipe/wapipe/internal/secrets"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/taskqueue"
	"github.com/wapipe/wapipe/internal/telemetry"
)

// Main is a service's main: it loads cfg from the environment (config.Load: defaults, then
// Validate) and runs realMain with it until SIGINT or SIGTERM ends its context. A configuration
// or start-up error exits 1 with one CRITICAL line naming the service, a panic exits 2. The
// configuration is not loaded yet when such a line may be logged, so it goes through a default
// logger.
func Main[C config.Validator](name string, cfg C, realMain func(context.Context, C) error) {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	logger := logging.New(os.Stdout, logging.Options{})
	defer func() {
		if r := recover(); r != nil {
			logger.Log(ctx, logging.LevelCritical, name+" panicked", "panic", r)
			os.Exit(2)
		}
	}()
	err := config.Load(ctx, nil, cfg)
	if err == nil {
		err = realMain(ctx, cfg)
	}
	stop()
	if err != nil {
		logger.Log(ctx, logging.LevelCritical, name+": "+err.Error(), "event", "startup_failed")
		os.Exit(1)
	}
}

// Options say which clients a service needs. Telemetry and Firestore are always set up.
type Options struct {
	// Name names the service in traces ("api", "worker"…).
	Name string
	// Base is the service's validated configuration.
	Base *config.Base
	// Logger is the service's logger; nil means Base.Logger().
	Logger *slog.Logger
	// Database is the Firestore database; empty means Base.FirestoreDatabase. The webhook opens
	// Base.InboundDatabase() and no other.
	Database string
	// FirestoreEmulatorHost, when set, connects to that emulator without reading the environment
	// (the local stack names its own).
	FirestoreEmulatorHost string
	// InProcess says the service shares its process with others (the local stack): the process's
	// tracing and memory limit are the host's to set, once for all.
	InProcess bool
	// Tasks builds the Cloud Tasks producer of Base.TaskQueue().
	Tasks bool
	// Admin builds the Cloud Tasks admin client (queue stats, tenants' queues).
	Admin bool
	// InboundDatabase opens the webhook's own database (INBOUND_FIRESTORE_DATABASE) as
	// Clients.InboundDB when it is not the service's; the worker reads out-of-band payloads
	// there and the console dedupe markers.
	InboundDatabase bool
	// Keeper, when set, opens the service's secrets keeper (each service seals and opens under
	// keys of its own, so the service says how).
	Keeper func(context.Context) (*secrets.Keeper, error)
	// WarmQueue is a queue the service uses, on which the warm-up exercises its Cloud Tasks
	// clients (GetQueue; warmup.go); empty means the inbound queue.
	WarmQueue string
	// WarmSeal are the purposes (secrets.Purpose…) the warm-up seals a throwaway value for, one
	// KMS call each, for a service whose keeper may seal them (the api, the console); a service
	// that only opens secrets has no cheap call to make and leaves it empty.
	WarmSeal []string
}

// Clients are what Start built; a client the Options did not ask for is nil.
type Clients struct {
	Logger *slog.Logger
	DB     *store.DB
	Tasks  *taskqueue.Client
	Admin  *taskqueue.Admin
	Keeper *secrets.Keeper
	// InboundDB is the webhook's database (Options.InboundDatabase): DB when they are the same.
	InboundDB *store.DB

	// warm is what the warm-up exercises beyond the clients (Warmup).
	warm struct {
		queue string
		seal  []string
	}
}

// Start builds the clients o asks for, in order: telemetry, Firestore, Cloud Tasks, the admin
// client, the keeper. It returns a cleanup that closes them in reverse order and flushes the
// traces last; when one fails, what was built is closed before Start returns the error.
func Start(ctx context.Context, o Options) (_ *Clients, cleanup func(), err error) {
	c := &Clients{Logger: o.Logger}
	c.warm.queue, c.warm.seal = o.WarmQueue, o.WarmSeal
	if c.Logger == nil {
		c.Logger = o.Base.Logger()
	}
	var closers []func()
	closeAll := func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}
	defer func() {
		if err != nil {
			closeAll()
		}
	}()
	if !o.InProcess {
		memlimit.Apply(c.Logger)
		// The propagator set up here carries a trace from a task's traceparent on to the next hop.
		shutdown, err := telemetry.Setup(ctx, o.Base.Telemetry(o.Name, c.Logger))
		if err != nil {
			return nil, nil, fmt.Errorf("telemetry.Setup: %w", err)
		}
		closers = append(closers, func() { telemetry.Flush(ctx, shutdown, c.Logger) })
	}
	database := o.Database
	if database == "" {
		database = o.Base.FirestoreDatabase
	}
	if c.DB, err = openDB(ctx, o, database); err != nil {
		return nil, nil, err
	}
	// Every store on the database names people's documents with LOG_HASH_KEY's keyer.
	c.DB.SetKeyer(o.Base.Keyer())
	closers = append(closers, func() { c.DB.Close() })
	c.InboundDB = c.DB
	if in := o.Base.InboundDatabase(); o.InboundDatabase && in != database {
		if c.InboundDB, err = openDB(ctx, o, in); err != nil {
			return nil, nil, err
		}
		closers = append(closers, func() { c.InboundDB.Close() })
	}
	if o.Tasks {
		if c.Tasks, err = taskqueue.New(ctx, o.Base.TaskQueue()); err != nil {
			return nil, nil, fmt.Errorf("taskqueue.New: %w", err)
		}
		closers = append(closers, func() { c.Tasks.Close() })
	}
	if o.Admin {
		if c.Admin, err = taskqueue.NewAdmin(ctx, o.Base.ProjectID, o.Base.TasksLocation, o.Base.TasksEmulatorHost); err != nil {
			return nil, nil, fmt.Errorf("taskqueue.NewAdmin: %w", err)
		}
		closers = append(closers, func() { c.Admin.Close() })
	}
	if o.Keeper != nil {
		if c.Keeper, err = o.Keeper(ctx); err != nil {
			return nil, nil, err
		}
		closers = append(closers, func() { c.Keeper.Close() })
	}
	return c, closeAll, nil
}

// openDB opens database, on the emulator o names if any.
func openDB(ctx context.Context, o Options, database string) (*store.DB, error) {
	if o.FirestoreEmulatorHost != "" {
		return store.OpenEmulator(ctx, o.FirestoreEmulatorHost, o.Base.ProjectID, database)
	}
	return store.Open(ctx, o.Base.ProjectID, database)
}

// listen listens on :port, where Cloud Run sends requests ($PORT).
func listen(port string) (net.Listener, error) {
	ln, err := net.Listen("tcp", ":"+port)
	if err != nil {
		return nil, fmt.Errorf("listen on :%s: %w", port, err)
	}
	return ln, nil
}

// Keeper returns the Options.Keeper that opens the keeper of cfg (secrets.New).
func Keeper(cfg secrets.Config) func(context.Context) (*secrets.Keeper, error) {
	return func(ctx context.Context) (*secrets.Keeper, error) {
		k, err := secrets.New(ctx, cfg)
		if err != nil {
			return nil, fmt.Errorf("secrets.New: %w", err)
		}
		return k, nil
	}
}

// Defaults fills the dependencies every service's Deps may leave nil, the same way for each: the
// process's default logger, the development hasher (hasher may be nil: the service keeps none)
// and the wall clock.
func Defaults(logger **slog.Logger, hasher **logging.Hasher, now *func() time.Time) {
	if *logger == nil {
		*logger = slog.Default()
	}
	if hasher != nil && *hasher == nil {
		*hasher = logging.DevHasher()
	}
	if *now == nil {
		*now = time.Now
	}
}
