package config_test

import (
	"context"
	"strings"
	"testing"

	"github.com/sethvargo/go-envconfig"

	"github.com/wapipe/wapipe/internal/config"
	"github.com/wapipe/wapipe/internal/logging"
)

func baseEnv() map[string]string {
	return map[string]string{
		"GOOGLE_CLOUD_PROJECT":   "p",
		"TASKS_LOCATION":         "us-central1",
		"INTERNAL_TASK_BASE_URL": "https://worker.example.run.app",
		"INTERNAL_TASK_TOKEN":    "0123456789abcdef-secret",
		"LOG_HASH_KEY":           "0123456789abcdef0123456789abcdef-log-key",
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
		{"missing log hash key in prod", map[string]string{"LOG_HASH_KEY": ""}, "LOG_HASH_KEY: required"},
		{"missing log hash key in staging", map[string]string{"APP_ENV": "staging", "LOG_HASH_KEY": ""}, "LOG_HASH_KEY: required"},
		{"missing log hash key in dev (dev default)", map[string]string{"APP_ENV": "dev", "LOG_HASH_KEY": ""}, ""},
		{"short log hash key", map[string]string{"LOG_HASH_KEY": "short-log-key"}, "LOG_HASH_KEY: must be at least 32 bytes"},
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
			if err != nil && (strings.Contains(err.Error(), "0123456789abcdef-secret") || strings.Contains(err.Error(), "short-log-key")) {
				t.Fatalf("error shows the secret: %v", err)
			}
			if err == nil && tc.change == nil && (b.AppEnv != "prod" || b.Port != "8080" || b.FirestoreDatabase != "(default)") {
				t.Fatalf("defaults = %+v", b)
			}
		})
	}
}

// TestLogHashKeyKeysRefs: LOG_HASH_KEY is the key of the refs, and dev without it uses the
// documented dev default.
func TestLogHashKeyKeysRefs(t *testing.T) {
	t.Parallel()
	const id = "wamid.x"
	var prod config.Base
	if err := config.Load(context.Background(), envconfig.MapLookuper(baseEnv()), &prod); err != nil {
		t.Fatal(err)
	}
	want, _ := logging.NewHasher(baseEnv()["LOG_HASH_KEY"])
	if got := prod.Hasher().Ref(id); got != want.Ref(id) {
		t.Errorf("Ref = %s, want %s (keyed with LOG_HASH_KEY)", got, want.Ref(id))
	}
	env := baseEnv()
	delete(env, "LOG_HASH_KEY")
	env["APP_ENV"] = "dev"
	var b config.Base
	if err := config.Load(context.Background(), envconfig.MapLookuper(env), &b); err != nil {
		t.Fatal(err)
	}
	if got := b.Hasher().Ref(id); got != logging.DevHasher().Ref(id) {
		t.Errorf("dev without LOG_HASH_KEY: Ref = %s, want the dev default's %s", got, logging.DevHasher().Ref(id))
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

// TestInboundDatabase: the webhook's database is INBOUND_FIRESTORE_DATABASE, else
// FIRESTORE_DATABASE (so dev, tests and older deployments keep one database).
func TestInboundDatabase(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ main, inbound, want string }{
		{"", "", "(default)"},
		{"main", "", "main"},
		{"(default)", "wapipe-inbound", "wapipe-inbound"},
	} {
		env := baseEnv()
		if tc.main != "" {
			env["FIRESTORE_DATABASE"] = tc.main
		}
		if tc.inbound != "" {
			env["INBOUND_FIRESTORE_DATABASE"] = tc.inbound
		}
		var b config.Base
		if err := config.Load(context.Background(), envconfig.MapLookuper(env), &b); err != nil {
			t.Fatal(err)
		}
		if got := b.InboundDatabase(); got != tc.want {
			t.Errorf("FIRESTORE_DATABASE=%q INBOUND_FIRESTORE_DATABASE=%q: InboundDatabase() = %q, want %q", tc.main, tc.inbound, got, tc.want)
		}
	}
}
