// Command api is the public, business-facing Cloud Run service: POST /v1/messages sends on a
// tenant's behalf, GET /v1/messages/{id} reports a message's state, POST /v1/media uploads a file
// (through the worker), and the Embedded Signup routes connect a tenant's WhatsApp account.
package main

import (
	"context"

	"github.com/wapipe/wapipe/internal/api"
	"github.com/wapipe/wapipe/internal/secrets"
	"github.com/wapipe/wapipe/internal/service"
	"github.com/wapipe/wapipe/internal/workerclient"
	"github.com/wapipe/wapipe/tasks"
)

func main() { service.Main("api", &api.Config{}, realMain) }

func realMain(ctx context.Context, cfg *api.Config) error {
	// Tenant secrets and connect states have a key each (KMS_KEY_NAME, CONNECT_STATE_KMS_KEY_NAME):
	// this public service may open states but only seal tokens. Its sends go to the tenants'
	// queues, which share the outbound queue's connection.
	c, cleanup, err := service.Start(ctx, service.Options{Name: "api", Base: &cfg.Base, Tasks: true, Keeper: cfg.OpenKeeper,
		WarmQueue: tasks.OutboundQueueID, WarmSeal: []string{secrets.PurposeAccessToken, secrets.PurposeConnectState}})
	if err != nil {
		return err
	}
	defer cleanup()
	deps, err := api.NewDeps(cfg, c.DB, c.Tasks, c.Keeper, c.Logger)
	if err != nil {
		return err
	}
	// Uploads (POST /v1/media) and templates pass through the worker, which alone opens tenant
	// tokens.
	if deps.Worker, err = workerclient.New(ctx, cfg.Base); err != nil {
		return err
	}
	// Serve answers the startup probe once the clients are warm, returns once ctx has ended and
	// in-flight requests have drained; cleanup then closes the clients and flushes the traces.
	return c.Serve(ctx, cfg.Port, api.NewServer(cfg, deps).Routes())
}
