package console

import (
	"context"
	"net/http"
	"testing"

	"github.com/wapipe/wapipe/internal/store"
)

// fakePrefs answers each contact's marketing preference, by tenant and contact id (as the store
// keys it); err fails every read.
type fakePrefs struct {
	stopped map[string]bool
	err     error
}

func (p fakePrefs) Preference(_ context.Context, tenantID string, c store.Contact) (store.ContactPreference, error) {
	if p.err != nil {
		return store.ContactPreference{}, p.err
	}
	return store.ContactPreference{TenantID: tenantID, ContactID: c.ID, MarketingStopped: p.stopped[tenantID+"/"+c.ID]}, nil
}

// restrictAcme02 records on acme-02 (otherwise in order) Meta's restriction of its account.
func restrictAcme02(f *fixture) {
	f.tenants.recs[1].Account = store.AccountStatus{Restricted: true, Event: "ACCOUNT_RESTRICTION",
		Detail: "RESTRICTED_BIZ_INITIATED_MESSAGING", WABAID: "102290129340398", At: fixedNow}
}

// TestAccountRestrictionShown: a tenant whose WhatsApp Business Account Meta restricted
// (account_update) needs attention on the overview and says so on its page; a lifted one is
// shown, not flagged.
func TestAccountRestrictionShown(t *testing.T) {
	t.Parallel()
	runPages(t, []pageCase{
		{name: "overview", path: "/", code: http.StatusOK, setup: restrictAcme02,
			want: []string{`<li data-tenant="acme-02">`, "WhatsApp account restricted by Meta",
				"ACCOUNT_RESTRICTION (RESTRICTED_BIZ_INITIATED_MESSAGING) at 20"}},
		{name: "overview without", path: "/", code: http.StatusOK,
			not: []string{`<li data-tenant="acme-02">`, "WhatsApp account restricted"}},
		{name: "tenant page", path: "/tenants/acme-02", code: http.StatusOK, setup: restrictAcme02,
			want: []string{`id="account-status" class="bad">ACCOUNT_RESTRICTION (RESTRICTED_BIZ_INITIATED_MESSAGING)`,
				"Meta stopped this tenant's messaging"}},
		{name: "tenant page lifted", path: "/tenants/acme-02", code: http.StatusOK,
			setup: func(f *fixture) {
				f.tenants.recs[1].Account = store.AccountStatus{Event: "ACCOUNT_RESTRICTION", At: fixedNow}
			},
			want: []string{`id="account-status" >ACCOUNT_RESTRICTION, lifted`}, not: []string{"Meta stopped"}},
		{name: "tenant page never updated", path: "/tenants/acme-02", code: http.StatusOK,
			not: []string{`id="account-status"`}},
	})
}

// TestMarketingStopShown: the conversation page says when its contact stopped marketing
// messages (user_preferences); a preference that cannot be read fails the page, as any read.
func TestMarketingStopShown(t *testing.T) {
	t.Parallel()
	runPages(t, []pageCase{
		{name: "stopped", path: "/conversations/conv_abc", code: http.StatusOK,
			setup: func(f *fixture) {
				// The conversation names no contact (from before contacts): its phone finds Pak Agus's.
				f.deps.Preferences = fakePrefs{stopped: map[string]bool{"acme-01/ct_agus": true}}
			},
			want: []string{`id="marketing-stopped"`, "stopped marketing messages"}, not: []string{"6281234567890"}},
		{name: "not stopped", path: "/conversations/conv_abc", code: http.StatusOK,
			setup: func(f *fixture) { f.deps.Preferences = fakePrefs{} }, not: []string{`id="marketing-stopped"`}},
		{name: "no preference store", path: "/conversations/conv_abc", code: http.StatusOK,
			not: []string{`id="marketing-stopped"`}},
		{name: "error", path: "/conversations/conv_abc", code: http.StatusInternalServerError,
			setup: func(f *fixture) { f.deps.Preferences = fakePrefs{err: errBoom} }, not: []string{"10.0.0.7"}},
	})
}
