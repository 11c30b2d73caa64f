package store_test

import (
	"context"
	"errors"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wapipe/wapipe/internal/contact"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/tenant"
	"github.com/wapipe/wapipe/internal/testenv"
)

func newTenants(t *testing.T) (*store.Tenants, *clock) {
	s, _, clk := newTenantsWithContacts(t)
	return s, clk
}

// newTenantsWithContacts is newTenants with a function that gives the tenant's contact of a
// phone number (store.Contacts.Resolve on the same database).
func newTenantsWithContacts(t *testing.T) (*store.Tenants, func(tenantID, waID string) store.Contact, *clock) {
	db, _ := testenv.Store(t)
	clk := &clock{now: time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)}
	contacts := store.NewContacts(db, store.Options{Now: clk.Now})
	of := func(tenantID, waID string) store.Contact {
		t.Helper()
		res, err := contacts.Resolve(context.Background(), tenantID, contact.Identity{WaID: waID})
		if err != nil {
			t.Fatalf("resolve a contact: %v", err)
		}
		return res.Contact
	}
	return store.NewTenants(db, store.Options{Now: clk.Now}), of, clk
}

// parseTenant reads a tenant file from the tenant package's testdata, or from text.
func parseTenant(t *testing.T, yaml string) *tenant.Tenant {
	t.Helper()
	tn, err := tenant.Parse([]byte(yaml))
	if err != nil {
		t.Fatalf("parse tenant: %v", err)
	}
	return tn
}

