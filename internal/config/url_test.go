package config_test

import (
	"testing"

	"github.com/wapipe/wapipe/internal/config"
)

// TestCheckServiceURL: the one check of every service variable holding a URL, with the lines
// operators read (the variable first, then what is wrong).
func TestCheckServiceURL(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, env, raw, want string
	}{
		{"https in prod", config.EnvProd, "https://graph.facebook.com/v24.0", ""},
		{"http in dev", config.EnvDev, "http://127.0.0.1:8090/v24.0", ""},
		{"http in prod", config.EnvProd, "http://worker", "X_URL: must be https when APP_ENV is prod"},
		{"http in staging", config.EnvStaging, "http://worker", "X_URL: must be https when APP_ENV is staging"},
		{"no host", config.EnvDev, "graph", "X_URL: must be an absolute http(s) URL"},
		{"other scheme", config.EnvDev, "ftp://host/x", "X_URL: must be an absolute http(s) URL"},
		{"empty", config.EnvDev, "", "X_URL: must be an absolute http(s) URL"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := config.Base{AppEnv: tc.env}
			got := ""
			if err := b.CheckServiceURL("X_URL", tc.raw); err != nil {
				got = err.Error()
			}
			if got != tc.want {
				t.Errorf("CheckServiceURL(%q) = %q, want %q", tc.raw, got, tc.want)
			}
		})
	}
}

// TestCheckHTTPURL: the form alone, whatever APP_ENV says.
func TestCheckHTTPURL(t *testing.T) {
	t.Parallel()
	for raw, want := range map[string]string{
		"http://127.0.0.1:9/x": "",
		"https://example.com":  "",
		"example.com":          "LLM_BASE_URL: must be an absolute http(s) URL",
	} {
		got := ""
		if err := config.CheckHTTPURL("LLM_BASE_URL", raw); err != nil {
			got = err.Error()
		}
		if got != want {
			t.Errorf("CheckHTTPURL(%q) = %q, want %q", raw, got, want)
		}
	}
}
