package signup

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestPageHeaders: a signup page carries the headers of every page wapipe renders
// (httpserver.SetSecurityHeaders: nosniff, which it once lacked, among them) and its own policy.
func TestPageHeaders(t *testing.T) {
	t.Parallel()
	rec := httptest.NewRecorder()
	page(rec, http.StatusBadRequest, "Invalid link", "This connection link is not valid.")
	want := map[string]string{
		"Content-Type":            "text/html; charset=utf-8",
		"X-Content-Type-Options":  "nosniff",
		"Cache-Control":           "no-store",
		"Referrer-Policy":         "no-referrer",
		"X-Frame-Options":         "DENY",
		"Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'",
	}
	for h, v := range want {
		if got := rec.Header().Get(h); got != v {
			t.Errorf("%s: %q, want %q", h, got, v)
		}
	}
	if rec.Code != http.StatusBadRequest {
		t.Errorf("status %d, want 400", rec.Code)
	}
}
