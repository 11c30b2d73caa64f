// Command worker is the private Cloud Run service Cloud Tasks calls: it fans inbound events out
// into one outbound task per message and sends each reply through the Graph API exactly once.
package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/wapipe/wapipe/internal/config"
	"github.com/wapipe/wapipe/internal/httpserver"
	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/internal/memlimit"
	"github.com/wapipe/wapipe/internal/secrets"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/taskqueue"
	"github.com/wapipe/wapipe/internal/telemetry"
	"github.com/wapipe/wapipe/internal/worker"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	logger := logging.New(os.Stdout, logging.Options{})
	defer func() {
		if r := recover(); r != nil {
			logger.Log(ctx, logging.LevelCritical, "worker panicked", "panic", r)
			os.Exit(2)
		}
	}()
	err := realMain(ctx)
	stop()
	if err != nil {
		logger.Log(ctx, logging.LevelCritical, "worker: "+err.Error(), "event", "startup_failed")
		os.Exit(1)
	}
}

func realMain(ctx context.Context) error {
	var cfg worker.Config
	if err := config.Load(ctx, nil, &cfg); err != nil {
		return err
	}
	logger := cfg.Logger()
	memlimit.Apply(logger)

	shutdownTracing, err := telemetry.Setup(ctx, cfg.Telemetry("worker", logger))
	if err != nil {
		return fmt.Errorf("telemetry.Setup: %w", err)
	}
	defer telemetry.Flush(ctx, shutdownTracing, logger)

	db, err := store.Open(ctx, cfg.ProjectID, cfg.FirestoreDatabase)
	if err != nil {
		return err
	}
	defer db.Close()
	tq, err := taskqueue.New(ctx, cfg.TaskQueue())
	if err != nil {
		return fmt.Errorf("taskqueue.New: %w", err)
	}
	defer tq.Close()
	admin, err := taskqueue.NewAdmin(ctx, cfg.ProjectID, cfg.TasksLocation, cfg.TasksEmulatorHost)
	if err != nil {
		return fmt.Errorf("taskqueue.NewAdmin: %w", err)
	}
	defer admin.Close()

	keeper, err := secrets.New(ctx, cfg.Secrets())
	if err != nil {
		return fmt.Errorf("secrets.New: %w", err)
	}
	defer keeper.Close()

	deps, err := worker.NewDeps(&cfg, db, tq, admin, keeper, logger)
	if err != nil {
		return err
	}
	closeInbound, err := cfg.UseInboundDatabase(ctx, &deps)
	if err != nil {
		return err
	}
	defer closeInbound()
	srv := worker.NewServer(&cfg, deps)

	ln, err := net.Listen("tcp", ":"+cfg.Port)
	if err != nil {
		return fmt.Errorf("listen on :%s: %w", cfg.Port, err)
	}
	// Serve returns once ctx has ended and in-flight requests have drained; the deferred calls
	// then close the clients and flush the traces.
	return httpserver.Serve(ctx, ln, srv.Routes(), logger)
}
