package webhook

import (
	"log/slog"

	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/taskqueue"
)

// NewDeps builds the webhook's dependencies from its configuration and the clients its caller
// opened (and closes): cmd/webhook, the Cloud Functions entry point and the local stack.
func NewDeps(cfg *Config, db *store.DB, tq *taskqueue.Client, logger *slog.Logger) Deps {
	logger.Info("webhook configured", "event", "config_loaded", "app_env", cfg.AppEnv,
		"inbound_queue", tq.QueuePath(cfg.InboundQueue), "dedupe_fail_mode", cfg.DedupeFailMode,
		"tasks_emulator", cfg.TasksEmulatorHost != "", "oidc", cfg.TasksServiceAccountEmail != "")
	return Deps{
		Dedupe: store.NewMarkers(db, store.MarkerOptions{TTL: cfg.DedupeTTL, EventRef: cfg.Hasher().Ref}),
		// Out-of-band payloads live as long as dead letters do, so a replay can still read one.
		Payloads:   store.NewPayloads(db, store.DefaultRetention),
		Tasks:      tq,
		Logger:     logger,
		CallBudget: cfg.CallBudget,
	}
}
