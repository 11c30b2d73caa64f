package members_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/wapipe/wapipe/internal/contact"
	"github.com/wapipe/wapipe/internal/i18n"
	"github.com/wapipe/wapipe/internal/members"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/tenant"
	"github.com/wapipe/wapipe/internal/testenv"
	"github.com/wapipe/wapipe/internal/turnstate"
	"github.com/wapipe/wapipe/internal/whatsapp"
)

func TestMain(m *testing.M) { os.Exit(testenv.RunWithFirestore(m)) }

const owner, stranger = "6281234567890", "33612345678"

// contactOf is tenantID's contact of the person id names, as a message from them resolves it
// (people.Directory.Sender).
func contactOf(t *testing.T, db *store.DB, tenantID string, id contact.Identity) store.Contact {
	t.Helper()
	res, err := store.NewContacts(db, store.Options{}).Resolve(context.Background(), tenantID, id)
	if err != nil {
		t.Fatalf("Resolve: %v", err)
	}
	return res.Contact
}

// phoneOf is contactOf the person with phone waID.
func phoneOf(t *testing.T, db *store.DB, tenantID, waID string) store.Contact {
	t.Helper()
	return contactOf(t, db, tenantID, contact.Identity{WaID: waID})
}

// TestGate runs the audience rules (once the worker's tenant path without conversations; now the
// first step of every conversation turn) against the stored tenants and invites.
func TestGate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		tenantYAML string
		from, text string
		invite     string // a valid code created before
		joined     bool   // stranger redeemed a code before
		want       members.Admission
		language   string // the member's effective language when served
		redeemed   bool   // stranger is a member afterwards
	}{
		{name: "non-member gets the prompt in the tenant's language", from: stranger, text: "bonjour",
			want: members.Admission{Handled: true, Key: i18n.OnboardingPrompt, Event: "onboarding_prompt"}},
		{name: "valid code: welcome by profile name", from: stranger, text: " wp-7k3m9q2x ", invite: "WP-7K3M9Q2X",
			want: members.Admission{IsMember: true, Handled: true, Key: i18n.WelcomeName, Event: "invite_redeemed"}, redeemed: true},
		{name: "unknown code: invalid code", from: stranger, text: "WP-7K3M9Q2X",
			want: members.Admission{Handled: true, Key: i18n.InvalidCode, Event: "invite_refused"}},
		{name: "file member served in their language", from: owner, text: "halo",
			want: members.Admission{IsMember: true}, language: "id"},
		{name: "runtime member served", from: stranger, text: "bonjour", joined: true,
			want: members.Admission{IsMember: true}, language: "fr", redeemed: true},
		{name: "member resending a code: welcome, nothing redeemed", from: stranger, text: "WP-7K3M9Q2X", joined: true,
			want: members.Admission{IsMember: true, Handled: true, Key: i18n.WelcomeName, Event: "invite_redeemed"}, redeemed: true},
		{name: "public tenant serves anyone", tenantYAML: "audience: public\n", from: stranger, text: "hola",
			want: members.Admission{}, language: "fr"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db, _ := testenv.Store(t)
			tenants := store.NewTenants(db, store.Options{})
			audience := tc.tenantYAML
			if audience == "" {
				audience = "audience: members\n"
			}
			tn, err := tenant.Parse([]byte("id: clinic\nname: Clinic\nlanguage: fr\n" + audience +
				"phone_numbers:\n  - {phone_number_id: \"111\", waba_id: \"900\"}\n" +
				"members:\n  - {wa_id: \"" + owner + "\", role: owner, name: Agus, language: id}\n"))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tenants.Apply(ctx, tn, false); err != nil {
				t.Fatal(err)
			}
			code := tc.invite
			if tc.joined {
				code = "WP-AAAAAAAA"
			}
			if code != "" {
				if err := tenants.CreateInvite(ctx, "clinic", tenant.InviteCodeHash(code), tenant.RoleMember, time.Now().Add(time.Hour)); err != nil {
					t.Fatal(err)
				}
			}
			if tc.joined {
				if _, err := tenants.RedeemInvite(ctx, "clinic", tenant.InviteCodeHash(code), phoneOf(t, db, "clinic", stranger), "Marie"); err != nil {
					t.Fatal(err)
				}
			}
			gate := members.Gate{Store: tenants}
			m := whatsapp.Message{ID: "wamid.1", From: tc.from, ContactName: "Marie", Type: "text", Text: tc.text}
			got, err := gate.Admit(ctx, tn, phoneOf(t, db, "clinic", tc.from), m, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got.Handled != tc.want.Handled || got.IsMember != tc.want.IsMember || got.Key != tc.want.Key || got.Event != tc.want.Event {
				t.Errorf("admission %+v, want %+v", got, tc.want)
			}
			if got.Handled && got.Reply.IsZero() {
				t.Error("handled without a reply")
			}
			if got.Key == i18n.WelcomeName && got.Reply.Text != i18n.Text("fr", i18n.WelcomeName, "name", "Marie") {
				t.Errorf("welcome %q, want by profile name in the tenant's language", got.Reply.Text)
			}
			if !got.Handled {
				if lang := tn.EffectiveLanguage(got.Member); lang != tc.language {
					t.Errorf("served in %q, want %q", lang, tc.language)
				}
			}
			_, isMember, err := gate.Member(ctx, tn, phoneOf(t, db, "clinic", stranger))
			if err != nil || isMember != tc.redeemed {
				t.Errorf("stranger a member afterwards: %v (%v), want %v", isMember, err, tc.redeemed)
			}
		})
	}
}

// TestMemberCodesCountInTheLimits is the red team's code spam: a member who sends code-shaped
// messages over and over got a welcome for each, which the assistant's rate limits never see.
// Each is now counted like a non-member's messages (turnstate.OnboardingMax an hour, in the
// conversation's state): the welcomes stop there, in silence.
func TestMemberCodesCountInTheLimits(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, _ := testenv.Store(t)
	tenants := store.NewTenants(db, store.Options{})
	tn, err := tenant.Parse([]byte("id: clinic\nname: Clinic\nlanguage: fr\naudience: members\n" +
		"phone_numbers:\n  - {phone_number_id: \"111\", waba_id: \"900\"}\n" +
		"members:\n  - {wa_id: \"" + owner + "\", role: owner, name: Agus, language: id}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tenants.Apply(ctx, tn, false); err != nil {
		t.Fatal(err)
	}
	gate := members.Gate{Store: tenants}
	c := phoneOf(t, db, "clinic", owner)
	var st turnstate.State
	now := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	var events []string
	for i := range turnstate.OnboardingMax + 2 {
		m := whatsapp.Message{ID: fmt.Sprintf("wamid.code-%d", i), From: owner, Type: "text", Text: "WP-AAAAAAAA", PhoneNumberID: "111"}
		allow := func() (ok bool) {
			st, ok = st.HitOnboarding(m.ID, now.Add(time.Duration(i)*time.Minute))
			return ok
		}
		adm, err := gate.Admit(ctx, tn, c, m, allow)
		if err != nil {
			t.Fatal(err)
		}
		if !adm.Handled || !adm.IsMember {
			t.Fatalf("code %d: %+v, want handled, from a member", i, adm)
		}
		events = append(events, adm.Event)
	}
	want := slices.Repeat([]string{"invite_redeemed"}, turnstate.OnboardingMax)
	want = append(want, "code_limited", "code_limited")
	if diff := cmp.Diff(want, events); diff != "" {
		t.Errorf("events (-want, +got):\n%s", diff)
	}
}
