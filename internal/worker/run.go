package worker

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"

	cloudtasksbeta "cloud.google.com/go/cloudtasks/apiv2beta3"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"

	"github.com/wapipe/wapipe/internal/graph"
	"github.com/wapipe/wapipe/internal/health"
	"github.com/wapipe/wapipe/internal/responder"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/taskqueue"
)

// Build connects the worker's clients from cfg and returns the service and a function that closes
// the clients. Each option may adjust the dependencies before the service is made (the local
// stack and tests use this to wrap or replace one).
func Build(ctx context.Context, cfg *Config, logger *slog.Logger, opts ...func(*Deps)) (*Server, func(), error) {
	fs, tq, closeClients, err := cfg.Clients(ctx)
	if err != nil {
		return nil, nil, err
	}
	// Queue stats for health are only in the v2beta3 API.
	beta, err := cloudtasksbeta.NewClient(ctx, taskqueue.ClientOptions(cfg.TasksEmulatorHost)...)
	if err != nil {
		closeClients()
		return nil, nil, fmt.Errorf("cloudtasks v2beta3 NewClient: %w", err)
	}
	closeAll := func() { beta.Close(); closeClients() }
	httpClient := &http.Client{Timeout: graph.DefaultTimeout, Transport: otelhttp.NewTransport(http.DefaultTransport)}
	gc, err := graph.NewClient(cfg.GraphAPIBaseURL, cfg.AccessToken, httpClient)
	if err != nil {
		closeAll()
		return nil, nil, fmt.Errorf("graph.NewClient: %w", err)
	}
	records := store.NewRecords(fs, store.RecordsOptions{})
	deps := Deps{
		Tasks:       tq,
		Payloads:    store.NewPayloads(fs, 0),
		Outbound:    records,
		Statuses:    records,
		Deliveries:  records,
		Traces:      records,
		DeadLetters: records,
		Sender:      NewGraphSender(gc),
		Responder:   responder.Ack{Text: cfg.AckText},
		Logger:      logger,
		Health:      health.New(fs, beta, []string{tq.QueuePath(cfg.InboundQueue), tq.QueuePath(cfg.OutboundQueue)}),
	}
	if v := cfg.OIDCVerifier(); v != nil {
		deps.Verifier = v
	}
	for _, o := range opts {
		o(&deps)
	}
	logger.Info("worker configured", "event", "config_loaded", "app_env", cfg.AppEnv,
		"outbound_queue", tq.QueuePath(cfg.OutboundQueue), "tasks_emulator", cfg.TasksEmulatorHost != "",
		"oidc", cfg.TasksServiceAccountEmail != "", "oidc_verified_by_platform", cfg.OIDCVerifiedByPlatform)
	return NewServer(cfg, deps), closeAll, nil
}

// Run serves the worker on ln (or on :$PORT when ln is nil) until ctx ends, then drains, closes
// the clients and flushes telemetry.
func Run(ctx context.Context, cfg *Config, ln net.Listener, logger *slog.Logger) error {
	return cfg.Serve(ctx, "worker", ln, logger, func(ctx context.Context) (http.Handler, func(), error) {
		srv, closeClients, err := Build(ctx, cfg, logger)
		if err != nil {
			return nil, nil, err
		}
		return srv.Routes(), closeClients, nil
	})
}
