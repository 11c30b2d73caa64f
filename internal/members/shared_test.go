package members_test

import (
	"context"
	"testing"
	"time"

	"github.com/wapipe/wapipe/internal/contact"
	"github.com/wapipe/wapipe/internal/i18n"
	"github.com/wapipe/wapipe/internal/members"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/tenant"
	"github.com/wapipe/wapipe/internal/testenv"
	"github.com/wapipe/wapipe/internal/whatsapp"
)

// TestGateSharedNumber: on a shared number a stranger gets the onboarding prompt even from a
// public tenant (routed there only as the number's first tenant), and a code redeemed there goes
// through Moves, which records the contact's choice there and takes it out of no other tenant.
func TestGateSharedNumber(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, _ := testenv.Store(t)
	tenants := store.NewTenants(db, store.Options{})
	parse := func(id, own, audience string) *tenant.Tenant {
		tn, err := tenant.Parse([]byte("id: " + id + "\nname: " + id + "\nlanguage: fr\naudience: " + audience + "\n" +
			"phone_numbers:\n  - {phone_number_id: \"111\", waba_id: \"900\", shared: true}\n  - {phone_number_id: \"" + own + "\", waba_id: \"900\"}\n"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tenants.Apply(ctx, tn, false); err != nil {
			t.Fatal(err)
		}
		return tn
	}
	alpha, beta := parse("alpha", "221", "public"), parse("beta", "222", "members")
	gate := members.Gate{Store: tenants, Moves: tenants}
	msg := func(number, text string) whatsapp.Message {
		return whatsapp.Message{ID: "wamid." + text, From: stranger, ContactName: "Marie", Type: "text", Text: text, PhoneNumberID: number}
	}

	inAlpha, inBeta := phoneOf(t, db, "alpha", stranger), phoneOf(t, db, "beta", stranger)
	adm, err := gate.Admit(ctx, alpha, inAlpha, msg("111", "bonjour"), nil)
	if err != nil || !adm.Handled || adm.Key != i18n.OnboardingPrompt {
		t.Errorf("a stranger on the shared number: %+v, %v; want the onboarding prompt", adm, err)
	}
	adm, err = gate.Admit(ctx, alpha, inAlpha, msg("221", "bonjour"), nil)
	if err != nil || adm.Handled {
		t.Errorf("a stranger on the public tenant's own number: %+v, %v; want served", adm, err)
	}

	for code, id := range map[string]string{"WP-AAAAAAAA": "alpha", "WP-BBBBBBBB": "beta"} {
		if err := tenants.CreateInvite(ctx, id, tenant.InviteCodeHash(code), tenant.RoleMember, time.Now().Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	if adm, err := gate.Admit(ctx, alpha, inAlpha, msg("111", "WP-AAAAAAAA"), nil); err != nil || adm.Key != i18n.WelcomeName {
		t.Fatalf("alpha's code: %+v, %v", adm, err)
	}
	if adm, err := gate.Admit(ctx, beta, inBeta, msg("111", "WP-BBBBBBBB"), nil); err != nil || adm.Key != i18n.WelcomeName {
		t.Fatalf("beta's code: %+v, %v", adm, err)
	}
	// A code on a shared number evicts no one: the contact stays alpha's member, and its choice
	// of beta routes (store.SharedContact.Chosen).
	if _, ok, err := gate.Member(ctx, alpha, inAlpha); err != nil || !ok {
		t.Errorf("beta's code on the shared number took the contact out of alpha: member %v, %v", ok, err)
	}
	if _, ok, err := gate.Member(ctx, beta, inBeta); err != nil || !ok {
		t.Errorf("not beta's member after beta's code: %v, %v", ok, err)
	}
}

// TestGateSharedNumberFileMemberPicksBack: a file member of beta who chose alpha on the shared
// number by alpha's code picks beta back with beta's code (redeemed, though already beta's).
func TestGateSharedNumberFileMemberPicksBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, _ := testenv.Store(t)
	tenants := store.NewTenants(db, store.Options{})
	parse := func(id, extra string) *tenant.Tenant {
		tn, err := tenant.Parse([]byte("id: " + id + "\nname: " + id + "\nlanguage: fr\naudience: members\n" +
			"phone_numbers:\n  - {phone_number_id: \"111\", waba_id: \"900\", shared: true}\n" + extra))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tenants.Apply(ctx, tn, false); err != nil {
			t.Fatal(err)
		}
		return tn
	}
	alpha, beta := parse("alpha", ""), parse("beta", "members:\n  - {wa_id: \""+stranger+"\", role: admin}\n")
	for code, id := range map[string]string{"WP-AAAAAAAA": "alpha", "WP-BBBBBBBB": "beta"} {
		if err := tenants.CreateInvite(ctx, id, tenant.InviteCodeHash(code), tenant.RoleMember, time.Now().Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	gate := members.Gate{Store: tenants, Moves: tenants}
	inAlpha, inBeta := phoneOf(t, db, "alpha", stranger), phoneOf(t, db, "beta", stranger)
	m := whatsapp.Message{ID: "wamid.a", From: stranger, Type: "text", Text: "WP-AAAAAAAA", PhoneNumberID: "111"}
	if adm, err := gate.Admit(ctx, alpha, inAlpha, m, nil); err != nil || adm.Event != "invite_redeemed" {
		t.Fatalf("alpha's code: %+v, %v", adm, err)
	}
	m.ID, m.Text = "wamid.b", "WP-BBBBBBBB"
	if adm, err := gate.Admit(ctx, beta, inBeta, m, nil); err != nil || adm.Event != "invite_redeemed" {
		t.Fatalf("beta's code from beta's file member: %+v, %v", adm, err)
	}
	sc, err := tenants.SharedContact(ctx, "111", []string{"alpha", "beta"}, contact.Identity{WaID: stranger})
	if err != nil || sc.Chosen != "beta" {
		t.Errorf("the contact's choice on the shared number: %+v, %v; want beta", sc, err)
	}
	if mem, ok, err := gate.Member(ctx, beta, inBeta); err != nil || !ok || mem.Role != tenant.RoleAdmin {
		t.Errorf("beta's member: %+v %v %v; want the file's admin", mem, ok, err)
	}
	// The same code again (a retried turn): a welcome, nothing else.
	if adm, err := gate.Admit(ctx, beta, inBeta, m, nil); err != nil || adm.Event != "invite_redeemed" {
		t.Errorf("beta's code again: %+v, %v", adm, err)
	}
}
