// Command webhook is the public Cloud Run service Meta calls with WhatsApp webhooks.
package main

import (
	"context"

	"github.com/wapipe/wapipe/internal/service"
	"github.com/wapipe/wapipe/internal/webhook"
)

func main() { service.Main("webhook", &webhook.Config{}, realMain) }

func realMain(ctx context.Context, cfg *webhook.Config) error {
	// The webhook keeps markers and payloads only: it opens their database and no other.
	c, cleanup, err := service.Start(ctx, service.Options{Name: "webhook", Base: &cfg.Base, Database: cfg.InboundDatabase(), Tasks: true,
		WarmQueue: cfg.InboundQueue})
	if err != nil {
		return err
	}
	defer cleanup()
	srv := webhook.NewServer(cfg, webhook.NewDeps(cfg, c.DB, c.Tasks, c.Logger))
	// Serve answers the startup probe once the clients are warm, returns once ctx has ended and
	// in-flight requests have drained; cleanup then closes the clients and flushes the traces.
	return c.Serve(ctx, cfg.Port, srv.Routes())
}
