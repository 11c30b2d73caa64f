package tenantroutes_test

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/wapipe/wapipe/tasks"
	"github.com/wapipe/wapipe/tenantroutes"
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
		if got := tenantroutes.Path(tc.tenant, tc.elems...); got != tc.want {
			t.Errorf("Path(%q, %q) = %q, want %q", tc.tenant, tc.elems, got, tc.want)
		}
	}
}

// TestRoutesAreTheDoorsRows: every tenant route of the contract has its row, with its method, in
// the worker's table of who may call what (tasks.Routes), and every tenant row of that table is a
// route of the contract: a route served without a row would be refused, a row without a route
// would admit callers to nothing.
func TestRoutesAreTheDoorsRows(t *testing.T) {
	t.Parallel()
	served := map[string][]string{}
	for _, r := range tenantroutes.Routes() {
		served[tenantroutes.Prefix+r.Pattern] = append(served[tenantroutes.Prefix+r.Pattern], r.Method)
	}
	admitted := map[string][]string{}
	for _, r := range tasks.Routes() {
		if strings.HasPrefix(r.Path, tasks.TenantRoutePrefix+"/") {
			admitted[r.Path] = slices.Clone(r.Methods)
		}
	}
	for path, methods := range served {
		slices.Sort(methods)
		got := slices.Sorted(slices.Values(admitted[path]))
		if !slices.Equal(methods, got) {
			t.Errorf("%s: the contract serves %v, tasks.Routes admits %v", path, methods, got)
		}
	}
	for path := range admitted {
		if _, ok := served[path]; !ok {
			t.Errorf("%s: a row of tasks.Routes the contract does not serve", path)
		}
	}
}

// TestUploadRequestNamesTheFileInAHeader: the file's name, quotes and non-ASCII letters
// included, travels in Content-Disposition and is read back from there, never from the query.
func TestUploadRequestNamesTheFileInAHeader(t *testing.T) {
	t.Parallel()
	for _, name := range []string{`facture "été" 12.jpg`, "photo.jpg", ""} {
		u := tenantroutes.UploadRequest{PhoneNumberID: "100", MIMEType: "image/jpeg", Filename: name}
		q := u.Query()
		q.Set("filename", "query-name.jpg")
		r := httptest.NewRequest(http.MethodPost, tenantroutes.Path("t1", "media")+"?"+q.Encode(), nil)
		r.Header = u.Header()
		if got := tenantroutes.UploadRequestOf(r); got != u {
			t.Errorf("upload %+v read back as %+v", u, got)
		}
	}
}