func contractTenant(t *testing.T) *tenant.Tenant {
	t.Helper()
	b, err := os.ReadFile("../tenant/testdata/contract.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return parseTenant(t, string(b))
}

func simpleTenant(t *testing.T, id string, numbers ...string) *tenant.Tenant {
	t.Helper()
	y := "id: " + id + "\nname: Test " + id + "\nlanguage: en\naudience: members\nphone_numbers:\n"
	for _, n := range numbers {
		y += "  - {phone_number_id: \"" + n + "\", waba_id: \"900\"}\n"
	}
	return parseTenant(t, y)
}

func mustApply(t *testing.T, s *store.Tenants, tn *tenant.Tenant) store.TenantApplyResult {
	t.Helper()
	res, err := s.Apply(context.Background(), tn, false)
	if err != nil {
		t.Fatalf("apply %s: %v", tn.ID, err)
	}
	return res
}

func owner(t *testing.T, s *store.Tenants, number string) string {
	t.Helper()
	rec, err := s.GetByPhoneNumber(context.Background(), number)
	if errors.Is(err, store.ErrNotFound) {
		return ""
	}
	if err != nil {
		t.Fatalf("GetByPhoneNumber(%s): %v", number, err)
	}
	return rec.Tenant.ID
}

func TestApplyCreatesThenNoChange(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := newTenants(t)
	tn := contractTenant(t)

	dry, err := s.Apply(ctx, tn, true)
	if err != nil {
		t.Fatal(err)
	}
	if !dry.Created || len(dry.Changes) == 0 {
		t.Fatalf("dry run of a new tenant: %+v", dry)
	}
	if _, err := s.Get(ctx, tn.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("after a dry run, Get = %v, want ErrNotFound", err)
	}

	res := mustApply(t, s, tn)
	if !res.Created || res.Version != 1 || len(res.Changes) == 0 || res.Changes[0].String() != "+ tenant: "+tn.ID {
		t.Fatalf("create: %+v", res)
	}
	rec, err := s.Get(ctx, tn.ID)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(tn, rec.Tenant); diff != "" {
		t.Errorf("stored tenant (-want, +got):\n%s", diff)
	}
	if rec.AuthStatus != store.AuthNoToken || rec.AccessToken != nil || rec.Version != 1 {
		t.Errorf("new record: auth %q token %v version %d", rec.AuthStatus, rec.AccessToken, rec.Version)
	}

	again := mustApply(t, s, contractTenant(t))
	if again.Created || len(again.Changes) != 0 || again.Version != 1 {
		t.Errorf("second apply of the same file: %+v, want no change at version 1", again)
	}
	rec2, _ := s.Get(ctx, tn.ID)
	if !rec2.UpdatedAt.Equal(rec.UpdatedAt) {
		t.Errorf("no change wrote the tenant: updated_at %v -> %v", rec.UpdatedAt, rec2.UpdatedAt)
	}
	for _, p := range tn.PhoneNumbers {
		if got := owner(t, s, p.PhoneNumberID); got != tn.ID {
			t.Errorf("number %s owned by %q, want %s", p.PhoneNumberID, got, tn.ID)
		}
	}
}

func TestApplyUpdateKeepsRuntimeFields(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, ct, clk := newTenantsWithContacts(t)
	tn := contractTenant(t)
	mustApply(t, s, tn)
	claire := ct(tn.ID, "33612345678")
	if _, err := s.SetAccessToken(ctx, tn.ID, []byte("ciphertext")); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateInvite(ctx, tn.ID, tenant.InviteCodeHash("WP-00000001"), tenant.RoleAdmin, clk.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.RedeemInvite(ctx, tn.ID, tenant.InviteCodeHash("WP-00000001"), claire, "Claire"); err != nil {
		t.Fatal(err)
	}

	clk.Add(time.Minute)
	next := contractTenant(t)
	next.Language = "fr"
	next.Quota = tenant.Quota{} // unlimited now: the stored cap must go, not survive a merge
	next.Members = nil
	res := mustApply(t, s, next)
	want := []string{
		"~ language: id -> fr",
		"- members: Pak Agus (…7890)",
		"~ quota.llm_calls_per_month: 1000 -> unlimited",
	}
	var got []string
	for _, c := range res.Changes {
		got = append(got, c.String())
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("changes (-want, +got):\n%s", diff)
	}
	if res.Created || res.Version != 2 {
		t.Errorf("update: created %v version %d, want false 2", res.Created, res.Version)
	}
	rec, err := s.Get(ctx, tn.ID)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(next, rec.Tenant); diff != "" {
		t.Errorf("stored tenant (-want, +got):\n%s", diff)
	}
	if string(rec.AccessToken) != "ciphertext" || rec.AuthStatus != store.AuthOK || rec.Version != 2 {
		t.Errorf("runtime fields after apply: token %q auth %q version %d", rec.AccessToken, rec.AuthStatus, rec.Version)
	}
	if m, ok, err := s.RuntimeMember(ctx, tn.ID, claire); err != nil || !ok || m.Role != tenant.RoleAdmin {
		t.Errorf("member who joined by invite after apply: %+v %v %v", m, ok, err)
	}
}

func TestApplyNumbers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := newTenants(t)
	mustApply(t, s, simpleTenant(t, "alpha", "111", "112"))

	// Another tenant claiming alpha's number is refused whole: nothing written.
	_, err := s.Apply(ctx, simpleTenant(t, "beta", "221", "112"), false)
	var ps tenant.Problems
	if !errors.As(err, &ps) || len(ps) != 1 || ps[0].String() != "phone_numbers[1].phone_number_id: 112 already belongs to tenant alpha" {
		t.Fatalf("conflicting apply: %v", err)
	}
	if _, err := s.Get(ctx, "beta"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("refused tenant stored: %v", err)
	}
	if got := owner(t, s, "221"); got != "" {
		t.Errorf("refused apply indexed 221 for %q", got)
	}

	// alpha lets 112 go: its index entry goes, and beta may take it.
	res := mustApply(t, s, simpleTenant(t, "alpha", "111"))
	if len(res.Changes) != 1 || res.Changes[0].String() != "- phone_numbers: 112" {
		t.Errorf("number removal changes: %v", res.Changes)
	}
	if got := owner(t, s, "112"); got != "" {
		t.Errorf("removed number still routes to %q", got)
	}
	mustApply(t, s, simpleTenant(t, "beta", "221", "112"))
	for n, want := range map[string]string{"111": "alpha", "112": "beta", "221": "beta", "999": ""} {
		if got := owner(t, s, n); got != want {
			t.Errorf("number %s owned by %q, want %q", n, got, want)
		}
	}

	list, err := s.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range list {
		ids = append(ids, r.Tenant.ID)
	}
	if diff := cmp.Diff([]string{"alpha", "beta"}, ids); diff != "" {
		t.Errorf("List (-want, +got):\n%s", diff)
	}
}

func TestConcurrentAppliesClaimingOneNumber(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := newTenants(t)
	const n = 4
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := "tenant-" + string(rune('a'+i))
			_, errs[i] = s.Apply(ctx, simpleTenant(t, id, "500", "50"+string(rune('1'+i))), false)
		}()
	}
	wg.Wait()
	winners := 0
	winner := ""
	for i, err := range errs {
		var ps tenant.Problems
		switch {
		case err == nil:
			winners++
			winner = "tenant-" + string(rune('a'+i))
		case errors.As(err, &ps):
		default:
			t.Errorf("apply %d: %v", i, err)
		}
	}
	if winners != 1 {
		t.Fatalf("%d applies won number 500, want exactly 1: %v", winners, errs)
	}
	if got := owner(t, s, "500"); got != winner {
		t.Errorf("500 owned by %q, want the winner %s", got, winner)
	}
	list, _ := s.List(ctx)
	if len(list) != 1 {
		t.Errorf("%d tenants stored, want only the winner", len(list))
	}
	for i := range n {
		if id := "tenant-" + string(rune('a'+i)); id != winner {
			if got := owner(t, s, "50"+string(rune('1'+i))); got != "" {
				t.Errorf("a loser's number routes to %q", got)
			}
		}
	}
}

