package webhook_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sethvargo/go-envconfig"

	"github.com/wapipe/wapipe/internal/config"
	"github.com/wapipe/wapipe/internal/testenv"
	"github.com/wapipe/wapipe/internal/webhook"
)

func TestConfig(t *testing.T) {
	t.Parallel()
	base := map[string]string{
		"GOOGLE_CLOUD_PROJECT": "p", "TASKS_LOCATION": "us-central1",
		"INTERNAL_TASK_BASE_URL": "https://worker.example", "INTERNAL_TASK_TOKEN": "0123456789abcdef",
		"LOG_HASH_KEY":        "0123456789abcdef0123456789abcdef-log-key",
		"WHATSAPP_APP_SECRET": "app-secret-value", "WHATSAPP_VERIFY_TOKEN": "verify",
		"TASKS_SERVICE_ACCOUNT_EMAIL": "wapipe-inv-webhook@p.iam.gserviceaccount.com",
	}
	tests := []struct {
		name     string
		change   map[string]string
		wantErr  string
		wantMode string
	}{
		{"prod defaults", nil, "", webhook.FailClosed},
		{"dev defaults to open", map[string]string{"APP_ENV": "dev"}, "", webhook.FailOpen},
		{"dev may close", map[string]string{"APP_ENV": "dev", "DEDUPE_FAIL_MODE": "closed"}, "", webhook.FailClosed},
		{"open outside dev", map[string]string{"DEDUPE_FAIL_MODE": "open"}, "DEDUPE_FAIL_MODE", ""},
		{"unknown mode", map[string]string{"DEDUPE_FAIL_MODE": "maybe"}, "DEDUPE_FAIL_MODE", ""},
		{"missing app secret", map[string]string{"WHATSAPP_APP_SECRET": ""}, "WHATSAPP_APP_SECRET", ""},
		{"missing verify token", map[string]string{"WHATSAPP_VERIFY_TOKEN": ""}, "WHATSAPP_VERIFY_TOKEN", ""},
		{"empty app secret (anyone could sign)", map[string]string{"WHATSAPP_APP_SECRET": "<empty>"}, "WHATSAPP_APP_SECRET", ""},
		{"empty verify token", map[string]string{"WHATSAPP_VERIFY_TOKEN": "<empty>"}, "WHATSAPP_VERIFY_TOKEN", ""},
		{"empty internal token in dev", map[string]string{"APP_ENV": "dev", "INTERNAL_TASK_TOKEN": "<empty>"}, "INTERNAL_TASK_TOKEN", ""},
		{"bad ttl", map[string]string{"DEDUPE_TTL": "soon"}, "DEDUPE_TTL", ""},
		{"queue not in queues.yaml", map[string]string{"INBOUND_TASK_QUEUE_NAME": "wa-elsewhere"}, "INBOUND_TASK_QUEUE_NAME", ""},
		{"negative ttl", map[string]string{"DEDUPE_TTL": "-1h"}, "DEDUPE_TTL", ""},
		{"body budget under the body cap", map[string]string{"MAX_INFLIGHT_BODY_BYTES": "1048576"}, "MAX_INFLIGHT_BODY_BYTES", ""},
		{"call budget too short for a healthy store", map[string]string{"WEBHOOK_CALL_BUDGET": "50ms"}, "WEBHOOK_CALL_BUDGET", ""},
		{"call budget at Meta's timeout", map[string]string{"WEBHOOK_CALL_BUDGET": "5s"}, "WEBHOOK_CALL_BUDGET", ""},
		{"call budget not a duration", map[string]string{"WEBHOOK_CALL_BUDGET": "fast"}, "WEBHOOK_CALL_BUDGET", ""},
		{"call budget set", map[string]string{"WEBHOOK_CALL_BUDGET": "1500ms"}, "", webhook.FailClosed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			env := testenv.Env(base, tc.change)
			var cfg webhook.Config
			err := config.Load(context.Background(), envconfig.MapLookuper(env), &cfg)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one naming %s", err, tc.wantErr)
				}
				if strings.Contains(err.Error(), "app-secret-value") {
					t.Fatalf("the error shows a secret: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.DedupeFailMode != tc.wantMode || cfg.DedupeTTL != 168*time.Hour || cfg.InboundQueue != "wa-inbound" ||
				cfg.MaxInflightBodyBytes != webhook.DefaultMaxInflightBodyBytes || cfg.CallBudget != webhook.DefaultCallBudget {
				t.Errorf("config = mode %s ttl %s queue %s", cfg.DedupeFailMode, cfg.DedupeTTL, cfg.InboundQueue)
			}
		})
	}
}

// TestValidateChangesNothing checks that Validate is pure: the fail mode's default is the
// loader's business (SetDefaults).
func TestValidateChangesNothing(t *testing.T) {
	t.Parallel()
	cfg := webhook.Config{
		Base: config.Base{AppEnv: "dev", ProjectID: "p", TasksLocation: "l", InternalTaskBaseURL: "http://127.0.0.1:1",
			InternalTaskToken: "t", LogLevel: "INFO"},
		InboundQueue: "wa-inbound", AppSecret: "s", VerifyToken: "v", DedupeTTL: time.Hour,
	}
	before := cfg
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if cfg != before {
		t.Errorf("Validate changed the config: %+v, was %+v", cfg, before)
	}
	cfg.SetDefaults()
	if cfg.DedupeFailMode != webhook.FailOpen {
		t.Errorf("SetDefaults in dev: DEDUPE_FAIL_MODE %q, want open", cfg.DedupeFailMode)
	}
}
