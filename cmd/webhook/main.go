// Command webhook is the public Cloud Run service Meta calls with WhatsApp webhooks.
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
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/taskqueue"
	"github.com/wapipe/wapipe/internal/telemetry"
	"github.com/wapipe/wapipe/internal/webhook"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	logger := logging.New(os.Stdout, logging.Options{})
	defer func() {
		if r := recover(); r != nil {
			logger.Log(ctx, logging.LevelCritical, "webhook panicked", "panic", r)
			os.Exit(2)
		}
	}()
	err := realMain(ctx)
	stop()
	if err != nil {
		logger.Log(ctx, logging.LevelCritical, "webhook: "+err.Error(), "event", "startup_failed")
		os.Exit(1)
	}
}

func realMain(ctx context.Context) error {
	var cfg webhook.Config
	if err := config.Load(ctx, nil, &cfg); err != nil {
		return err
	}
	logger := cfg.Logger()
	memlimit.Apply(logger)

	shutdownTracing, err := telemetry.Setup(ctx, cfg.Telemetry("webhook", logger))
	if err != nil {
		return fmt.Errorf("telemetry.Setup: %w", err)
	}
	defer telemetry.Flush(ctx, shutdownTracing, logger)

	// The webhook keeps markers and payloads only: it opens their database and no other.
	db, err := store.Open(ctx, cfg.ProjectID, cfg.InboundDatabase())
	if err != nil {
		return err
	}
	defer db.Close()
	tq, err := taskqueue.New(ctx, cfg.TaskQueue())
	if err != nil {
		return fmt.Errorf("taskqueue.New: %w", err)
	}
	defer tq.Close()

	srv := webhook.NewServer(&cfg, webhook.NewDeps(&cfg, db, tq, logger))

	ln, err := net.Listen("tcp", ":"+cfg.Port)
	if err != nil {
		return fmt.Errorf("listen on :%s: %w", cfg.Port, err)
	}
	// Serve returns once ctx has ended and in-flight requests have drained; the deferred calls
	// then close the clients and flush the traces.
	return httpserver.Serve(ctx, ln, srv.Routes(), logger)
}