func TestInvites(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, ct, clk := newTenantsWithContacts(t)
	mustApply(t, s, simpleTenant(t, "alpha", "311"))
	mustApply(t, s, simpleTenant(t, "beta", "312"))
	hash := func(code string) string { return tenant.InviteCodeHash(code) }
	expire := clk.Now().Add(tenant.InviteTTL)
	for code, role := range map[string]tenant.Role{"WP-AAAAAAAA": tenant.RoleMember, "WP-BBBBBBBB": tenant.RoleAdmin, "WP-CCCCCCCC": tenant.RoleMember} {
		if err := s.CreateInvite(ctx, "alpha", hash(code), role, expire); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.CreateInvite(ctx, "nobody", hash("WP-DDDDDDDD"), tenant.RoleMember, expire); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("invite to an unknown tenant: %v, want ErrNotFound", err)
	}

	budi := ct("alpha", "6281111")
	m, err := s.RedeemInvite(ctx, "alpha", hash("WP-BBBBBBBB"), budi, "Budi")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(tenant.Member{WaID: "6281111", Role: tenant.RoleAdmin, Name: "Budi"}, m); diff != "" {
		t.Errorf("redeemed member (-want, +got):\n%s", diff)
	}
	if got, ok, err := s.RuntimeMember(ctx, "alpha", budi); err != nil || !ok || got != m {
		t.Errorf("RuntimeMember = %+v %v %v, want %+v", got, ok, err, m)
	}
	if _, ok, err := s.RuntimeMember(ctx, "beta", ct("beta", "6281111")); err != nil || ok {
		t.Errorf("member of alpha found in beta: %v %v", ok, err)
	}

	refused := []struct {
		name, tenantID, code, waID string
		age                        time.Duration
	}{
		{"reused", "alpha", "WP-BBBBBBBB", "6282222", 0},
		{"wrong tenant", "beta", "WP-AAAAAAAA", "6282222", 0},
		{"unknown", "alpha", "WP-ZZZZZZZZ", "6282222", 0},
		{"expired", "alpha", "WP-CCCCCCCC", "6282222", tenant.InviteTTL},
	}
	for _, tt := range refused {
		clk.Add(tt.age)
		who := ct(tt.tenantID, tt.waID)
		if _, err := s.RedeemInvite(ctx, tt.tenantID, hash(tt.code), who, ""); !errors.Is(err, store.ErrInviteInvalid) {
			t.Errorf("%s: %v, want ErrInviteInvalid", tt.name, err)
		}
		if _, ok, _ := s.RuntimeMember(ctx, tt.tenantID, who); ok {
			t.Errorf("%s: the sender became a member", tt.name)
		}
	}
}

func TestSetAccessToken(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, clk := newTenants(t)
	if _, err := s.SetAccessToken(ctx, "nobody", []byte("x")); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("token of an unknown tenant: %v, want ErrNotFound", err)
	}
	mustApply(t, s, simpleTenant(t, "alpha", "411"))
	clk.Add(time.Hour)
	rec, err := s.SetAccessToken(ctx, "alpha", []byte("sealed"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.GetByPhoneNumber(ctx, "411")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []store.TenantRecord{rec, got} {
		if string(r.AccessToken) != "sealed" || r.AuthStatus != store.AuthOK || r.AuthLastError != "" || !r.TokenSetAt.Equal(clk.Now()) {
			t.Errorf("after SetAccessToken: token %q auth %q err %q set at %v", r.AccessToken, r.AuthStatus, r.AuthLastError, r.TokenSetAt)
		}
	}
	if _, err := s.GetByPhoneNumber(ctx, "412"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("unknown number: %v, want ErrNotFound", err)
	}
}
