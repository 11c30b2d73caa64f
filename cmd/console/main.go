// Command console is the operators' web console: a private Cloud Run service (IAM or IAP in
// front; `gcloud run services proxy wapipe-console` for operators) that shows tenants,
// conversations, failures and health, and takes the operators' few actions. Every request's
// operator is verified (IAP's assertion or the ID token of Cloud Run's IAM check) and its Host
// must be one of the console's names.
package main

import (
	"context"

	"github.com/wapipe/wapipe/internal/console"
	"github.com/wapipe/wapipe/internal/secrets"
	"github.com/wapipe/wapipe/internal/service"
	"github.com/wapipe/wapipe/internal/workerclient"
)

func main() { service.Main("console", &console.Config{}, realMain) }

func realMain(ctx context.Context, cfg *console.Config) error {
	opts := service.Options{Name: "console", Base: &cfg.Base, Tasks: true, Admin: true, InboundDatabase: true,
		WarmQueue: cfg.OutboundQueue}
	// The keeper seals Reconnect's Embedded Signup links; without PUBLIC_BASE_URL there are none.
	if cfg.PublicBaseURL != "" {
		opts.Keeper, opts.WarmSeal = cfg.OpenKeeper, []string{secrets.PurposeConnectState}
	}
	c, cleanup, err := service.Start(ctx, opts)
	if err != nil {
		return err
	}
	defer cleanup()

	deps := console.NewDeps(cfg, c.DB, c.Tasks, c.Admin, c.Keeper, c.Logger)
	cfg.UseInboundDatabase(c.InboundDB, &deps)
	// A message's image is fetched through the worker, which alone opens tenant tokens.
	if deps.Worker, err = workerclient.New(ctx, cfg.Base); err != nil {
		return err
	}
	c.Logger.Info("console configured", "event", "config_loaded", "app_env", cfg.AppEnv, "iap", cfg.IAPAudience != "",
		"oidc_verified_by_platform", cfg.OIDCVerifiedByPlatform, "cloud_run_service", cfg.Service, "hosts", cfg.Hosts)
	// Serve answers the startup probe once the clients are warm, returns once ctx has ended and
	// in-flight requests have drained; cleanup then closes the clients and flushes the traces.
	return c.Serve(ctx, cfg.Port, console.NewServer(deps).Routes())
}
