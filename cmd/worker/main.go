// Command worker is the private Cloud Run service Cloud Tasks calls: it fans inbound events out
// into one outbound task per message and sends each reply through the Graph API exactly once.
package main

import (
	"context"

	"github.com/wapipe/wapipe/internal/service"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/tenantcalls"
	"github.com/wapipe/wapipe/internal/worker"
)

func main() { service.Main("worker", &worker.Config{}, realMain) }

func realMain(ctx context.Context, cfg *worker.Config) error {
	c, cleanup, err := service.Start(ctx, service.Options{Name: "worker", Base: &cfg.Base, Tasks: true, Admin: true,
		InboundDatabase: true, Keeper: service.Keeper(cfg.Secrets()), WarmQueue: cfg.OutboundQueue})
	if err != nil {
		return err
	}
	defer cleanup()

	deps, err := worker.NewDeps(cfg, c.DB, c.Tasks, c.Admin, c.Keeper, c.Logger)
	if err != nil {
		return err
	}
	// Out-of-band payloads are in the webhook's database.
	deps.Payloads = store.NewPayloads(c.InboundDB, 0)
	// The tenant routes, mounted behind the worker's admission, on its tenant and token caches.
	calls, err := tenantcalls.NewDeps(tenantcalls.Config{GraphAPIBaseURL: cfg.GraphAPIBaseURL, MediaMaxBytes: cfg.MediaMaxBytes, Dev: cfg.IsDev()},
		c.DB, deps.Tenants, deps.Tokens, deps.Sends)
	if err != nil {
		return err
	}
	deps.TenantRoutes = tenantcalls.New(calls).Routes()
	srv := worker.NewServer(cfg, deps)
	// Serve answers the startup probe once the clients are warm, returns once ctx has ended and
	// in-flight requests have drained; cleanup then closes the clients and flushes the traces.
	return c.Serve(ctx, cfg.Port, srv.Routes())
}
