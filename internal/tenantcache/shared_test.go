package tenantcache_test

import (
	"context"
	"errors"
	"os"
	"reflect"
	"testing"
	"time"

	"github.com/wapipe/wapipe/internal/contact"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/tenant"
	"github.com/wapipe/wapipe/internal/tenantcache"
	"github.com/wapipe/wapipe/internal/testenv"
)

func TestMain(m *testing.M) { os.Exit(testenv.RunWithFirestore(m)) }

const sharedNum = "106540352242999"

// contactOf is tenantID's contact of the person id names, as a message from them resolves it.
func contactOf(t *testing.T, db *store.DB, tenantID string, id contact.Identity) store.Contact {
	t.Helper()
	res, err := store.NewContacts(db, store.Options{}).Resolve(context.Background(), tenantID, id)
	if err != nil {
		t.Fatalf("Resolve: %v", err)
	}
	return res.Contact
}

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
// tenant, a member goes to their tenant, a member of several with no choice is to be asked (no
// tenant wins by its id) until they tap one, a stranger goes to the number's first tenant (it
// has no primary); a code redeemed, or a tenant chosen, through the router moves the contact at
// once, though its route was cached; a tap on a tenant the contact is not a member of records
// nothing.
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
	if _, err := s.RedeemInvite(ctx, "beta", tenant.InviteCodeHash("WP-DDDDDDDD"), contactOf(t, db, "beta", contact.Identity{WaID: betaByInvite}), ""); err != nil {
		t.Fatal(err)
	}
	r := tenantcache.NewContactRouter(s, tenantcache.NewTenantCache(s, time.Minute), time.Minute)

	tests := []struct {
		name, from, code, want string
	}{
		{"a file member", alphaOnly, "", "alpha"},
		{"a member of both: asked", both, "", ""},
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
		got, err := r.TenantFor(ctx, sharedNum, contact.Identity{WaID: tc.from}, hash)
		if err != nil || got.Tenant != tc.want || (tc.want == "") != (got.Ask != nil) {
			t.Errorf("%s: %+v, %v; want %q", tc.name, got, err, tc.want)
		}
	}
	q, _ := r.TenantFor(ctx, sharedNum, contact.Identity{WaID: both}, "")
	if want := (&tenantcache.Question{Host: "alpha", Choices: []tenantcache.Choice{{"alpha", "alpha"}, {"beta", "beta"}}}); !reflect.DeepEqual(q.Ask, want) {
		t.Errorf("the question to a member of both: %+v, want %+v", q.Ask, want)
	}
	if ok, err := r.Choose(ctx, sharedNum, contact.Identity{WaID: alphaOnly}, "beta"); ok || err != nil {
		t.Errorf("alpha's member taps beta's row: %v, %v; want nothing recorded", ok, err)
	}
	if ok, err := r.Choose(ctx, sharedNum, contact.Identity{WaID: both}, "beta"); !ok || err != nil {
		t.Errorf("the member of both taps beta: %v, %v", ok, err)
	}
	if got, err := r.TenantFor(ctx, sharedNum, contact.Identity{WaID: both}, ""); err != nil || got.Tenant != "beta" {
		t.Errorf("the member of both after choosing beta: %+v, %v", got, err)
	}

	// alpha's file member redeems beta's code: routed to beta at once (the cached alpha route
	// is forgotten), and a second apply of alpha's file changes nothing to that.
	if _, err := r.RedeemSharedInvite(ctx, "beta", sharedNum, tenant.InviteCodeHash("WP-CCCCCCCC"), contactOf(t, db, "beta", contact.Identity{WaID: alphaOnly}), ""); err != nil {
		t.Fatal(err)
	}
	applyShared(t, s, "alpha", alphaOnly, both)
	if got, err := r.TenantFor(ctx, sharedNum, contact.Identity{WaID: alphaOnly}, ""); err != nil || got.Tenant != "beta" {
		t.Errorf("alpha's member after beta's code: %+v, %v; want beta", got, err)
	}
	if got, err := r.TenantFor(ctx, sharedNum, contact.Identity{WaID: alphaOnly}, tenant.InviteCodeHash("WP-CCCCCCCC")); err != nil || got.Tenant != "beta" {
		t.Errorf("the used code again from its user (a retried turn): %+v, %v; want beta", got, err)
	}

	if ids, err := r.NumberTenants(ctx, sharedNum); err != nil || len(ids) != 2 || ids[0] != "alpha" || ids[1] != "beta" {
		t.Errorf("NumberTenants = %v, %v; want [alpha beta]", ids, err)
	}
	if _, err := r.TenantFor(ctx, "999", contact.Identity{WaID: stranger}, ""); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a number no tenant lists: %v, want ErrNotFound", err)
	}
}

