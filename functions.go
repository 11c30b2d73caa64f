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
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"sync"

	"github.com/GoogleCloudPlatform/functions-framework-go/functions"

	"github.com/wapipe/wapipe/internal/config"
	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/internal/secrets"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/taskqueue"
	"github.com/wapipe/wapipe/internal/telemetry"
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
	c, err := open(ctx, &cfg.Base, "webhook", cfg.InboundDatabase())
	if err != nil {
		return nil, err
	}
	return webhook.NewServer(&cfg, webhook.NewDeps(&cfg, c.db, c.tq, c.logger)).Routes(), nil
}

// buildWorker builds the worker as cmd/worker does, with the same lifetime as buildWebhook's.
func buildWorker(ctx context.Context) (_ http.Handler, err error) {
	var cfg worker.Config
	if err := config.Load(ctx, nil, &cfg); err != nil {
		return nil, err
	}
	c, err := open(ctx, &cfg.Base, "worker", cfg.FirestoreDatabase)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			c.undo.run()
		}
	}()
	admin, err := taskqueue.NewAdmin(ctx, cfg.ProjectID, cfg.TasksLocation, cfg.TasksEmulatorHost)
	if err != nil {
		return nil, fmt.Errorf("taskqueue.NewAdmin: %w", err)
	}
	c.undo.add(func() { admin.Close() })
	keeper, err := secrets.New(ctx, cfg.Secrets())
	if err != nil {
		return nil, fmt.Errorf("secrets.New: %w", err)
	}
	c.undo.add(func() { keeper.Close() })
	deps, err := worker.NewDeps(&cfg, c.db, c.tq, admin, keeper, c.logger)
	if err != nil {
		return nil, err
	}
	closeInbound, err := cfg.UseInboundDatabase(ctx, &deps)
	if err != nil {
		return nil, err
	}
	c.undo.add(closeInbound)
	return worker.NewServer(&cfg, deps).Routes(), nil
}

// clients are what both entry points set up: tracing, the store and the task producer.
type clients struct {
	logger *slog.Logger
	db     *store.DB
	tq     *taskqueue.Client
	// undo closes them, last first.
	undo cleanup
}

// open sets up the clients of the named service, its store on database, and closes what it
// opened when one fails.
func open(ctx context.Context, cfg *config.Base, service, database string) (_ *clients, err error) {
	c := &clients{logger: cfg.Logger()}
	defer func() {
		if err != nil {
			c.undo.run()
		}
	}()
	// The propagator carries the trace from the task's traceparent on to the next hop.
	shutdownTracing, err := telemetry.Setup(ctx, cfg.Telemetry(service, c.logger))
	if err != nil {
		return nil, fmt.Errorf("telemetry.Setup: %w", err)
	}
	c.undo.add(func() { telemetry.Flush(ctx, shutdownTracing, c.logger) })
	if c.db, err = store.Open(ctx, cfg.ProjectID, database); err != nil {
		return nil, err
	}
	c.undo.add(func() { c.db.Close() })
	if c.tq, err = taskqueue.New(ctx, cfg.TaskQueue()); err != nil {
		return nil, fmt.Errorf("taskqueue.New: %w", err)
	}
	c.undo.add(func() { c.tq.Close() })
	return c, nil
}

// cleanup runs what a failed build opened, last first.
type cleanup []func()

func (c *cleanup) add(f func()) { *c = append(*c, f) }

func (c cleanup) run() {
	for i := len(c) - 1; i >= 0; i-- {
		c[i]()
	}
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
