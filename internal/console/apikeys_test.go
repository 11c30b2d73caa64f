package console

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/wapipe/wapipe/internal/apikey"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/tenant"
	"github.com/wapipe/wapipe/internal/testenv"
)

// TestAPIKeysPageListsAndRevokes: the page lists a tenant's keys (never a key), and its Revoke
// button (a POST with the CSRF token and a request id) revokes the key once, audited; a forged
// POST or another tenant's key revokes nothing. Keys and audit entries live in the Firestore
// emulator.
func TestAPIKeysPageListsAndRevokes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, _ := testenv.Store(t)
	keys := store.NewAPIKeys(db, store.Options{})
	audit := store.NewAudit(db, store.Options{})
	newKey := func(tenantID string) (key, id string) {
		t.Helper()
		tn := &tenant.Tenant{ID: tenantID, Name: tenantID, Language: "en", Audience: tenant.AudiencePublic,
			PhoneNumbers: []tenant.PhoneNumber{{PhoneNumberID: "1" + tenantID, WABAID: "2"}}}
		tn.ApplyDefaults()
		if _, err := store.NewTenants(db, store.Options{}).Apply(ctx, tn, false); err != nil {
			t.Fatal(err)
		}
		key, id, hash, _ := apikey.New()
		if err := keys.CreateAPIKey(ctx, store.APIKeyRecord{ID: id, TenantID: tenantID, Hash: hash}); err != nil {
			t.Fatal(err)
		}
		return key, id
	}
	key1, id1 := newKey("acme-01")
	key2, id2 := newKey("acme-01")
	_, other := newKey("bali-01")

	f := newFixture(t, false)
	f.deps.APIKeys, f.deps.Audit = keys, audit
	f.rebuild()
	code, body := f.get(t, "/tenants/acme-01/api-keys")
	if code != http.StatusOK || !strings.Contains(body, apikey.DisplayPrefix(id1)) || !strings.Contains(body, apikey.DisplayPrefix(id2)) ||
		strings.Contains(body, apikey.DisplayPrefix(other)) || !strings.Contains(body, `name="csrf"`) {
		t.Fatalf("GET = %d, want both of acme's keys with a revoke form and not bali's:\n%s", code, body)
	}
	for _, k := range []string{key1, key2} {
		if strings.Contains(body, k[len(apikey.DisplayPrefix(id1)):]) {
			t.Fatal("the page shows a key")
		}
	}

	revoke := func(id string, form url.Values) int {
		t.Helper()
		return f.post(t, "/tenants/acme-01/api-keys/"+apikey.DisplayPrefix(id)+"/revoke", form, f.as(t, "alice@example.com")...).Code
	}
	usable := func(id string) bool {
		t.Helper()
		rec, err := keys.GetAPIKey(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return rec.Usable(f.deps.Now())
	}

	// Forged: no CSRF token. Nothing revoked, nothing audited.
	if code := revoke(id1, url.Values{RequestIDField: {newRequestID()}, CSRFField: {"x"}}); code != http.StatusForbidden || !usable(id1) {
		t.Fatalf("POST without the CSRF token = %d (usable %v), want 403 and the key untouched", code, usable(id1))
	}

	req := newRequestID()
	for range 2 { // a double submit runs once
		if code := revoke(id1, url.Values{RequestIDField: {req}}); code != http.StatusSeeOther {
			t.Fatalf("revoke = %d, want 303 back to the page", code)
		}
	}
	if usable(id1) || !usable(id2) {
		t.Errorf("after revoking %s: usable %v and %v, want only the other key", id1, usable(id1), usable(id2))
	}
	e, err := audit.Get(ctx, req)
	if err != nil || e.Action != "revoke_api_key" || e.State != store.AuditDone || e.Operator != "alice@example.com" ||
		e.TenantID != "acme-01" || e.Target != apikey.DisplayPrefix(id1) || strings.Contains(e.Result, key1) {
		t.Errorf("audit entry %+v (%v)", e, err)
	}
	_, body = f.get(t, "/tenants/acme-01/api-keys?req="+req)
	if !strings.Contains(body, `id="flash"`) || !strings.Contains(body, "revoke_api_key: done") || !strings.Contains(body, ">revoked<") {
		t.Errorf("the page after revoking:\n%s", body)
	}

	// Another tenant's key through this tenant's page: refused, audited as failed.
	req = newRequestID()
	if code := revoke(other, url.Values{RequestIDField: {req}}); code != http.StatusSeeOther || !usable(other) {
		t.Errorf("revoking bali's key from acme's page: %d, usable %v; want refused", code, usable(other))
	}
	if e, err := audit.Get(ctx, req); err != nil || e.State != store.AuditFailed || !strings.Contains(e.Error, "has no key") {
		t.Errorf("audit of the refused revoke %+v (%v)", e, err)
	}
}
