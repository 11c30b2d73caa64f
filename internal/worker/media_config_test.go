package worker_test

import (
	"context"
	"strings"
	"testing"

	"github.com/sethvargo/go-envconfig"

	"github.com/wapipe/wapipe/internal/config"
	"github.com/wapipe/wapipe/internal/media"
	"github.com/wapipe/wapipe/internal/testenv"
	"github.com/wapipe/wapipe/internal/worker"
)

// TestMediaInflightBytesConfig: MEDIA_INFLIGHT_BYTES defaults to 96 MiB and must hold one file at
// MEDIA_MAX_BYTES charged three times over.
func TestMediaInflightBytesConfig(t *testing.T) {
	t.Parallel()
	base := map[string]string{
		"APP_ENV": "dev", "GOOGLE_CLOUD_PROJECT": "p", "TASKS_LOCATION": "us-central1",
		"INTERNAL_TASK_BASE_URL": "http://worker", "INTERNAL_TASK_TOKEN": "0123456789abcdef",
		"LOG_HASH_KEY": "0123456789abcdef0123456789abcdef-log-key",
	}
	tests := []struct {
		name    string
		change  map[string]string
		want    int64
		wantErr bool
	}{
		{"default", nil, media.DefaultInflightBytes, false},
		{"three files at the cap", map[string]string{"MEDIA_INFLIGHT_BYTES": "47185920"}, 45 << 20, false},
		{"under one file at the cap", map[string]string{"MEDIA_INFLIGHT_BYTES": "47185919"}, 0, true},
		{"under one file at a raised cap", map[string]string{"MEDIA_MAX_BYTES": "20971520", "MEDIA_INFLIGHT_BYTES": "50331648"}, 0, true},
		{"a smaller cap, a smaller budget", map[string]string{"MEDIA_MAX_BYTES": "1048576", "MEDIA_INFLIGHT_BYTES": "3145728"}, 3 << 20, false},
		{"negative", map[string]string{"MEDIA_INFLIGHT_BYTES": "-1"}, 0, true},
		{"not a number", map[string]string{"MEDIA_INFLIGHT_BYTES": "96MiB"}, 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var cfg worker.Config
			err := config.Load(context.Background(), envconfig.MapLookuper(testenv.Env(base, tc.change)), &cfg)
			if tc.wantErr {
				if err == nil || !strings.Contains(err.Error(), "MEDIA_INFLIGHT_BYTES") {
					t.Fatalf("error %v, want one naming MEDIA_INFLIGHT_BYTES", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.MediaInflightBytes != tc.want {
				t.Errorf("MEDIA_INFLIGHT_BYTES = %d, want %d", cfg.MediaInflightBytes, tc.want)
			}
		})
	}
}
