// Command tasks-emulator is the local Cloud Tasks: it serves the Cloud Tasks v2 gRPC API on --addr,
// creates the queues of --queues (default: the embedded tasks/queues.yaml) under
// projects/<project>/locations/<location>, and dispatches their HTTP tasks as Cloud Tasks would.
// Point CLOUD_TASKS_EMULATOR_HOST at --addr. The same port serves the OIDC issuer
// http://<addr> whose keys verify the tokens attached to tasks.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/wapipe/wapipe/internal/cloudtasksemu"
	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/tasks"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(os.Stderr, "tasks-emulator: panic: %v\n", r)
			os.Exit(1)
		}
	}()
	if err := realMain(ctx); err != nil {
		stop()
		fmt.Fprintf(os.Stderr, "tasks-emulator: %v\n", err)
		os.Exit(1)
	}
}

func realMain(ctx context.Context) error {
	return run(ctx, os.Args[1:], os.Stdout, nil)
}

// config is the command line.
type config struct {
	addr, project, location, queues string
	nameReservation                 time.Duration
	logLevel                        string
}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	var cfg config
	fs := flag.NewFlagSet("tasks-emulator", flag.ContinueOnError)
	// Errors are reported by main in one line; only -help prints the usage.
	fs.SetOutput(io.Discard)
	fs.StringVar(&cfg.addr, "addr", "127.0.0.1:8123", "host:port to serve gRPC (and the OIDC issuer) on")
	fs.StringVar(&cfg.project, "project", envOr("GOOGLE_CLOUD_PROJECT", "wapipe-local"), "project id of the queues created at start")
	fs.StringVar(&cfg.location, "location", envOr("TASKS_LOCATION", "us-central1"), "location of the queues created at start")
	fs.StringVar(&cfg.queues, "queues", "", "queues file to create at start (default: the embedded tasks/queues.yaml)")
	fs.DurationVar(&cfg.nameReservation, "name-reservation", time.Hour, "how long a completed or deleted task's name stays taken")
	fs.StringVar(&cfg.logLevel, "log-level", "INFO", "DEBUG logs every attempt; INFO, WARNING or ERROR")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(stderr)
			fs.PrintDefaults()
		}
		return cfg, fmt.Errorf("flags: %w", err)
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("flags: unexpected argument %q", fs.Arg(0))
	}
	if cfg.project == "" || cfg.location == "" {
		return cfg, errors.New("flags: --project and --location must not be empty")
	}
	return cfg, nil
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// run serves until ctx ends. started, when not nil, is told the running server (tests use it to
// learn the port).
func run(ctx context.Context, args []string, stdout io.Writer, started func(*cloudtasksemu.Server)) error {
	cfg, err := parseFlags(args, os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	logger := logging.New(stdout, logging.Options{Level: logging.ParseLevel(cfg.logLevel), ProjectID: cfg.project})
	queues, err := tasks.LoadQueues(cfg.queues)
	if err != nil {
		return fmt.Errorf("tasks.LoadQueues: %w", err)
	}
	emu, err := cloudtasksemu.Start(ctx, cloudtasksemu.Options{
		Addr:            cfg.addr,
		Project:         cfg.project,
		Location:        cfg.location,
		Queues:          queues,
		NameReservation: cfg.nameReservation,
		Logger:          logger,
	})
	if err != nil {
		return fmt.Errorf("cloudtasksemu.Start: %w", err)
	}
	defer emu.Stop()
	logger.Info("serving Cloud Tasks", slog.String("event", "ready"),
		slog.String("CLOUD_TASKS_EMULATOR_HOST", emu.Addr()), slog.String("issuer", emu.IssuerURL()),
		slog.String("parent", "projects/"+cfg.project+"/locations/"+cfg.location), slog.Any("queues", queues.IDs()))
	if started != nil {
		started(emu)
	}
	<-ctx.Done()
	logger.Info("shutting down", slog.String("event", "shutdown"))
	return nil
}
