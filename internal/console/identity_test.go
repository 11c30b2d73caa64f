package console

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/sethvargo/go-envconfig"

	"github.com/wapipe/wapipe/internal/config"
	"github.com/wapipe/wapipe/internal/identity"
	"github.com/wapipe/wapipe/internal/identity/identitytest"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/testenv"
)

const (
	// testConsoleHost is the console's deterministic run.app name, as Cloud Run routes to it.
	testConsoleHost = "wapipe-console-123456789012.us-central1.run.app"
	// testGcloudAudience stands for the OAuth client of a user's gcloud ID token.
	testGcloudAudience = "32555940559.apps.googleusercontent.com"
	forgedOperator     = "ceo@example.com"
)

// loadConsoleConfig loads the console's configuration from env on top of what Terraform sets.
func loadConsoleConfig(t *testing.T, env map[string]string) *Config {
	t.Helper()
	m := map[string]string{
		"GOOGLE_CLOUD_PROJECT":        "p",
		"TASKS_LOCATION":              "us-central1",
		"INTERNAL_TASK_BASE_URL":      "https://wapipe-worker-123456789012.us-central1.run.app",
		"INTERNAL_TASK_TOKEN":         "0123456789abcdef0123456789abcdef",
		"LOG_HASH_KEY":                "0123456789abcdef0123456789abcdef-log-key",
		"K_SERVICE":                   "wapipe-console",
		"OIDC_VERIFIED_BY_PLATFORM":   "true",
		"CONSOLE_ID_TOKEN_AUDIENCES":  testGcloudAudience,
		"TASKS_SERVICE_ACCOUNT_EMAIL": "wapipe-inv-console@p.iam.gserviceaccount.com",
		"REPLAY_INVOKERS":             testReplayInvokers,
	}
	for k, v := range env {
		m[k] = v
		if v == "" {
			delete(m, k)
		}
	}
	var cfg Config
	if err := config.Load(t.Context(), envconfig.MapLookuper(m), &cfg); err != nil {
		t.Fatalf("load the console's configuration: %v", err)
	}
	return &cfg
}

