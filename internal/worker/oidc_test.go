package worker

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/sethvargo/go-envconfig"

	"github.com/wapipe/wapipe/internal/config"
	"github.com/wapipe/wapipe/internal/identity"
	"github.com/wapipe/wapipe/internal/identity/identitytest"
	"github.com/wapipe/wapipe/tasks"
)

func strippedToken(t *testing.T, claims map[string]any) string {
	return identitytest.JWT(t, claims, "")
}

const (
	testWorkerURL = "https://wapipe-worker-123456789012.us-central1.run.app"
	testInvoker   = "wapipe-tasks-invoker@p.iam.gserviceaccount.com"
)

func googleClaims(aud string) map[string]any {
	return identitytest.Claims(identity.GoogleIssuer, aud, testInvoker)
}

// loadWorkerConfig loads the worker's configuration as Terraform deploys it (see
// terraform/TestWorkerTrustsCloudRunsIAMCheck), with OIDC_VERIFIED_BY_PLATFORM as given. Its
// ROUTE_CALLERS admits testInvoker on every route: these tests are about the token, not the
// table (auth_test.go).
func loadWorkerConfig(t *testing.T, platformVerified string) *Config {
	t.Helper()
	everyRoute, err := json.Marshal(tasks.CallersOf(func(tasks.Caller, tasks.Via) string { return testInvoker }))
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{
		"ROUTE_CALLERS":               string(everyRoute),
		"APP_ENV":                     "prod",
		"GOOGLE_CLOUD_PROJECT":        "p",
		"TASKS_LOCATION":              "us-central1",
		"INTERNAL_TASK_BASE_URL":      testWorkerURL,
		"INTERNAL_TASK_TOKEN":         "0123456789abcdef0123456789abcdef",
		"LOG_HASH_KEY":                "0123456789abcdef0123456789abcdef-log-key",
		"TASKS_SERVICE_ACCOUNT_EMAIL": testInvoker,
		"WHATSAPP_ACCESS_TOKEN":       "EAAG-test-token",
		"KMS_KEY_NAME":                "projects/p/locations/us-central1/keyRings/wapipe/cryptoKeys/tenant-secrets",
	}
	if platformVerified != "" {
		env["OIDC_VERIFIED_BY_PLATFORM"] = platformVerified
	}
	var cfg Config
	if err := config.Load(context.Background(), envconfig.MapLookuper(env), &cfg); err != nil {
		t.Fatalf("load config: %v", err)
	}
	return &cfg
}

// authStatus sends a GET /internal/health with the internal token and the bearer token through the
// worker's routes. Health is not configured, so 404 means the request passed authentication.
func authStatus(t *testing.T, cfg *Config, bearer string) int {
	t.Helper()
	srv := NewServer(cfg, Deps{Verifier: cfg.OIDCVerifier()})
	r := httptest.NewRequest(http.MethodGet, "/internal/health", nil)
	r.Header.Set(tasks.HeaderInternalToken, cfg.InternalTaskToken)
	r.Header.Set("Authorization", "Bearer "+bearer)
	w := httptest.NewRecorder()
	srv.Routes().ServeHTTP(w, r)
	return w.Code
}

// TestCloudRunStrippedToken (security item 1): with the setting Terraform gives the IAM-only
// worker, a task whose OIDC token Cloud Run verified and forwarded as header.claims.
// SIGNATURE_REMOVED_BY_GOOGLE is accepted on its claims; bad claims are still refused.
func TestCloudRunStrippedToken(t *testing.T) {
	t.Parallel()
	cfg := loadWorkerConfig(t, "true")
	with := func(k string, v any) map[string]any {
		c := googleClaims(testWorkerURL)
		c[k] = v
		return c
	}
	tests := []struct {
		name   string
		claims map[string]any
		want   int
	}{
		{"as Cloud Run forwards it", googleClaims(testWorkerURL), http.StatusNotFound},
		{"another service account", with("email", "someone@p.iam.gserviceaccount.com"), http.StatusUnauthorized},
		{"wrong audience", with("aud", "https://elsewhere.run.app"), http.StatusUnauthorized},
		{"expired", with("exp", time.Now().Add(-time.Minute).Unix()), http.StatusUnauthorized},
		{"not issued by Google", with("iss", "https://evil.example"), http.StatusUnauthorized},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := authStatus(t, cfg, identitytest.CloudRunToken(t, tc.claims)); got != tc.want {
				t.Fatalf("status = %d, want %d", got, tc.want)
			}
		})
	}
}

// TestStrippedTokenRefusedWithoutPlatform (security item 2): the same token, reaching a worker
// that is not behind Cloud Run's IAM check (the setting unset or false), is refused: without the
// platform's check an unsigned token proves nothing, whoever knows the internal token.
func TestStrippedTokenRefusedWithoutPlatform(t *testing.T) {
	t.Parallel()
	for _, setting := range []string{"", "false"} {
		cfg := loadWorkerConfig(t, setting)
		for _, tok := range []string{
			identitytest.CloudRunToken(t, googleClaims(testWorkerURL)),
			strippedToken(t, googleClaims(testWorkerURL)),
		} {
			if got := authStatus(t, cfg, tok); got != http.StatusUnauthorized {
				t.Errorf("OIDC_VERIFIED_BY_PLATFORM=%q: status = %d, want 401", setting, got)
			}
		}
	}
}

// TestServerlessAuthorizationIsTheVerifiedToken: when a caller sends X-Serverless-Authorization,
// that is the token Cloud Run's IAM check verified, and Authorization passes through unchecked. A
// forged "stripped" token for the invoker in Authorization beside another account's verified
// token in X-Serverless-Authorization is refused; the verified header alone is judged on its own.
func TestServerlessAuthorizationIsTheVerifiedToken(t *testing.T) {
	t.Parallel()
	cfg := loadWorkerConfig(t, "true")
	other := identitytest.Claims(identity.GoogleIssuer, testWorkerURL, "someone-else@p.iam.gserviceaccount.com")
	for _, tc := range []struct {
		name                  string
		serverless, authorize string
		want                  int
	}{
		{"forged Authorization beside another account's verified token", identitytest.CloudRunToken(t, other),
			identitytest.CloudRunToken(t, googleClaims(testWorkerURL)), http.StatusUnauthorized},
		{"the invoker's verified token in X-Serverless-Authorization", identitytest.CloudRunToken(t, googleClaims(testWorkerURL)),
			"", http.StatusNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := NewServer(cfg, Deps{Verifier: cfg.OIDCVerifier()})
			r := httptest.NewRequest(http.MethodGet, "/internal/health", nil)
			r.Header.Set(tasks.HeaderInternalToken, cfg.InternalTaskToken)
			r.Header.Set("X-Serverless-Authorization", "Bearer "+tc.serverless)
			if tc.authorize != "" {
				r.Header.Set("Authorization", "Bearer "+tc.authorize)
			}
			w := httptest.NewRecorder()
			srv.Routes().ServeHTTP(w, r)
			if w.Code != tc.want {
				t.Errorf("answered %d, want %d", w.Code, tc.want)
			}
		})
	}
}
