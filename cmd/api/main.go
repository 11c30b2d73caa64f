// Command api is the public, business-facing Cloud Run service: POST /v1/messages sends on a
// tenant's behalf, GET /v1/messages/{id} reports a message's state, and the Embedded Signup routes
// connect a tenant's WhatsApp account.
package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/wapipe/wapipe/internal/api"
	"github.com/wapipe/wapipe/internal/config"
	"github.com/wapipe/wapipe/internal/httpserver"
	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/internal/memlimit"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/taskqueue"
	"github.com/wapipe/wapipe/internal/telemetry"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	logger := logging.New(os.Stdout, logging.Options{})
	defer func() {
		if r := recover(); r != nil {
			logger.Log(ctx, logging.LevelCritical, "api panicked", "panic", r)
			os.Exit(2)
		}
	}()
	err := realMain(ctx)
	stop()
	if err != nil {
		logger.Log(ctx, logging.LevelCritical, "api: "+err.Error(), "event", "startup_failed")
		os.Exit(1)
	}
}

func realMain(ctx context.Context) error {
	var cfg api.Config
	if err := config.Load(ctx, nil, &cfg); err != nil {
		return err
	}
	logger := cfg.Logger()
	memlimit.Apply(logger)

	shutdownTracing, err := telemetry.Setup(ctx, cfg.Telemetry("api", logger))
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
	// Tenant secrets and connect states have a key each (KMS_KEY_NAME, CONNECT_STATE_KMS_KEY_NAME):
	// this public service may open states but only seal tokens.
	keeper, err := cfg.OpenKeeper(ctx)
	if err != nil {
		return err
	}
	defer keeper.Close()

	deps, err := api.NewDeps(&cfg, db, tq, keeper, logger)
	if err != nil {
		return err
	}
	srv := api.NewServer(&cfg, deps)

	ln, err := net.Listen("tcp", ":"+cfg.Port)
	if err != nil {
		return fmt.Errorf("listen on :%s: %w", cfg.Port, err)
	}
	// Serve returns once ctx has ended and in-flight requests have drained; the deferred calls
	// then close the clients and flush the traces.
	return httpserver.Serve(ctx, ln, srv.Routes(), logger)
}