// realAudit is the audit collection on the Firestore emulator, in the test's own project.
func realAudit(t *testing.T) *store.Audit {
	t.Helper()
	db, err := store.OpenEmulator(t.Context(), testenv.FirestoreHost(t), testenv.ProjectID(t), "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return store.NewAudit(db, store.Options{})
}

// TestOperatorIdentityInProd (issue 21 item 3): with the configuration Terraform deploys (Cloud
// Run's IAM check, IAP optional), the operator is whoever a verified credential names. A forged
// X-Goog-Authenticated-User-Email is refused (401) and never reaches the audit; a valid IAP
// assertion or ID token is accepted and its email is what the audit records, whatever else the
// request claims.
func TestOperatorIdentityInProd(t *testing.T) {
	t.Parallel()
	audit := realAudit(t)
	f := newFixture(t, false)
	idp := identitytest.NewIssuer(t, jose.RS256)
	cfg := loadConsoleConfig(t, map[string]string{"IAP_AUDIENCE": testIAPAudience})
	f.deps.Audit, f.deps.Hosts = audit, cfg.HostPolicy()
	signed := cfg.Authenticator(IdentityKeys{IAPKeysURL: f.iap.KeysURL, IDTokenIssuer: idp.URL})
	// Cloud Run's stripped tokens are Google's: judged by the verifier of Google's issuer.
	google := cfg.Authenticator(IdentityKeys{IAPKeysURL: f.iap.KeysURL})

	iapClaims := identitytest.Claims(identity.IAPIssuer, testIAPAudience, "alice@example.com")
	forgedHeader := []string{"X-Goog-Authenticated-User-Email", "accounts.google.com:" + forgedOperator}
	bearer := func(tok string) []string { return []string{"Authorization", "Bearer " + tok} }
	tests := []struct {
		name    string
		auth    *identity.Authenticator
		headers [][]string
		want    string // the audited operator; "" for 401
	}{
		{"forged user header alone", signed, [][]string{forgedHeader}, ""},
		{"forged header beside a valid IAP assertion", signed, [][]string{forgedHeader, {identity.IAPHeader, f.iap.Sign(t, iapClaims)}}, "alice@example.com"},
		{"IAP assertion, wrong audience", signed, [][]string{{identity.IAPHeader, f.iap.Sign(t, identitytest.With(iapClaims, "aud", "/projects/1/apps/other"))}}, ""},
		{"IAP assertion, wrong issuer", signed, [][]string{{identity.IAPHeader, f.iap.Sign(t, identitytest.With(iapClaims, "iss", "https://evil.example"))}}, ""},
		{"IAP assertion, expired", signed, [][]string{{identity.IAPHeader, f.iap.Sign(t, identitytest.With(iapClaims, "exp", time.Now().Add(-time.Minute).Unix()))}}, ""},
		{"IAP assertion, another key", signed, [][]string{{identity.IAPHeader, identitytest.NewIssuer(t, jose.ES256).Sign(t, iapClaims)}}, ""},
		{"ID token signed for the console's URL", signed, [][]string{forgedHeader, bearer(idp.Sign(t, identitytest.Claims(idp.URL, "https://"+testConsoleHost, "bob@example.com")))}, "bob@example.com"},
		{"ID token for another service", signed, [][]string{bearer(idp.Sign(t, identitytest.Claims(idp.URL, "https://wapipe-api-123456789012.us-central1.run.app", "bob@example.com")))}, ""},
		{"ID token as Cloud Run forwards it", google, [][]string{bearer(identitytest.CloudRunToken(t, identitytest.Claims(identity.GoogleIssuer, testGcloudAudience, "carol@example.com")))}, "carol@example.com"},
		{"stripped token naming another issuer", google, [][]string{bearer(identitytest.CloudRunToken(t, identitytest.Claims("https://evil.example", testGcloudAudience, forgedOperator)))}, ""},
		{"stripped token, unknown audience", google, [][]string{bearer(identitytest.CloudRunToken(t, identitytest.Claims(identity.GoogleIssuer, "https://evil.example", forgedOperator)))}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f.deps.Identity = tc.auth
			h := NewServer(f.deps).Routes()
			id := newRequestID()
			form := url.Values{RequestIDField: {id}, CSRFField: {testCSRF}}
			req := httptest.NewRequest(http.MethodPost, "/failures/dl1/replay", strings.NewReader(form.Encode()))
			req.Host, req.RemoteAddr = testConsoleHost, "169.254.1.1:40000"
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.AddCookie(&http.Cookie{Name: CSRFCookie, Value: testCSRF})
			for _, kv := range tc.headers {
				req.Header.Set(kv[0], kv[1])
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			e, err := audit.Get(context.Background(), id)
			if tc.want == "" {
				if rec.Code != http.StatusUnauthorized || err == nil {
					t.Fatalf("POST = %d, audit entry %+v (%v); want 401 and no entry", rec.Code, e, err)
				}
				return
			}
			if rec.Code != http.StatusSeeOther || err != nil || e.Operator != tc.want {
				t.Fatalf("POST = %d, audit entry %+v (%v); want 303 and operator %s", rec.Code, e, err, tc.want)
			}
		})
	}
	recent, err := audit.Recent(context.Background(), 100)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range recent {
		if strings.Contains(e.Operator, forgedOperator) {
			t.Errorf("the forged operator reached the audit: %+v", e)
		}
	}
}

// TestDevTrustsOnlyLoopback: in dev a request from loopback needs no token (the operator is the
// local one); the same request from any other address is refused.
func TestDevTrustsOnlyLoopback(t *testing.T) {
	t.Parallel()
	cfg := loadConsoleConfig(t, map[string]string{"APP_ENV": "dev", "K_SERVICE": "", "OIDC_VERIFIED_BY_PLATFORM": "",
		"LOG_HASH_KEY": "", "INTERNAL_TASK_BASE_URL": "http://127.0.0.1:8081", "CONSOLE_HOSTS": "example.com"})
	f := newFixture(t, true)
	f.deps.Identity, f.deps.Hosts = cfg.Authenticator(IdentityKeys{}), cfg.HostPolicy()
	f.rebuild()
	for _, tc := range []struct {
		remote string
		want   int
	}{{"127.0.0.1:40000", http.StatusOK}, {"[::1]:40000", http.StatusOK}, {"192.0.2.1:40000", http.StatusUnauthorized}, {"10.0.0.8:40000", http.StatusUnauthorized}} {
		req := httptest.NewRequest(http.MethodGet, "/tenants", nil)
		req.RemoteAddr = tc.remote
		req.Header.Set("X-Goog-Authenticated-User-Email", "accounts.google.com:"+forgedOperator)
		rec := httptest.NewRecorder()
		f.handler.ServeHTTP(rec, req)
		if rec.Code != tc.want {
			t.Errorf("GET from %s = %d, want %d", tc.remote, rec.Code, tc.want)
		}
		if tc.want == http.StatusOK && !strings.Contains(rec.Body.String(), `id="operator">`+OperatorDev+`<`) {
			t.Errorf("GET from %s: the operator shown is not the local one:\n%s", tc.remote, rec.Body.String())
		}
	}
}

// TestHostCheck (issue 22 item 7): the console answers only at its own names. A page of another
// name, DNS-rebound to the console's address, gets 421; Cloud Run's probes (/healthz) are
// answered whatever the name.
func TestHostCheck(t *testing.T) {
	t.Parallel()
	f := newFixture(t, true)
	dev := loadConsoleConfig(t, map[string]string{"APP_ENV": "dev", "K_SERVICE": "", "OIDC_VERIFIED_BY_PLATFORM": "",
		"LOG_HASH_KEY": "", "INTERNAL_TASK_BASE_URL": "http://127.0.0.1:8081"})
	f.deps.Identity, f.deps.Hosts = dev.Authenticator(IdentityKeys{}), dev.HostPolicy()
	srv := httptest.NewServer(NewServer(f.deps).Routes())
	t.Cleanup(srv.Close)
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	get := func(t *testing.T, host, path string) int {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = host
		res, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	for _, tc := range []struct {
		host, path string
		want       int
	}{
		{fmt.Sprintf("127.0.0.1:%d", port), "/", http.StatusOK},
		{fmt.Sprintf("localhost:%d", port), "/tenants", http.StatusOK},
		{fmt.Sprintf("LOCALHOST:%d", port), "/tenants", http.StatusOK},
		{fmt.Sprintf("rebind.evil.example:%d", port), "/tenants", http.StatusMisdirectedRequest},
		{fmt.Sprintf("rebind.evil.example:%d", port), "/static/console.css", http.StatusMisdirectedRequest},
		{"localhost:1", "/tenants", http.StatusMisdirectedRequest},
		{"localhost", "/tenants", http.StatusMisdirectedRequest},
		{fmt.Sprintf("rebind.evil.example:%d", port), "/healthz", http.StatusOK},
	} {
		if got := get(t, tc.host, tc.path); got != tc.want {
			t.Errorf("dev: GET %s with Host %s = %d, want %d", tc.path, tc.host, got, tc.want)
		}
	}

	// Outside dev: the service's run.app names and CONSOLE_HOSTS, never loopback.
	prod := HostPolicy{Names: []string{"console.example.com"}, CloudRunService: "wapipe-console"}
	for host, want := range map[string]bool{
		testConsoleHost:                               true,
		"wapipe-console-x7k2abcdq-uc.a.run.app":       true,
		"console.example.com":                         true,
		"Console.Example.com":                         true,
		"wapipe-console-123.evil.example":             false,
		"wapipe-api-123456789012.us-central1.run.app": false,
		"evil-wapipe-console-1.run.app":               false,
		fmt.Sprintf("127.0.0.1:%d", port):             false,
		"console.example.com.evil.example":            false,
	} {
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.Host = host
		if got := prod.Allows(req); got != want {
			t.Errorf("prod: Host %s allowed = %v, want %v", host, got, want)
		}
	}
}
