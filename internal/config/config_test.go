package config_test

import (
	"context"
	"strings"
	"testing"

	"github.com/sethvargo/go-envconfig"

	"github.com/wapipe/wapipe/internal/config"
)

func baseEnv() map[string]string {
	return map[string]string{
		"GOOGLE_CLOUD_PROJECT":   "p",
		"TASKS_LOCATION":         "us-central1",
		"INTERNAL_TASK_BASE_URL": "https://worker.example.run.app",
		"INTERNAL_TASK_TOKEN":    "0123456789abcdef-secret",
	}
}

func TestLoadBase(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		change  map[string]string
		wantErr string // substring; "" means no error
	}{
		{"defaults", nil, ""},
		{"missing project", map[string]string{"GOOGLE_CLOUD_PROJECT": ""}, "GOOGLE_CLOUD_PROJECT"},
		{"missing token", map[string]string{"INTERNAL_TASK_TOKEN": ""}, "INTERNAL_TASK_TOKEN"},
		{"bad app env", map[string]string{"APP_ENV": "production"}, "APP_ENV"},
		{"http base url in prod", map[string]string{"INTERNAL_TASK_BASE_URL": "http://worker"}, "must be https when APP_ENV is prod"},
		{"http base url in staging", map[string]string{"APP_ENV": "staging", "INTERNAL_TASK_BASE_URL": "http://worker"}, "must be https when APP_ENV is staging"},
		{"http base url in dev", map[string]string{"APP_ENV": "dev", "INTERNAL_TASK_BASE_URL": "http://127.0.0.1:8081"}, ""},
		{"relative base url", map[string]string{"INTERNAL_TASK_BASE_URL": "/worker"}, "INTERNAL_TASK_BASE_URL"},
		{"short token in prod", map[string]string{"INTERNAL_TASK_TOKEN": "short"}, "INTERNAL_TASK_TOKEN"},
		{"short token in dev", map[string]string{"APP_ENV": "dev", "INTERNAL_TASK_TOKEN": "short"}, ""},
		{"bad exporter", map[string]string{"TRACE_EXPORTER": "jaeger"}, "TRACE_EXPORTER"},
		{"bad log level", map[string]string{"LOG_LEVEL": "VERBOSE"}, "LOG_LEVEL"},
		{"warning log level", map[string]string{"LOG_LEVEL": "warning"}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			env := baseEnv()
			for k, v := range tc.change {
				if v == "" {
					delete(env, k)
				} else {
					env[k] = v
				}
			}
			var b config.Base
			err := config.Load(context.Background(), envconfig.MapLookuper(env), &b)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("Load: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("Load error = %v, want one naming %q", err, tc.wantErr)
			}
			if err != nil && strings.Contains(err.Error(), "0123456789abcdef-secret") {
				t.Fatalf("error shows the secret: %v", err)
			}
			if err == nil && tc.change == nil && (b.AppEnv != "prod" || b.Port != "8080" || b.FirestoreDatabase != "(default)") {
				t.Fatalf("defaults = %+v", b)
			}
		})
	}
}

// TestTraceSampleRatioZero checks that TRACE_SAMPLE_RATIO=0 reaches telemetry as 0 (sample
// nothing), not as "unset".
func TestTraceSampleRatioZero(t *testing.T) {
	t.Parallel()
	env := baseEnv()
	env["TRACE_SAMPLE_RATIO"] = "0"
	var b config.Base
	if err := config.Load(context.Background(), envconfig.MapLookuper(env), &b); err != nil {
		t.Fatal(err)
	}
	if r := b.Telemetry("test", nil).SampleRatio; r == nil || *r != 0 {
		t.Errorf("SampleRatio = %v, want 0", r)
	}
}
