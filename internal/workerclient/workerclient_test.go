package workerclient_test

import (
	"testing"

	"github.com/wapipe/wapipe/internal/workerclient"
)

// TestPathEscapesEachSegment: a tenant id or a template name cannot step into another route.
func TestPathEscapesEachSegment(t *testing.T) {
	t.Parallel()
	tests := []struct {
		tenant string
		elems  []string
		want   string
	}{
		{"acme-bus", []string{"media", "123"}, "/internal/tenants/acme-bus/media/123"},
		{"acme-bus", nil, "/internal/tenants/acme-bus"},
		{"acme", []string{"templates", "../../health"}, "/internal/tenants/acme/templates/..%2F..%2Fhealth"},
		{"a/b", []string{"media", "1?x=2"}, "/internal/tenants/a%2Fb/media/1%3Fx=2"},
	}
	for _, tc := range tests {
		if got := workerclient.Path(tc.tenant, tc.elems...); got != tc.want {
			t.Errorf("Path(%q, %q) = %q, want %q", tc.tenant, tc.elems, got, tc.want)
		}
	}
}
