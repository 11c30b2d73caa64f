package webhook

import (
	"context"
	"fmt"
	"log/slog"
	"net"

	"github.com/wapipe/wapipe/internal/dedupe"
	"github.com/wapipe/wapipe/internal/server"
	"github.com/wapipe/wapipe/internal/store"
)

// Run builds the webhook's clients from cfg and serves on ln (or on :$PORT when ln is nil) until
// ctx ends, then drains and closes the clients.
func Run(ctx context.Context, cfg *Config, ln net.Listener, logger *slog.Logger) error {
	stopTelemetry, err := cfg.Telemetry(ctx, "webhook", logger)
	if err != nil {
		return err
	}
	defer stopTelemetry()
	fs, err := cfg.Firestore(ctx)
	if err != nil {
		return err
	}
	defer fs.Close()
	tq, err := cfg.Tasks(ctx)
	if err != nil {
		return err
	}
	defer tq.Close()

	srv := NewServer(cfg, Deps{
		Dedupe:   dedupe.New(fs, dedupe.Options{TTL: cfg.DedupeTTL}),
		Payloads: store.NewPayloads(fs, cfg.DedupeTTL),
		Tasks:    tq,
		Logger:   logger,
	})
	logger.Info("webhook configured", "event", "config_loaded", "app_env", cfg.AppEnv,
		"inbound_queue", tq.QueuePath(cfg.InboundQueue), "dedupe_fail_mode", cfg.DedupeFailMode,
		"tasks_emulator", cfg.TasksEmulatorHost != "", "oidc", cfg.TasksServiceAccountEmail != "")
	if ln == nil {
		ln, err = net.Listen("tcp", ":"+cfg.Port)
		if err != nil {
			return fmt.Errorf("listen on :%s: %w", cfg.Port, err)
		}
	}
	return server.ServeListener(ctx, ln, srv.Routes(), logger)
}
