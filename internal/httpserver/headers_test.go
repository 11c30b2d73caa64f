package httpserver_test

import (
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/wapipe/wapipe/internal/httpserver"
)

// TestSetSecurityHeaders: a page of wapipe's own and a contact's file each get their whole set,
// nosniff included, and a file is not given a page's frame and referrer rules.
func TestSetSecurityHeaders(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		b    httpserver.Browser
		want http.Header
	}{
		{"page", httpserver.Browser{CSP: "default-src 'none'", Cache: "no-store", Page: true}, http.Header{
			"X-Content-Type-Options":  {"nosniff"},
			"Content-Security-Policy": {"default-src 'none'"},
			"Cache-Control":           {"no-store"},
			"Referrer-Policy":         {"no-referrer"},
			"X-Frame-Options":         {"DENY"},
		}},
		{"contact's file", httpserver.ContactFile, http.Header{
			"X-Content-Type-Options":  {"nosniff"},
			"Content-Security-Policy": {"sandbox"},
			"Cache-Control":           {"private, no-store"},
		}},
	}
	for _, tc := range tests {
		h := http.Header{}
		httpserver.SetSecurityHeaders(h, tc.b)
		if diff := cmp.Diff(tc.want, h); diff != "" {
			t.Errorf("%s: headers (-want, +got):\n%s", tc.name, diff)
		}
	}
}