// TestContactRouterByUserID: on a shared number, a person who writes by BSUID alone (no phone)
// is routed to the tenant they are a member of: one whose file lists them by user_id; one whose
// file lists them by phone, once their phone and BSUID came together there; one they joined by
// a code sent by BSUID alone. A stranger by BSUID, and a message that names nobody, go to the
// number's first tenant.
func TestContactRouterByUserID(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, _ := testenv.Store(t)
	s := store.NewTenants(db, store.Options{})
	const (
		alphaPhone            = "6281000011"
		listedUserID          = "ID.2222222222"
		betaPhone, betaUserID = "6281000013", "ID.3333333333"
		joinerUserID          = "ID.4444444444"
		latePhone, lateUserID = "6281000015", "ID.5555555555"
		strangerUserID        = "ID.6666666666"
	)
	apply := func(id, members string) {
		tn, err := tenant.Parse([]byte("id: " + id + "\nname: " + id + "\nlanguage: en\naudience: members\nphone_numbers:\n" +
			"  - {phone_number_id: \"" + sharedNum + "\", waba_id: \"900\", shared: true}\nmembers:\n" + members))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Apply(ctx, tn, false); err != nil {
			t.Fatal(err)
		}
	}
	apply("alpha", "  - {wa_id: \""+alphaPhone+"\", role: member}\n")
	apply("beta", "  - {user_id: "+listedUserID+", role: member}\n  - {wa_id: \""+betaPhone+"\", role: admin}\n"+
		"  - {wa_id: \""+latePhone+"\", role: member}\n")
	// beta's member by phone wrote with phone and BSUID together once.
	contactOf(t, db, "beta", contact.Identity{WaID: betaPhone, UserID: betaUserID})
	router := func() *tenantcache.ContactRouter {
		return tenantcache.NewContactRouter(s, tenantcache.NewTenantCache(s, time.Minute), time.Minute)
	}
	r := router()
	// A user with no phone joins beta by its code.
	if err := s.CreateInvite(ctx, "beta", tenant.InviteCodeHash("WP-BBBBBBBB"), tenant.RoleMember, time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	joiner := contact.Identity{UserID: joinerUserID, Username: "joiner"}
	if got, err := r.TenantFor(ctx, sharedNum, joiner, tenant.InviteCodeHash("WP-BBBBBBBB")); err != nil || got.Tenant != "beta" {
		t.Fatalf("the code by BSUID alone: %+v, %v; want beta", got, err)
	}
	if _, err := r.RedeemSharedInvite(ctx, "beta", sharedNum, tenant.InviteCodeHash("WP-BBBBBBBB"), contactOf(t, db, "beta", joiner), ""); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name string
		who  contact.Identity
		want string
	}{
		{"a file member by user_id, by BSUID alone", contact.Identity{UserID: listedUserID}, "beta"},
		{"a file member by phone, by BSUID alone once both came together", contact.Identity{UserID: betaUserID}, "beta"},
		{"the same by phone", contact.Identity{WaID: betaPhone}, "beta"},
		{"a member by a code sent by BSUID alone", contact.Identity{UserID: joinerUserID}, "beta"},
		{"the same with a phone, now shared", contact.Identity{WaID: "6281000014", UserID: joinerUserID}, "beta"},
		{"a file member by phone whose BSUID never came with it", contact.Identity{UserID: lateUserID}, "alpha"},
		{"alpha's file member by phone", contact.Identity{WaID: alphaPhone}, "alpha"},
		{"a stranger by BSUID", contact.Identity{UserID: strangerUserID}, "alpha"},
		{"nobody", contact.Identity{Name: "no identifier"}, "alpha"},
	}
	for _, tc := range tests {
		if got, err := r.TenantFor(ctx, sharedNum, tc.who, ""); err != nil || got.Tenant != tc.want {
			t.Errorf("%s: %+v, %v; want %q", tc.name, got, err, tc.want)
		}
	}

	// The stranger, whose route is cached, joins beta by BSUID alone: routed there at once.
	if err := s.CreateInvite(ctx, "beta", tenant.InviteCodeHash("WP-CCCCCCCC"), tenant.RoleMember, time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	stranger := contactOf(t, db, "beta", contact.Identity{UserID: strangerUserID})
	if _, err := r.RedeemSharedInvite(ctx, "beta", sharedNum, tenant.InviteCodeHash("WP-CCCCCCCC"), stranger, ""); err != nil {
		t.Fatal(err)
	}
	if got, err := r.TenantFor(ctx, sharedNum, contact.Identity{UserID: strangerUserID}, ""); err != nil || got.Tenant != "beta" {
		t.Errorf("the stranger after beta's code by BSUID alone: %+v, %v; want beta", got, err)
	}

	// The late member's phone and BSUID come together: from then on the BSUID alone finds beta
	// (on an instance that did not cache the stranger's route).
	contactOf(t, db, "beta", contact.Identity{WaID: latePhone, UserID: lateUserID})
	if got, err := router().TenantFor(ctx, sharedNum, contact.Identity{UserID: lateUserID}, ""); err != nil || got.Tenant != "beta" {
		t.Errorf("a file member by phone, by BSUID alone after both came together: %+v, %v; want beta", got, err)
	}
}
