package store_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/wapipe/wapipe/internal/contact"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/tenant"
)

// sharedTenant is a tenant listing numbers, those in shared with shared: true, all under WABA
// waba.
func sharedTenant(t *testing.T, id, waba string, numbers []string, shared ...string) *tenant.Tenant {
	t.Helper()
	y := "id: " + id + "\nname: Test " + id + "\nlanguage: en\naudience: members\nphone_numbers:\n"
	for _, n := range numbers {
		sh := ""
		for _, s := range shared {
			if s == n {
				sh = ", shared: true"
			}
		}
		y += "  - {phone_number_id: \"" + n + "\", waba_id: \"" + waba + "\"" + sh + "}\n"
	}
	return parseTenant(t, y)
}

func numberUse(t *testing.T, s *store.Tenants, number string) tenant.NumberUse {
	t.Helper()
	u, err := s.NumberUse(context.Background(), number)
	if errors.Is(err, store.ErrNotFound) {
		return tenant.NumberUse{}
	}
	if err != nil {
		t.Fatalf("NumberUse(%s): %v", number, err)
	}
	return u
}

// TestApplySharedNumbers walks one number through its life: shared by one tenant, joined by a
// second and a third, refused to a fourth that does not say shared or gives another waba_id,
// left by a tenant (the index keeps the others), un-shared when one tenant is left, freed.
func TestApplySharedNumbers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := newTenants(t)
	const num = "700"
	steps := []struct {
		name     string
		tn       *tenant.Tenant
		problems []string
		want     tenant.NumberUse
		owner    string
	}{
		{"the first tenant shares it", sharedTenant(t, "beta", "900", []string{num, "701"}, num), nil,
			tenant.NumberUse{TenantIDs: []string{"beta"}, Shared: true, WABAID: "900"}, "beta"},
		{"a second joins: the first by id routes by number", sharedTenant(t, "alpha", "900", []string{num}, num), nil,
			tenant.NumberUse{TenantIDs: []string{"alpha", "beta"}, Shared: true, WABAID: "900"}, "alpha"},
		{"a third joins", sharedTenant(t, "gamma", "900", []string{num}, num), nil,
			tenant.NumberUse{TenantIDs: []string{"alpha", "beta", "gamma"}, Shared: true, WABAID: "900"}, "alpha"},
		{"one not saying shared is refused", sharedTenant(t, "delta", "900", []string{num}), []string{
			"phone_numbers[0].shared: 700 is shared with tenant alpha, beta, gamma: list it with shared: true"},
			tenant.NumberUse{TenantIDs: []string{"alpha", "beta", "gamma"}, Shared: true, WABAID: "900"}, "alpha"},
		{"another waba_id is refused", sharedTenant(t, "delta", "901", []string{num}, num), []string{
			"phone_numbers[0].waba_id: 700 is shared with tenant alpha, beta, gamma under waba_id 900: every tenant must give the same waba_id"},
			tenant.NumberUse{TenantIDs: []string{"alpha", "beta", "gamma"}, Shared: true, WABAID: "900"}, "alpha"},
		{"a tenant un-sharing it while others share it is refused", sharedTenant(t, "gamma", "900", []string{num}), []string{
			"phone_numbers[0].shared: 700 is shared with tenant alpha, beta: list it with shared: true"},
			tenant.NumberUse{TenantIDs: []string{"alpha", "beta", "gamma"}, Shared: true, WABAID: "900"}, "alpha"},
		{"alpha leaves it", sharedTenant(t, "alpha", "900", []string{"702"}), nil,
			tenant.NumberUse{TenantIDs: []string{"beta", "gamma"}, Shared: true, WABAID: "900"}, "beta"},
		{"gamma leaves it", sharedTenant(t, "gamma", "900", []string{"703"}), nil,
			tenant.NumberUse{TenantIDs: []string{"beta"}, Shared: true, WABAID: "900"}, "beta"},
		{"beta, alone, un-shares it", sharedTenant(t, "beta", "900", []string{num, "701"}), nil,
			tenant.NumberUse{TenantIDs: []string{"beta"}, WABAID: "900"}, "beta"},
		{"then a tenant saying shared is refused", sharedTenant(t, "delta", "900", []string{num}, num), []string{
			"phone_numbers[0].shared: 700 already belongs to tenant beta, which does not list it shared: true"},
			tenant.NumberUse{TenantIDs: []string{"beta"}, WABAID: "900"}, "beta"},
		{"beta lets it go", sharedTenant(t, "beta", "900", []string{"701"}), nil, tenant.NumberUse{}, ""},
	}
	for _, st := range steps {
		_, err := s.Apply(ctx, st.tn, false)
		var got []string
		var ps tenant.Problems
		switch {
		case errors.As(err, &ps):
			for _, p := range ps {
				got = append(got, p.String())
			}
		case err != nil:
			t.Fatalf("%s: %v", st.name, err)
		}
		if diff := cmp.Diff(st.problems, got); diff != "" {
			t.Errorf("%s: problems (-want, +got):\n%s", st.name, diff)
		}
		if diff := cmp.Diff(st.want, numberUse(t, s, num)); diff != "" {
			t.Errorf("%s: index (-want, +got):\n%s", st.name, diff)
		}
		if got := owner(t, s, num); got != st.owner {
			t.Errorf("%s: routes by number to %q, want %q", st.name, got, st.owner)
		}
	}
	if _, err := s.Get(ctx, "delta"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a refused tenant was stored: %v", err)
	}
	// A second apply of the same file writes nothing and says so.
	if res := mustApply(t, s, sharedTenant(t, "beta", "900", []string{"701"})); len(res.Changes) != 0 {
		t.Errorf("re-apply changes: %v", res.Changes)
	}
}

