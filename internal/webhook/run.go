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

// Build connects the webhook's clients from cfg and returns the service and a function that
// closes the clients. Each option may adjust the dependencies before the service is made.
func Build(ctx context.Context, cfg *Config, logger *slog.Logger, opts ...func(*Deps)) (*Server, func(), error) {
	fs, err := cfg.Firestore(ctx)
	if err != nil {
		return nil, nil, err
	}
	tq, err := cfg.Tasks(ctx)
	if err != nil {
		fs.Close()
		return nil, nil, err
	}
	deps := Deps{
		Dedupe:   dedupe.New(fs, dedupe.Options{TTL: cfg.DedupeTTL}),
		Payloads: store.NewPayloads(fs, cfg.DedupeTTL),
		Tasks:    tq,
		Logger:   logger,
	}
	for _, o := range opts {
		o(&deps)
	}
	logger.Info("webhook configured", "event", "config_loaded", "app_env", cfg.AppEnv,
		"inbound_queue", tq.QueuePath(cfg.InboundQueue), "dedupe_fail_mode", cfg.DedupeFailMode,
		"tasks_emulator", cfg.TasksEmulatorHost != "", "oidc", cfg.TasksServiceAccountEmail != "")
	return NewServer(cfg, deps), func() { tq.Close(); fs.Close() }, nil
}

// Run serves the webhook on ln (or on :$PORT when ln is nil) until ctx ends, then drains, flushes
// telemetry and closes the clients.
func Run(ctx context.Context, cfg *Config, ln net.Listener, logger *slog.Logger) error {
	stopTelemetry, err := cfg.Telemetry(ctx, "webhook", logger)
	if err != nil {
		return err
	}
	defer stopTelemetry()
	srv, closeClients, err := Build(ctx, cfg, logger)
	if err != nil {
		return err
	}
	defer closeClients()
	if ln == nil {
		if ln, err = net.Listen("tcp", ":"+cfg.Port); err != nil {
			return fmt.Errorf("listen on :%s: %w", cfg.Port, err)
		}
	}
	return server.ServeListener(ctx, ln, srv.Routes(), logger)
}
