package worker

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/sethvargo/go-envconfig"

	"github.com/wapipe/wapipe/internal/config"
	"github.com/wapipe/wapipe/tasks"
)

// jwtWithSignature returns a JWT with the given claims and third part.
func jwtWithSignature(t *testing.T, claims map[string]any, signature string) string {
	t.Helper()
	b, err := json.Marshal(claims)
	if err != nil {
		t.Fatal(err)
	}
	return base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"RS256","kid":"f5f4bf46e52b31d9b6249f7309ad0338400680cd","typ":"JWT"}`)) + "." +
		base64.RawURLEncoding.EncodeToString(b) + "." + signature
}

func strippedToken(t *testing.T, claims map[string]any) string {
	return jwtWithSignature(t, claims, "")
}

// cloudRunToken is a task's OIDC token exactly as Cloud Run hands it to a container after its own
// IAM check: header and claims intact, the signature replaced by SIGNATURE_REMOVED_BY_GOOGLE.
func cloudRunToken(t *testing.T, claims map[string]any) string {
	return jwtWithSignature(t, claims, "SIGNATURE_REMOVED_BY_GOOGLE")
}

const (
	testWorkerURL = "https://wapipe-worker-123456789012.us-central1.run.app"
	testInvoker   = "wapipe-tasks-invoker@p.iam.gserviceaccount.com"
)

func googleClaims(aud string) map[string]any {
	now := time.Now()
	return map[string]any{"iss": GoogleIssuer, "aud": aud, "azp": "112233445566778899000",
		"iat": now.Add(-time.Minute).Unix(), "exp": now.Add(time.Hour).Unix(),
		"email": testInvoker, "email_verified": true, "sub": "112233445566778899000"}
}

// loadWorkerConfig loads the worker's configuration as Terraform deploys it (see
// terraform/TestWorkerTrustsCloudRunsIAMCheck), with OIDC_VERIFIED_BY_PLATFORM as given.
func loadWorkerConfig(t *testing.T, platformVerified string) *Config {
	t.Helper()
	env := map[string]string{
		"APP_ENV":                     "prod",
		"GOOGLE_CLOUD_PROJECT":        "p",
		"TASKS_LOCATION":              "us-central1",
		"INTERNAL_TASK_BASE_URL":      testWorkerURL,
		"INTERNAL_TASK_TOKEN":         "0123456789abcdef0123456789abcdef",
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
			if got := authStatus(t, cfg, cloudRunToken(t, tc.claims)); got != tc.want {
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
			cloudRunToken(t, googleClaims(testWorkerURL)),
			strippedToken(t, googleClaims(testWorkerURL)),
		} {
			if got := authStatus(t, cfg, tok); got != http.StatusUnauthorized {
				t.Errorf("OIDC_VERIFIED_BY_PLATFORM=%q: status = %d, want 401", setting, got)
			}
		}
	}
}

// TestForgedSignatureRefused: a token with a signature that is not Google's is checked against
// Google's keys even where the platform verifies tokens, so it never passes on its claims alone.
func TestForgedSignatureRefused(t *testing.T) {
	t.Parallel()
	v := NewOIDCVerifier("http://127.0.0.1:1", testWorkerURL, true)
	if _, err := v.Verify(context.Background(), jwtWithSignature(t, googleClaims(testWorkerURL), "Zm9yZ2Vk")); err == nil {
		t.Fatal("a forged signature was accepted")
	}
}

// TestStrippedSignature: a Google token whose signature Cloud Run removed after its IAM check is
// judged on its claims; anywhere else a token without a signature is refused.
func TestStrippedSignature(t *testing.T) {
	t.Parallel()
	const aud = "https://wapipe-worker-123.us-central1.run.app"
	good := map[string]any{"iss": GoogleIssuer, "aud": aud, "exp": time.Now().Add(time.Hour).Unix(),
		"email": "invoker@p.iam.gserviceaccount.com", "email_verified": true}
	with := func(k string, v any) map[string]any {
		c := map[string]any{}
		for kk, vv := range good {
			c[kk] = vv
		}
		c[k] = v
		return c
	}
	tests := []struct {
		name    string
		issuer  string
		claims  map[string]any
		wantErr bool
	}{
		{"google, good claims", GoogleIssuer, good, false},
		{"google, issuer without scheme", GoogleIssuer, with("iss", "accounts.google.com"), false},
		{"google, audience list", GoogleIssuer, with("aud", []string{"x", aud}), false},
		{"google, wrong audience", GoogleIssuer, with("aud", "https://elsewhere"), true},
		{"google, expired", GoogleIssuer, with("exp", time.Now().Add(-time.Minute).Unix()), true},
		{"google, other issuer", GoogleIssuer, with("iss", "https://evil.example"), true},
		{"google, unverified email", GoogleIssuer, with("email_verified", false), true},
		{"emulator issuer never skips the signature", "http://127.0.0.1:1", good, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			v := NewOIDCVerifier(tc.issuer, aud, true)
			email, err := v.Verify(context.Background(), strippedToken(t, tc.claims))
			if (err != nil) != tc.wantErr {
				t.Fatalf("Verify = %q, %v; want error %v", email, err, tc.wantErr)
			}
			if err == nil && email != "invoker@p.iam.gserviceaccount.com" {
				t.Fatalf("email %q", email)
			}
		})
	}
}
