package api_test

import (
	"context"
	"strings"
	"testing"

	"github.com/sethvargo/go-envconfig"

	"github.com/wapipe/wapipe/internal/api"
	"github.com/wapipe/wapipe/internal/config"
	"github.com/wapipe/wapipe/internal/graph"
)

// loadDev loads an api Config in dev from the variables every service needs and extra.
func loadDev(extra map[string]string) (api.Config, error) {
	env := map[string]string{"APP_ENV": "dev", "GOOGLE_CLOUD_PROJECT": "p", "TASKS_LOCATION": "us-central1",
		"INTERNAL_TASK_BASE_URL": "http://127.0.0.1:1", "INTERNAL_TASK_TOKEN": "0123456789abcdef"}
	for k, v := range extra {
		env[k] = v
	}
	var cfg api.Config
	err := config.Load(context.Background(), envconfig.MapLookuper(env), &cfg)
	return cfg, err
}

// TestRateLimitConfig: the rate limits' defaults, an operator's values, and one clear line naming
// the variable for a value that is not a positive number.
func TestRateLimitConfig(t *testing.T) {
	t.Parallel()
	type limits struct {
		AddressRate  float64
		AddressBurst int
		KeyRate      float64
		KeyBurst     int
	}
	tests := []struct {
		name    string
		env     map[string]string
		want    limits
		wantErr string
	}{
		// A business's burst of 1,000 sends passes its key (issue 35 item 7).
		{"defaults", nil, limits{20, 40, 50, 1000}, ""},
		{"set", map[string]string{"API_RATE_PER_ADDRESS": "2.5", "API_BURST_PER_ADDRESS": "5", "API_RATE_PER_KEY": "10", "API_BURST_PER_KEY": "20"}, limits{2.5, 5, 10, 20}, ""},
		{"zero is the default", map[string]string{"API_RATE_PER_KEY": "0"}, limits{20, 40, 50, 1000}, ""},
		{"negative rate", map[string]string{"API_RATE_PER_ADDRESS": "-1"}, limits{}, "API_RATE_PER_ADDRESS"},
		{"negative burst", map[string]string{"API_BURST_PER_KEY": "-5"}, limits{}, "API_BURST_PER_KEY"},
		{"not a number", map[string]string{"API_BURST_PER_ADDRESS": "lots"}, limits{}, "API_BURST_PER_ADDRESS"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := loadDev(tc.env)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Load = %v, want an error naming %s", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if got := (limits{cfg.AddressRate, cfg.AddressBurst, cfg.KeyRate, cfg.KeyBurst}); got != tc.want {
				t.Errorf("limits %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestGraphURLDefaults: unset, the Graph API and dialog URLs are built from graph.Version (one
// constant for the version); set, the operator's values stay.
func TestGraphURLDefaults(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name                string
		env                 map[string]string
		wantGraph, wantDlog string
	}{
		{"unset", nil, "https://graph.facebook.com/" + graph.Version, "https://www.facebook.com/" + graph.Version + "/dialog/oauth"},
		{"set", map[string]string{"GRAPH_API_BASE_URL": "https://graph.example/v1", "FACEBOOK_DIALOG_URL": "https://www.example/v1/dialog/oauth"},
			"https://graph.example/v1", "https://www.example/v1/dialog/oauth"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := loadDev(tc.env)
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if cfg.GraphAPIBaseURL != tc.wantGraph || cfg.FacebookDialogURL != tc.wantDlog {
				t.Errorf("GraphAPIBaseURL %q, FacebookDialogURL %q; want %q, %q", cfg.GraphAPIBaseURL, cfg.FacebookDialogURL, tc.wantGraph, tc.wantDlog)
			}
		})
	}
}
