// Package wapipe registers wapipe's two services as Cloud Functions (2nd gen) entry points, for
// teams that prefer `gcloud functions deploy --gen2` to Cloud Run services, or that want to run a
// handler locally through the Functions Framework (cmd/functions):
//
//	Webhook: the public webhook (GET and POST /webhooks/whatsapp, GET /healthz)
//	Worker:  the private worker (/internal/process_inbound, /internal/process_outbound, /internal/health)
//
// Cloud Functions builds the package at the root of the source, which is why this file is here
// and not under cmd/. Each entry point reads the same environment as its Cloud Run service and
// builds its clients on the first request, so a function instance loads only its own
// configuration. Each entry point installs the trace propagator, so a trace carries on through
// the tasks between functions as it does between Cloud Run services.
package wapipe

import (
	"context"
	"net/http"
	"os"
	"sync"

	"github.com/GoogleCloudPlatform/functions-framework-go/functions"

	"github.com/wapipe/wapipe/internal/config"
	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/internal/service"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/tenantcalls"
	"github.com/wapipe/wapipe/internal/webhook"
	"github.com/wapipe/wapipe/internal/worker"
)

func init() {
	functions.HTTP("Webhook", lazy("webhook", buildWebhook))
	functions.HTTP("Worker", lazy("worker", buildWorker))
}

// buildWebhook builds the webhook as cmd/webhook does. Its clients live as long as the function
// instance (Cloud Functions gives no shutdown hook); a build that fails closes what it opened, as
// the next request builds again.
func buildWebhook(ctx context.Context) (http.Handler, error) {
	var cfg webhook.Config
	if err := config.Load(ctx, nil, &cfg); err != nil {
		return nil, err
	}
	c, _, err := service.Start(ctx, service.Options{Name: "webhook", Base: &cfg.Base, Database: cfg.InboundDatabase(), Tasks: true})
	if err != nil {
		return nil, err
	}
	return webhook.NewServer(&cfg, webhook.NewDeps(&cfg, c.DB, c.Tasks, c.Logger)).Routes(), nil
}

// buildWorker builds the worker as cmd/worker does, with the same lifetime as buildWebhook's.
func buildWorker(ctx context.Context) (http.Handler, error) {
	var cfg worker.Config
	if err := config.Load(ctx, nil, &cfg); err != nil {
		return nil, err
	}
	c, cleanup, err := service.Start(ctx, service.Options{Name: "worker", Base: &cfg.Base, Tasks: true, Admin: true,
		InboundDatabase: true, Keeper: service.Keeper(cfg.Secrets())})
	if err != nil {
		return nil, err
	}
	deps, err := worker.NewDeps(&cfg, c.DB, c.Tasks, c.Admin, c.Keeper, c.Logger)
	if err != nil {
		cleanup()
		return nil, err
	}
	// Out-of-band payloads are in the webhook's database.
	deps.Payloads = store.NewPayloads(c.InboundDB, 0)
	calls, err := tenantcalls.NewDeps(tenantcalls.Config{GraphAPIBaseURL: cfg.GraphAPIBaseURL, MediaMaxBytes: cfg.MediaMaxBytes, Dev: cfg.IsDev()},
		c.DB, deps.Tenants, deps.Tokens, deps.Sends)
	if err != nil {
		cleanup()
		return nil, err
	}
	deps.TenantRoutes = tenantcalls.New(calls).Routes()
	return worker.NewServer(&cfg, deps).Routes(), nil
}

// lazy builds the handler on the first request and serves every request with it. A build that
// fails answers 500 and is tried again on the next request (a secret may not be mounted yet).
// The clients live as long as the function instance; Cloud Functions gives no shutdown hook.
func lazy(name string, build func(context.Context) (http.Handler, error)) func(http.ResponseWriter, *http.Request) {
	var mu sync.Mutex
	var h http.Handler
	logger := logging.New(os.Stdout, logging.Options{})
	return func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		if h == nil {
			built, err := build(context.WithoutCancel(r.Context()))
			if err != nil {
				mu.Unlock()
				logger.ErrorContext(r.Context(), name+" function not started: "+err.Error(), "event", "startup_failed")
				http.Error(w, `{"status":"error","error":"not_configured"}`, http.StatusInternalServerError)
				return
			}
			h = built
		}
		mu.Unlock()
		h.ServeHTTP(w, r)
	}
}
