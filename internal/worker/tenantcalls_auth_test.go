package worker

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/wapipe/wapipe/internal/identity"
	"github.com/wapipe/wapipe/internal/identity/identitytest"
	"github.com/wapipe/wapipe/tasks"
)

// TestTenantRoutesAdmitOnlyInternalCallers: the tenant routes, which use a tenant's access token,
// admit the internal token with an ID token of an account in INTERNAL_CALLERS (the api's, the
// console's), nothing else; and those accounts cannot run tasks or read health, which remain
// Cloud Tasks' alone.
func TestTenantRoutesAdmitOnlyInternalCallers(t *testing.T) {
	t.Parallel()
	const apiAccount, stranger = "wapipe-api@p.iam.gserviceaccount.com", "someone@p.iam.gserviceaccount.com"
	cfg := loadWorkerConfig(t, "true")
	// INTERNAL_CALLERS is read where ROUTE_CALLERS is not set (dev); ROUTE_CALLERS replaces it.
	cfg.RouteCallers, cfg.InternalCallers = nil, []string{apiAccount}
	srv := NewServer(cfg, Deps{Verifier: cfg.OIDCVerifier()})
	bearer := func(email string) string {
		return strippedToken(t, identitytest.Claims(identity.GoogleIssuer, testWorkerURL, email))
	}
	tests := []struct {
		name, method, path, internalToken, bearer string
		want                                      int
	}{
		// 404: past authentication, to a worker that serves no media.
		{"api account", http.MethodGet, "/internal/tenants/acme/media/123", cfg.InternalTaskToken, bearer(apiAccount), http.StatusNotFound},
		{"tasks account", http.MethodGet, "/internal/tenants/acme/media/123", cfg.InternalTaskToken, bearer(testInvoker), http.StatusUnauthorized},
		{"another account", http.MethodGet, "/internal/tenants/acme/media/123", cfg.InternalTaskToken, bearer(stranger), http.StatusUnauthorized},
		{"no ID token", http.MethodGet, "/internal/tenants/acme/media/123", cfg.InternalTaskToken, "", http.StatusUnauthorized},
		{"no internal token", http.MethodGet, "/internal/tenants/acme/media/123", "", bearer(apiAccount), http.StatusUnauthorized},
		{"api account on health", http.MethodGet, "/internal/health", cfg.InternalTaskToken, bearer(apiAccount), http.StatusUnauthorized},
		{"api account on a task route", http.MethodPost, tasks.ProcessSendPath, cfg.InternalTaskToken, bearer(apiAccount), http.StatusUnauthorized},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := httptest.NewRequest(tc.method, tc.path, nil)
			if tc.internalToken != "" {
				r.Header.Set(tasks.HeaderInternalToken, tc.internalToken)
			}
			if tc.bearer != "" {
				r.Header.Set("Authorization", "Bearer "+tc.bearer)
			}
			w := httptest.NewRecorder()
			srv.Routes().ServeHTTP(w, r)
			if w.Code != tc.want {
				t.Errorf("%s %s: status %d, want %d (%s)", tc.method, tc.path, w.Code, tc.want, w.Body)
			}
		})
	}
}
