package worker_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/sethvargo/go-envconfig"

	"github.com/wapipe/wapipe/internal/config"
	"github.com/wapipe/wapipe/internal/testenv"
	"github.com/wapipe/wapipe/internal/worker"
	"github.com/wapipe/wapipe/tasks"
)

// routeCallersJSON is ROUTE_CALLERS written from the route table (one account per caller and
// way in), changed by change when not nil.
func routeCallersJSON(t *testing.T, change func(tasks.RouteCallers)) string {
	t.Helper()
	rc := tasks.CallersOf(func(c tasks.Caller, via tasks.Via) string {
		return "wapipe-" + string(c) + "-" + string(via) + "@p.iam.gserviceaccount.com"
	})
	if change != nil {
		change(rc)
	}
	b, err := json.Marshal(rc)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestConfig(t *testing.T) {
	t.Parallel()
	base := map[string]string{
		"GOOGLE_CLOUD_PROJECT": "p", "TASKS_LOCATION": "us-central1",
		"INTERNAL_TASK_BASE_URL": "https://worker.example", "INTERNAL_TASK_TOKEN": "0123456789abcdef",
		"LOG_HASH_KEY":          "0123456789abcdef0123456789abcdef-log-key",
		"WHATSAPP_ACCESS_TOKEN": "EAAG-secret-token",
		"KMS_KEY_NAME":          "projects/p/locations/global/keyRings/wapipe/cryptoKeys/tenant-secrets",
		// As Terraform writes them: the worker's own invoker, and the route table's callers.
		"TASKS_SERVICE_ACCOUNT_EMAIL": "wapipe-invoker@p.iam.gserviceaccount.com",
		"ROUTE_CALLERS":               routeCallersJSON(t, nil),
	}
	tests := []struct {
		name    string
		change  map[string]string
		wantErr string
	}{
		{"defaults", nil, ""},
		{"no default access token (tenants only)", map[string]string{"WHATSAPP_ACCESS_TOKEN": ""}, ""},
		{"empty default access token", map[string]string{"WHATSAPP_ACCESS_TOKEN": "<empty>"}, ""},
		{"missing KMS key outside dev", map[string]string{"KMS_KEY_NAME": ""}, "KMS_KEY_NAME"},
		{"KMS key version instead of key", map[string]string{"KMS_KEY_NAME": "projects/p/locations/global/keyRings/r/cryptoKeys/k/cryptoKeyVersions/1"}, "KMS_KEY_NAME"},
		{"no KMS key in dev (development key)", map[string]string{"KMS_KEY_NAME": "", "APP_ENV": "dev", "INTERNAL_TASK_BASE_URL": "http://worker"}, ""},
		{"outbound queue not in queues.yaml", map[string]string{"OUTBOUND_TASK_QUEUE_NAME": "wa-outbound-staging"}, "OUTBOUND_TASK_QUEUE_NAME"},
		{"graph over http in prod", map[string]string{"GRAPH_API_BASE_URL": "http://127.0.0.1:8090/v24.0"}, "GRAPH_API_BASE_URL"},
		{"graph over http in dev", map[string]string{"APP_ENV": "dev", "GRAPH_API_BASE_URL": "http://127.0.0.1:8090/v24.0"}, ""},
		{"no KMS key in prod", map[string]string{"KMS_KEY_NAME": ""}, "KMS_KEY_NAME"},
		{"KMS key version instead of key", map[string]string{"KMS_KEY_NAME": "projects/p/locations/l/keyRings/r/cryptoKeys/k/cryptoKeyVersions/1"}, "KMS_KEY_NAME"},
		{"no KMS key in dev", map[string]string{"APP_ENV": "dev", "KMS_KEY_NAME": ""}, ""},
		{"graph not a URL", map[string]string{"GRAPH_API_BASE_URL": "graph"}, "GRAPH_API_BASE_URL"},
		{"worker over http in prod", map[string]string{"INTERNAL_TASK_BASE_URL": "http://worker"}, "INTERNAL_TASK_BASE_URL"},
		{"media cap of 20 MiB", map[string]string{"MEDIA_MAX_BYTES": "20971520"}, ""},
		{"media cap over 20 MiB", map[string]string{"MEDIA_MAX_BYTES": "20971521"}, "MEDIA_MAX_BYTES"},
		{"negative media cap", map[string]string{"MEDIA_MAX_BYTES": "-1"}, "MEDIA_MAX_BYTES"},
		{"media cap not a number", map[string]string{"MEDIA_MAX_BYTES": "15MiB"}, "MEDIA_MAX_BYTES"},
		// Who may call which route (issue 35 item 6).
		{"no invoker in prod", map[string]string{"TASKS_SERVICE_ACCOUNT_EMAIL": ""}, "TASKS_SERVICE_ACCOUNT_EMAIL: required outside dev"},
		{"no ROUTE_CALLERS in prod", map[string]string{"ROUTE_CALLERS": ""}, "ROUTE_CALLERS: required when APP_ENV is prod"},
		{"no ROUTE_CALLERS in staging", map[string]string{"APP_ENV": "staging", "ROUTE_CALLERS": ""}, "ROUTE_CALLERS: required when APP_ENV is staging"},
		{"ROUTE_CALLERS without the sweep", map[string]string{"ROUTE_CALLERS": routeCallersJSON(t, func(rc tasks.RouteCallers) { delete(rc, tasks.SweepPath) })},
			"ROUTE_CALLERS: must name the callers of every worker route outside dev; missing /internal/sweep"},
		{"ROUTE_CALLERS with an unknown route", map[string]string{"ROUTE_CALLERS": routeCallersJSON(t, func(rc tasks.RouteCallers) { rc["/internal/process_all"] = nil })},
			`ROUTE_CALLERS: "/internal/process_all" is not a worker route`},
		{"ROUTE_CALLERS with a bad email", map[string]string{"ROUTE_CALLERS": routeCallersJSON(t, func(rc tasks.RouteCallers) { rc[tasks.ProcessInboundPath] = []string{"webhook"} })},
			`ROUTE_CALLERS: /internal/process_inbound: "webhook" is not a service account email`},
		{"ROUTE_CALLERS not JSON", map[string]string{"ROUTE_CALLERS": "process_inbound=webhook"}, "ROUTE_CALLERS: want a JSON object"},
		{"ROUTE_CALLERS beside INTERNAL_CALLERS", map[string]string{"INTERNAL_CALLERS": "wapipe-api@p.iam.gserviceaccount.com"}, "INTERNAL_CALLERS: replaced by ROUTE_CALLERS"},
		{"dev without either", map[string]string{"APP_ENV": "dev", "TASKS_SERVICE_ACCOUNT_EMAIL": "", "ROUTE_CALLERS": "", "INTERNAL_TASK_BASE_URL": "http://worker"}, ""},
		{"dev with INTERNAL_CALLERS alone", map[string]string{"APP_ENV": "dev", "ROUTE_CALLERS": "", "INTERNAL_CALLERS": "wapipe-api@p.iam.gserviceaccount.com"}, ""},
		{"dev with part of ROUTE_CALLERS", map[string]string{"APP_ENV": "dev", "ROUTE_CALLERS": `{"/internal/sweep":[]}`}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			env := testenv.Env(base, tc.change)
			var cfg worker.Config
			err := config.Load(context.Background(), envconfig.MapLookuper(env), &cfg)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one naming %s", err, tc.wantErr)
				}
				if strings.Contains(err.Error(), "EAAG-secret-token") {
					t.Fatalf("the error shows a secret: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.change == nil && (cfg.GraphAPIBaseURL != worker.DefaultGraphAPIBaseURL || cfg.OutboundQueue != "wa-outbound" ||
				cfg.MediaMaxBytes != 15<<20) {
				t.Errorf("defaults = %+v", cfg)
			}
		})
	}
}
