package console

import (
	"strings"
	"testing"

	"github.com/sethvargo/go-envconfig"

	"github.com/wapipe/wapipe/internal/config"
)

// testReplayInvokers is REPLAY_INVOKERS as Terraform writes it, with the project p's accounts.
const testReplayInvokers = `{"/internal/process_inbound":"wapipe-inv-webhook@p.iam.gserviceaccount.com",` +
	`"/internal/process_outbound":"wapipe-invoker@p.iam.gserviceaccount.com","/internal/process_action":"wapipe-invoker@p.iam.gserviceaccount.com",` +
	`"/internal/process_send":"wapipe-inv-console@p.iam.gserviceaccount.com"}`

func TestConfig(t *testing.T) {
	t.Parallel()
	base := map[string]string{
		"GOOGLE_CLOUD_PROJECT":        "p",
		"TASKS_LOCATION":              "us-central1",
		"INTERNAL_TASK_BASE_URL":      "https://wapipe-worker-1.us-central1.run.app",
		"INTERNAL_TASK_TOKEN":         "0123456789abcdef0123456789abcdef",
		"LOG_HASH_KEY":                "0123456789abcdef0123456789abcdef-log-key",
		"TASKS_SERVICE_ACCOUNT_EMAIL": "wapipe-inv-console@p.iam.gserviceaccount.com",
		// As Terraform deploys it: on Cloud Run, behind its IAM check.
		"K_SERVICE":                 "wapipe-console",
		"OIDC_VERIFIED_BY_PLATFORM": "true",
		"REPLAY_INVOKERS":           testReplayInvokers,
	}
	// with returns base with the given key, value pairs set (an empty value unsets the key).
	with := func(kv ...string) map[string]string {
		m := map[string]string{}
		for a, b := range base {
			m[a] = b
		}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
			if kv[i+1] == "" {
				delete(m, kv[i])
			}
		}
		return m
	}
	for _, tc := range []struct {
		name string
		env  map[string]string
		want string // "" for a valid configuration
	}{
		{"valid", base, ""},
		{"unknown queue", with("OUTBOUND_TASK_QUEUE_NAME", "nope"), "OUTBOUND_TASK_QUEUE_NAME"},
		{"http worker in prod", with("INTERNAL_TASK_BASE_URL", "http://x"), "INTERNAL_TASK_BASE_URL"},
		{"no project", with("GOOGLE_CLOUD_PROJECT", ""), "GOOGLE_CLOUD_PROJECT"},
		{"prod off Cloud Run without hosts", with("K_SERVICE", ""), "CONSOLE_HOSTS"},
		{"prod off Cloud Run with hosts", with("K_SERVICE", "", "CONSOLE_HOSTS", "console.example.com,ops.example.com:8443"), ""},
		{"http public base URL in prod", with("PUBLIC_BASE_URL", "http://api.example.com"), "PUBLIC_BASE_URL: must be https"},
		{"public base URL not absolute", with("PUBLIC_BASE_URL", "api.example.com"), "PUBLIC_BASE_URL: must be an absolute http(s) URL"},
		{"a URL for a host", with("CONSOLE_HOSTS", "https://console.example.com"), "CONSOLE_HOSTS"},
		{"prod with no way to verify operators", with("OIDC_VERIFIED_BY_PLATFORM", ""), "OIDC_VERIFIED_BY_PLATFORM or IAP_AUDIENCE"},
		{"prod behind IAP", with("OIDC_VERIFIED_BY_PLATFORM", "", "IAP_AUDIENCE", "/projects/123/global/backendServices/456"), ""},
		{"IAP audience not IAP's", with("IAP_AUDIENCE", "https://console.example.com"), "IAP_AUDIENCE"},
		{"prod without replay invokers", with("REPLAY_INVOKERS", ""), "REPLAY_INVOKERS: must name the invoker of every task route"},
		{"a replay invoker for a route that takes no task", with("REPLAY_INVOKERS", `{"/internal/sweep":"a@p.iam.gserviceaccount.com"}`), "is not a task route"},
		{"a replay invoker that is no email", with("REPLAY_INVOKERS", `{"/internal/process_send":"console"}`), "REPLAY_INVOKERS: /internal/process_send"},
		{"replay invokers not JSON", with("REPLAY_INVOKERS", `process_send=x`), "REPLAY_INVOKERS"},
		{"dev needs neither", with("K_SERVICE", "", "OIDC_VERIFIED_BY_PLATFORM", "", "APP_ENV", "dev", "LOG_HASH_KEY", "", "INTERNAL_TASK_BASE_URL", "http://127.0.0.1:8081"), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var cfg Config
			err := config.Load(t.Context(), envconfig.MapLookuper(tc.env), &cfg)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Load: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("Load = %v, want an error naming %s", err, tc.want)
			}
			if err == nil && (cfg.InboundQueue != "wa-inbound" || cfg.OutboundQueue != "wa-outbound") {
				t.Errorf("queues = %q, %q; want the defaults", cfg.InboundQueue, cfg.OutboundQueue)
			}
			if err != nil && strings.Contains(err.Error(), "0123456789abcdef") {
				t.Errorf("the error shows a secret: %v", err)
			}
		})
	}
}