// TestConcurrentAppliesSharingOneNumber: tenants joining one shared number at once all end up in
// its index (the transactions serialise on the number's document).
func TestConcurrentAppliesSharingOneNumber(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := newTenants(t)
	ids := []string{"tenant-a", "tenant-b", "tenant-c", "tenant-d"}
	var wg sync.WaitGroup
	errs := make([]error, len(ids))
	for i, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = s.Apply(ctx, sharedTenant(t, id, "900", []string{"710"}, "710"), false)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("apply %s: %v", ids[i], err)
		}
	}
	if diff := cmp.Diff(tenant.NumberUse{TenantIDs: ids, Shared: true, WABAID: "900"}, numberUse(t, s, "710")); diff != "" {
		t.Errorf("index (-want, +got):\n%s", diff)
	}
}

// TestSharedInvites: on a shared number an invite code finds its tenant, and redeeming it makes
// the contact that tenant's and records the choice under the number, which routes; the contact
// stays a member of the number's other tenants (a code on a shared number evicts no one: the
// red team's "redeem another tenant's code to strip a member everywhere").
func TestSharedInvites(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, ct, clk := newTenantsWithContacts(t)
	const num, contact, fileMember = "720", "6281111", "6289999"
	alpha := sharedTenant(t, "alpha", "900", []string{num}, num)
	alpha.Members = []tenant.Member{{WaID: fileMember, Role: tenant.RoleMember}}
	mustApply(t, s, alpha)
	mustApply(t, s, sharedTenant(t, "beta", "900", []string{num}, num))
	mustApply(t, s, simpleTenant(t, "solo", "721"))
	tenants := []string{"alpha", "beta"}
	expire := clk.Now().Add(tenant.InviteTTL)
	codes := map[string]string{"WP-AAAAAAAA": "alpha", "WP-BBBBBBBB": "beta", "WP-CCCCCCCC": "beta", "WP-DDDDDDDD": "solo"}
	for code, id := range codes {
		if err := s.CreateInvite(ctx, id, tenant.InviteCodeHash(code), tenant.RoleMember, expire); err != nil {
			t.Fatal(err)
		}
	}
	inviteTenant := func(code, waID string) string {
		t.Helper()
		id, err := s.InviteTenant(ctx, tenants, tenant.InviteCodeHash(code), personOf(waID))
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	for code, want := range map[string]string{"WP-AAAAAAAA": "alpha", "WP-BBBBBBBB": "beta", "WP-DDDDDDDD": "", "WP-ZZZZZZZZ": ""} {
		if got := inviteTenant(code, contact); got != want {
			t.Errorf("InviteTenant(%s) = %q, want %q", code, got, want)
		}
	}
	sharedContact := func(waID string) store.SharedContact {
		t.Helper()
		sc, err := s.SharedContact(ctx, num, tenants, personOf(waID))
		if err != nil {
			t.Fatal(err)
		}
		sc.Contacts = nil
		return sc
	}

	// The contact joins alpha by code, then moves to beta by beta's code.
	if _, err := s.RedeemSharedInvite(ctx, "alpha", num, tenant.InviteCodeHash("WP-AAAAAAAA"), ct("alpha", contact), ""); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(store.SharedContact{Chosen: "alpha", Joined: []string{"alpha"}}, sharedContact(contact)); diff != "" {
		t.Errorf("after alpha's code (-want, +got):\n%s", diff)
	}
	if _, err := s.RedeemSharedInvite(ctx, "beta", num, tenant.InviteCodeHash("WP-BBBBBBBB"), ct("beta", contact), ""); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(store.SharedContact{Chosen: "beta", Joined: []string{"alpha", "beta"}}, sharedContact(contact)); diff != "" {
		t.Errorf("after beta's code (-want, +got):\n%s", diff)
	}
	if _, ok, _ := s.RuntimeMember(ctx, "alpha", ct("alpha", contact)); !ok {
		t.Error("beta's code on the shared number took the contact out of alpha")
	}
	// A used code still finds its tenant for the contact who used it (a retried turn), no one else.
	if got := inviteTenant("WP-BBBBBBBB", contact); got != "beta" {
		t.Errorf("a used code for its user: %q, want beta", got)
	}
	if got := inviteTenant("WP-BBBBBBBB", "6282222"); got != "" {
		t.Errorf("a used code for another contact: %q, want none", got)
	}

	// alpha's file member moves to beta: the choice is recorded, alpha's file is untouched, and
	// a re-apply of alpha's file does not take it back.
	if _, err := s.RedeemSharedInvite(ctx, "beta", num, tenant.InviteCodeHash("WP-CCCCCCCC"), ct("beta", fileMember), ""); err != nil {
		t.Fatal(err)
	}
	mustApply(t, s, alpha)
	if diff := cmp.Diff(store.SharedContact{Chosen: "beta", Joined: []string{"beta"}}, sharedContact(fileMember)); diff != "" {
		t.Errorf("the file member after beta's code (-want, +got):\n%s", diff)
	}

	// On a number that is not shared nothing is recorded under the number.
	if _, err := s.RedeemSharedInvite(ctx, "solo", "721", tenant.InviteCodeHash("WP-DDDDDDDD"), ct("solo", contact), ""); err != nil {
		t.Fatal(err)
	}
	if sc, err := s.SharedContact(ctx, "721", []string{"solo"}, personOf(contact)); err != nil || sc.Chosen != "" {
		t.Errorf("a choice recorded on a number that is not shared: %+v, %v", sc, err)
	}
	if _, ok, _ := s.RuntimeMember(ctx, "beta", ct("beta", contact)); !ok {
		t.Error("joining a tenant on another number took the contact out of beta")
	}
}

// TestDeleteTenantOnASharedNumber: deleting one tenant of a shared number takes it off the
// number and leaves the number to the others (still shared, routed to the first left by id); the
// number it had alone is freed.
func TestDeleteTenantOnASharedNumber(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := newTenants(t)
	const num, own = "710", "711"
	mustApply(t, s, sharedTenant(t, "alpha", "900", []string{num, own}, num))
	mustApply(t, s, sharedTenant(t, "beta", "900", []string{num}, num))
	mustApply(t, s, sharedTenant(t, "gamma", "900", []string{num}, num))

	res, err := s.DeleteTenant(ctx, "alpha")
	if err != nil {
		t.Fatalf("delete alpha: %v", err)
	}
	if diff := cmp.Diff([]string{num, own}, res.Numbers); diff != "" {
		t.Errorf("numbers left (-want, +got):\n%s", diff)
	}
	if diff := cmp.Diff(tenant.NumberUse{TenantIDs: []string{"beta", "gamma"}, Shared: true, WABAID: "900"}, numberUse(t, s, num)); diff != "" {
		t.Errorf("the shared number's index (-want, +got):\n%s", diff)
	}
	if got := owner(t, s, num); got != "beta" {
		t.Errorf("the shared number routes by number to %q, want beta", got)
	}
	if diff := cmp.Diff(tenant.NumberUse{}, numberUse(t, s, own)); diff != "" {
		t.Errorf("alpha's own number is still indexed: %s", diff)
	}
	// The last tenants go: the number is freed.
	for _, id := range []string{"beta", "gamma"} {
		if _, err := s.DeleteTenant(ctx, id); err != nil {
			t.Fatalf("delete %s: %v", id, err)
		}
	}
	if diff := cmp.Diff(tenant.NumberUse{}, numberUse(t, s, num)); diff != "" {
		t.Errorf("the number outlived its last tenant: %s", diff)
	}
}

// TestConcurrentSharedRedeems: a contact who sends two tenants' codes on a shared number at once
// ends up the member of both (a code evicts no one) with one choice recorded under the number,
// one of the two, however the two transactions interleave: each redeem writes its membership and
// the choice together, so the last to commit names the choice whole.
func TestConcurrentSharedRedeems(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, ct, clk := newTenantsWithContacts(t)
	const num = "730"
	mustApply(t, s, sharedTenant(t, "gamma", "900", []string{num}, num))
	mustApply(t, s, sharedTenant(t, "delta", "900", []string{num}, num))
	tenants := []string{"delta", "gamma"}
	expire := clk.Now().Add(tenant.InviteTTL)
	contacts := []string{"6283000001", "6283000002", "6283000003", "6283000004"}
	for i := range contacts {
		for _, id := range tenants {
			code := fmt.Sprintf("WP-%s%07d", strings.ToUpper(id[:1]), i)
			if err := s.CreateInvite(ctx, id, tenant.InviteCodeHash(code), tenant.RoleMember, expire); err != nil {
				t.Fatal(err)
			}
		}
	}
	// The person's contact in each tenant exists before the codes: each tenant's turn resolved
	// it when the message came.
	byTenant := map[string]store.Contact{}
	for _, c := range contacts {
		for _, id := range tenants {
			byTenant[id+c] = ct(id, c)
		}
	}
	var wg sync.WaitGroup
	errs := make([]error, 2*len(contacts))
	for i, contact := range contacts {
		for j, id := range tenants {
			wg.Add(1)
			go func() {
				defer wg.Done()
				code := fmt.Sprintf("WP-%s%07d", strings.ToUpper(id[:1]), i)
				_, errs[2*i+j] = s.RedeemSharedInvite(ctx, id, num, tenant.InviteCodeHash(code), byTenant[id+contact], "")
			}()
		}
	}
	wg.Wait()
	for i, contact := range contacts {
		if errs[2*i] != nil || errs[2*i+1] != nil {
			t.Errorf("contact %d: a redeem failed: %v; %v", i, errs[2*i], errs[2*i+1])
			continue
		}
		sc, err := s.SharedContact(ctx, num, tenants, personOf(contact))
		if err != nil {
			t.Fatal(err)
		}
		if len(sc.Joined) != 2 || !slices.Contains(sc.Joined, sc.Chosen) {
			t.Errorf("contact %d after two codes at once: %+v, want the member of both, one of them chosen", i, sc)
		}
	}
}

// personOf is the person a phone number names.
func personOf(waID string) contact.Identity { return contact.Identity{WaID: waID} }
