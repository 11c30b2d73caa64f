// Command console is the operators' web console: a private Cloud Run service (IAM or IAP in
// front; `gcloud run services proxy wapipe-console` for operators) that shows tenants,
// conversations, failures and health, and takes the operators' few actions. Every request's
// operator is verified (IAP's assertion or the ID token of Cloud Run's IAM check) and its Host
// must be one of the console's names.
package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/wapipe/wapipe/internal/config"
	"github.com/wapipe/wapipe/internal/console"
	"github.com/wapipe/wapipe/internal/httpserver"
	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/internal/memlimit"
	"github.com/wapipe/wapipe/internal/secrets"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/taskqueue"
	"github.com/wapipe/wapipe/internal/telemetry"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	logger := logging.New(os.Stdout, logging.Options{})
	defer func() {
		if r := recover(); r != nil {
			logger.Log(ctx, logging.LevelCritical, "console panicked", "panic", r)
			os.Exit(2)
		}
	}()
	err := realMain(ctx)
	stop()
	if err != nil {
		logger.Log(ctx, logging.LevelCritical, "console: "+err.Error(), "event", "startup_failed")
		os.Exit(1)
	}
}

func realMain(ctx context.Context) error {
	var cfg console.Config
	if err := config.Load(ctx, nil, &cfg); err != nil {
		return err
	}
	logger := cfg.Logger()
	memlimit.Apply(logger)

	shutdownTracing, err := telemetry.Setup(ctx, cfg.Telemetry("console", logger))
	if err != nil {
		return fmt.Errorf("telemetry.Setup: %w", err)
	}
	defer telemetry.Flush(ctx, shutdownTracing, logger)

	db, err := store.Open(ctx, cfg.ProjectID, cfg.FirestoreDatabase)
	if err != nil {
		return err
	}
	defer db.Close()
	tq, err := taskqueue.New(ctx, cfg.TaskQueue())
	if err != nil {
		return fmt.Errorf("taskqueue.New: %w", err)
	}
	defer tq.Close()
	admin, err := taskqueue.NewAdmin(ctx, cfg.ProjectID, cfg.TasksLocation, cfg.TasksEmulatorHost)
	if err != nil {
		return fmt.Errorf("taskqueue.NewAdmin: %w", err)
	}
	defer admin.Close()

	// The keeper seals Reconnect's Embedded Signup links; without PUBLIC_BASE_URL there are none.
	var keeper *secrets.Keeper
	if cfg.PublicBaseURL != "" {
		if keeper, err = cfg.OpenKeeper(ctx); err != nil {
			return err
		}
		defer keeper.Close()
	}

	deps := console.NewDeps(&cfg, db, tq, admin, keeper, logger)
	closeInbound, err := cfg.UseInboundDatabase(ctx, &deps)
	if err != nil {
		return err
	}
	defer closeInbound()
	srv := console.NewServer(deps)
	logger.Info("console configured", "event", "config_loaded", "app_env", cfg.AppEnv, "iap", cfg.IAPAudience != "",
		"oidc_verified_by_platform", cfg.OIDCVerifiedByPlatform, "cloud_run_service", cfg.Service, "hosts", cfg.Hosts)

	ln, err := net.Listen("tcp", ":"+cfg.Port)
	if err != nil {
		return fmt.Errorf("listen on :%s: %w", cfg.Port, err)
	}
	// Serve returns once ctx has ended and in-flight requests have drained; the deferred calls
	// then close the clients and flush the traces.
	return httpserver.Serve(ctx, ln, srv.Routes(), logger)
}
