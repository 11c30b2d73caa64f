package tenantcache_test

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/tenant"
	"github.com/wapipe/wapipe/internal/tenantcache"
	"github.com/wapipe/wapipe/internal/testenv"
)

func TestMain(m *testing.M) { os.Exit(testenv.RunWithFirestore(m)) }

const sharedNum = "106540352242999"

func applyShared(t *testing.T, s *store.Tenants, id string, members ...string) *tenant.Tenant {
	t.Helper()
	y := "id: " + id + "\nname: " + id + "\nlanguage: en\naudience: members\nphone_numbers:\n" +
		"  - {phone_number_id: \"" + sharedNum + "\", waba_id: \"900\", shared: true}\n"
	if len(members) > 0 {
		y += "members:\n"
		for _, m := range members {
			y += "  - {wa_id: \"" + m + "\", role: member}\n"
		}
	}
	tn, err := tenant.Parse([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Apply(context.Background(), tn, false); err != nil {
		t.Fatal(err)
	}
	return tn
}

// TestContactRouter routes contacts on a shared number against the emulator: a code picks its
// tenant, a member goes to their tenant (the first by id when in several), a stranger to the
// number's first tenant; a code redeemed through the router moves the contact at once, though
// its route was cached.
func TestContactRouter(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, _ := testenv.Store(t)
	s := store.NewTenants(db, store.Options{})
	const alphaOnly, both, betaByInvite, stranger = "6281000001", "6281000002", "6281000003", "6281000004"
	applyShared(t, s, "beta", both)
	applyShared(t, s, "alpha", alphaOnly, both)
	expire := time.Now().Add(time.Hour)
	for code, id := range map[string]string{"WP-BBBBBBBB": "beta", "WP-CCCCCCCC": "beta", "WP-DDDDDDDD": "beta"} {
		if err := s.CreateInvite(ctx, id, tenant.InviteCodeHash(code), tenant.RoleMember, expire); err != nil {
			t.Fatal(err)
		}
	}
	// A member by invite from before the number was shared (plain RedeemInvite).
	if _, err := s.RedeemInvite(ctx, "beta", tenant.InviteCodeHash("WP-DDDDDDDD"), betaByInvite, ""); err != nil {
		t.Fatal(err)
	}
	r := tenantcache.NewContactRouter(s, tenantcache.NewTenantCache(s, time.Minute), time.Minute)

	tests := []struct {
		name, from, code, want string
	}{
		{"a file member", alphaOnly, "", "alpha"},
		{"a member of both: the first by id", both, "", "alpha"},
		{"a member by invite", betaByInvite, "", "beta"},
		{"a stranger: the number's first tenant", stranger, "", "alpha"},
		{"a stranger with beta's code", stranger, "WP-BBBBBBBB", "beta"},
		{"a stranger with a code of no one", stranger, "WP-ZZZZZZZZ", "alpha"},
		{"alpha's member with beta's code", alphaOnly, "WP-CCCCCCCC", "beta"},
	}
	for _, tc := range tests {
		hash := ""
		if tc.code != "" {
			hash = tenant.InviteCodeHash(tc.code)
		}
		got, err := r.TenantFor(ctx, sharedNum, tc.from, hash)
		if err != nil || got != tc.want {
			t.Errorf("%s: %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}

	// alpha's file member redeems beta's code: routed to beta at once (the cached alpha route
	// is forgotten), and a second apply of alpha's file changes nothing to that.
	if _, err := r.RedeemSharedInvite(ctx, "beta", sharedNum, tenant.InviteCodeHash("WP-CCCCCCCC"), alphaOnly, ""); err != nil {
		t.Fatal(err)
	}
	applyShared(t, s, "alpha", alphaOnly, both)
	if got, err := r.TenantFor(ctx, sharedNum, alphaOnly, ""); err != nil || got != "beta" {
		t.Errorf("alpha's member after beta's code: %q, %v; want beta", got, err)
	}
	if got, err := r.TenantFor(ctx, sharedNum, alphaOnly, tenant.InviteCodeHash("WP-CCCCCCCC")); err != nil || got != "beta" {
		t.Errorf("the used code again from its user (a retried turn): %q, %v; want beta", got, err)
	}

	if ids, err := r.NumberTenants(ctx, sharedNum); err != nil || len(ids) != 2 || ids[0] != "alpha" || ids[1] != "beta" {
		t.Errorf("NumberTenants = %v, %v; want [alpha beta]", ids, err)
	}
	if _, err := r.TenantFor(ctx, "999", stranger, ""); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a number no tenant lists: %v, want ErrNotFound", err)
	}
}
