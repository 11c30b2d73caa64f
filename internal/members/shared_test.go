package members_test

import (
	"context"
	"testing"
	"time"

	"github.com/wapipe/wapipe/internal/i18n"
	"github.com/wapipe/wapipe/internal/members"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/tenant"
	"github.com/wapipe/wapipe/internal/testenv"
	"github.com/wapipe/wapipe/internal/whatsapp"
)

// TestGateSharedNumber: on a shared number a stranger gets the onboarding prompt even from a
// public tenant (routed there only as the number's first tenant), and a code redeemed there goes
// through Moves, which takes the contact out of the number's other tenants.
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

	adm, err := gate.Admit(ctx, alpha, msg("111", "bonjour"), nil)
	if err != nil || !adm.Handled || adm.Key != i18n.OnboardingPrompt {
		t.Errorf("a stranger on the shared number: %+v, %v; want the onboarding prompt", adm, err)
	}
	adm, err = gate.Admit(ctx, alpha, msg("221", "bonjour"), nil)
	if err != nil || adm.Handled {
		t.Errorf("a stranger on the public tenant's own number: %+v, %v; want served", adm, err)
	}

	for code, id := range map[string]string{"WP-AAAAAAAA": "alpha", "WP-BBBBBBBB": "beta"} {
		if err := tenants.CreateInvite(ctx, id, tenant.InviteCodeHash(code), tenant.RoleMember, time.Now().Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	if adm, err := gate.Admit(ctx, alpha, msg("111", "WP-AAAAAAAA"), nil); err != nil || adm.Key != i18n.WelcomeName {
		t.Fatalf("alpha's code: %+v, %v", adm, err)
	}
	if adm, err := gate.Admit(ctx, beta, msg("111", "WP-BBBBBBBB"), nil); err != nil || adm.Key != i18n.WelcomeName {
		t.Fatalf("beta's code: %+v, %v", adm, err)
	}
	if _, ok, err := gate.Member(ctx, alpha, stranger); err != nil || ok {
		t.Errorf("still alpha's member after beta's code on the shared number: %v, %v", ok, err)
	}
	if _, ok, err := gate.Member(ctx, beta, stranger); err != nil || !ok {
		t.Errorf("not beta's member after beta's code: %v, %v", ok, err)
	}
}
