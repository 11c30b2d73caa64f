package console

import (
	"strings"
	"testing"

	"github.com/sethvargo/go-envconfig"

	"github.com/wapipe/wapipe/internal/config"
)

func TestConfig(t *testing.T) {
	t.Parallel()
	base := map[string]string{
		"GOOGLE_CLOUD_PROJECT":   "p",
		"TASKS_LOCATION":         "us-central1",
		"INTERNAL_TASK_BASE_URL": "https://wapipe-worker-1.us-central1.run.app",
		"INTERNAL_TASK_TOKEN":    "0123456789abcdef0123456789abcdef",
		"LOG_HASH_KEY":           "0123456789abcdef0123456789abcdef-log-key",
	}
	with := func(k, v string) map[string]string {
		m := map[string]string{}
		for a, b := range base {
			m[a] = b
		}
		m[k] = v
		if v == "" {
			delete(m, k) // unset
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
