package webhook

import (
	"context"
	"log/slog"
	"net"
	"net/http"

	"github.com/wapipe/wapipe/internal/dedupe"
	"github.com/wapipe/wapipe/internal/store"
)

// Build connects the webhook's clients from cfg and returns the service and a function that
// closes the clients. Each option may adjust the dependencies before the service is made.
func Build(ctx context.Context, cfg *Config, logger *slog.Logger, opts ...func(*Deps)) (*Server, func(), error) {
	fs, tq, closeClients, err := cfg.Clients(ctx)
	if err != nil {
		return nil, nil, err
	}
	deps := Deps{
		Dedupe: dedupe.New(fs, dedupe.Options{TTL: cfg.DedupeTTL}),
		// Out-of-band payloads live as long as dead letters do, so a replay can still read one.
		Payloads: store.NewPayloads(fs, store.DefaultRetention),
		Tasks:    tq,
		Logger:   logger,
	}
	for _, o := range opts {
		o(&deps)
	}
	logger.Info("webhook configured", "event", "config_loaded", "app_env", cfg.AppEnv,
		"inbound_queue", tq.QueuePath(cfg.InboundQueue), "dedupe_fail_mode", cfg.DedupeFailMode,
		"tasks_emulator", cfg.TasksEmulatorHost != "", "oidc", cfg.TasksServiceAccountEmail != "")
	return NewServer(cfg, deps), closeClients, nil
}

// Run serves the webhook on ln (or on :$PORT when ln is nil) until ctx ends, then drains, closes
// the clients and flushes telemetry.
func Run(ctx context.Context, cfg *Config, ln net.Listener, logger *slog.Logger) error {
	return cfg.Serve(ctx, "webhook", ln, logger, func(ctx context.Context) (http.Handler, func(), error) {
		srv, closeClients, err := Build(ctx, cfg, logger)
		if err != nil {
			return nil, nil, err
		}
		return srv.Routes(), closeClients, nil
	})
}
