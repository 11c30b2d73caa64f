package console

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/wapipe/wapipe/internal/store"
)

// fakeTemplates lists fixed templates, or fails.
type fakeTemplates struct {
	list []store.Template
	err  error
}

func (f fakeTemplates) List(_ context.Context, tenantID string) ([]store.Template, error) {
	var out []store.Template
	for _, t := range f.list {
		if t.TenantID == tenantID {
			out = append(out, t)
		}
	}
	return out, f.err
}

// TestTenantPageTemplates: the tenant's page lists its recorded templates with their status
// (a status other than APPROVED marked bad), and says so when they cannot be read.
func TestTenantPageTemplates(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 24, 9, 30, 0, 0, time.UTC)
	list := fakeTemplates{list: []store.Template{
		{TenantID: "acme-01", Name: "order_ready", Language: "en_US", Status: "APPROVED", Category: "UTILITY", StatusAt: at, StatusSource: "webhook"},
		{TenantID: "acme-01", Name: "spring_sale", Language: "id", Status: "REJECTED", Category: "MARKETING", Quality: "RED"},
		{TenantID: "acme-02", Name: "other_tenants", Language: "en", Status: "APPROVED"},
	}}
	runPages(t, []pageCase{
		{name: "listed", path: "/tenants/acme-01", code: http.StatusOK,
			setup: func(f *fixture) { f.deps.Templates = list },
			want: []string{`id="templates"`, "<code>order_ready</code>", "<strong >APPROVED</strong>", "(webhook)",
				"<code>spring_sale</code>", `<strong class="bad">REJECTED</strong>`, "MARKETING", "RED"},
			not: []string{"other_tenants"}},
		{name: "none", path: "/tenants/acme-02", code: http.StatusOK,
			setup: func(f *fixture) { f.deps.Templates = fakeTemplates{} }, want: []string{"none known"}},
		{name: "error", path: "/tenants/acme-01", code: http.StatusOK,
			setup: func(f *fixture) { f.deps.Templates = fakeTemplates{err: errBoom} }, want: []string{"Templates unavailable."}, not: []string{"10.0.0.7"}},
		{name: "not wired", path: "/tenants/acme-01", code: http.StatusOK, want: []string{"Templates not available."}},
	})
}
