package worker

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"

	"github.com/wapipe/wapipe/internal/graph"
	"github.com/wapipe/wapipe/internal/responder"
	"github.com/wapipe/wapipe/internal/server"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/taskqueue"
)

// Run builds the worker's clients from cfg and serves on ln (or on :$PORT when ln is nil) until ctx
// ends, then drains and closes the clients.
func Run(ctx context.Context, cfg *Config, ln net.Listener, logger *slog.Logger) error {
	stopTelemetry, err := cfg.Telemetry(ctx, "worker", logger)
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

	httpClient := &http.Client{Timeout: graph.DefaultTimeout, Transport: otelhttp.NewTransport(http.DefaultTransport)}
	gc, err := graph.NewClient(cfg.GraphAPIBaseURL, cfg.AccessToken, httpClient)
	if err != nil {
		return fmt.Errorf("graph.NewClient: %w", err)
	}
	deps := Deps{
		Tasks:     tq,
		Payloads:  store.NewPayloads(fs, 0),
		Records:   store.NewRecords(fs, store.RecordsOptions{}),
		Sender:    NewGraphSender(gc),
		Responder: responder.Ack{Text: cfg.AckText},
		Logger:    logger,
	}
	if cfg.TasksServiceAccountEmail != "" {
		issuer := GoogleIssuer
		if cfg.TasksEmulatorHost != "" {
			issuer = "http://" + cfg.TasksEmulatorHost
		}
		deps.Verifier = NewOIDCVerifier(issuer, taskqueue.Audience(cfg.InternalTaskBaseURL))
	}
	srv := NewServer(cfg, deps)
	logger.Info("worker configured", "event", "config_loaded", "app_env", cfg.AppEnv,
		"outbound_queue", tq.QueuePath(cfg.OutboundQueue), "tasks_emulator", cfg.TasksEmulatorHost != "",
		"oidc", cfg.TasksServiceAccountEmail != "")
	if ln == nil {
		ln, err = net.Listen("tcp", ":"+cfg.Port)
		if err != nil {
			return fmt.Errorf("listen on :%s: %w", cfg.Port, err)
		}
	}
	return server.ServeListener(ctx, ln, srv.Routes(), logger)
}
