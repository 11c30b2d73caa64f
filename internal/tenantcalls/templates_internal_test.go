package tenantcalls

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/wapipe/wapipe/internal/refusal"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/tenant"
)

// TestTemplateWABA: a creation or deletion goes to the account asked for when it is the
// tenant's, else to the tenant's only account; several accounts and none are refused with 400
// invalid_request saying why.
func TestTemplateWABA(t *testing.T) {
	t.Parallel()
	rec := func(wabas ...string) store.TenantRecord {
		tn := &tenant.Tenant{ID: "acme"}
		for i, w := range wabas {
			tn.PhoneNumbers = append(tn.PhoneNumbers, tenant.PhoneNumber{PhoneNumberID: string(rune('1' + i)), WABAID: w})
		}
		return store.TenantRecord{Tenant: tn}
	}
	for _, tc := range []struct {
		name   string
		rec    store.TenantRecord
		asked  string
		want   string
		refuse string
	}{
		{"only account", rec("900"), "", "900", ""},
		{"asked for", rec("900", "901"), "901", "901", ""},
		{"several", rec("900", "901"), "", "", "several accounts: 900, 901"},
		{"not the tenant's", rec("900"), "999", "", "not an account of the tenant's numbers"},
		{"none", rec(), "", "", "no number with a waba_id"},
	} {
		got, err := templateWABA(tc.rec, tc.asked)
		var ce *refusal.Error
		switch {
		case tc.refuse == "" && (err != nil || got != tc.want):
			t.Errorf("%s: %q %v, want %q", tc.name, got, err, tc.want)
		case tc.refuse != "" && (!errors.As(err, &ce) || ce.Status != http.StatusBadRequest || ce.Code != refusal.InvalidRequest ||
			!strings.Contains(ce.Message, tc.refuse)):
			t.Errorf("%s: %q %v, want 400 invalid_request saying %q", tc.name, got, err, tc.refuse)
		}
	}
}

// TestReadTemplateBody: waba_id is taken out of Meta's body, the rest passes as it is.
func TestReadTemplateBody(t *testing.T) {
	t.Parallel()
	r, _ := http.NewRequest(http.MethodPost, "/", strings.NewReader(
		`{"name":"x","language":"en_US","category":"UTILITY","components":[{"type":"BODY","text":"Hi"}],"waba_id":"901","allow_category_change":true}`))
	body, tpl, err := readTemplateBody(r)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(body), "waba_id") || !strings.Contains(string(body), `"allow_category_change":true`) {
		t.Errorf("body to Meta: %s, want it without waba_id and with the rest", body)
	}
	if tpl.Name != "x" || tpl.Language != "en_US" || tpl.Category != "UTILITY" || tpl.WABAID != "901" || tpl.Components != `[{"type":"BODY","text":"Hi"}]` {
		t.Errorf("template read: %+v", tpl)
	}
	for _, bad := range []string{`[1]`, `{"name":1}`, strings.Repeat("x", maxTemplateBody+1)} {
		r, _ := http.NewRequest(http.MethodPost, "/", strings.NewReader(bad))
		if _, _, err := readTemplateBody(r); err == nil {
			t.Errorf("body %.20q accepted", bad)
		}
	}
}
