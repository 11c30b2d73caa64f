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

// BSUIDs of the tests' people.
const (
	ownerUserID    = "ID.7781234567890"     // the owner, listed in the file by phone
	listedUserID   = "FR.3300112233445566"  // a member the file lists by user_id
	strangerUserID = "FR.99988877766655544" // nobody the tenant knows
)

// clinic applies the test tenant of audience members: the owner listed by phone, an admin by
// user_id.
func clinic(t *testing.T, tenants *store.Tenants) *tenant.Tenant {
	t.Helper()
	tn, err := tenant.Parse([]byte("id: clinic\nname: Clinic\nlanguage: fr\naudience: members\n" +
		"phone_numbers:\n  - {phone_number_id: \"111\", waba_id: \"900\"}\n" +
		"members:\n  - {wa_id: \"" + owner + "\", role: owner, name: Agus, language: id}\n" +
		"  - {user_id: " + listedUserID + ", role: admin, name: Sam}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tenants.Apply(context.Background(), tn, false); err != nil {
		t.Fatal(err)
	}
	return tn
}

// byUserID is a text message that names its sender by BSUID alone, as Meta sends it for a user
// with a username who did not share their phone.
func byUserID(userID, text string) whatsapp.Message {
	return whatsapp.Message{ID: "wamid." + text, FromUserID: userID, Username: "marie", ContactName: "Marie", Type: "text", Text: text,
		PhoneNumberID: "111"}
}

// TestGateFileMemberWritingByUserID (CONTRACT.md, Wave 4): a file member listed by phone who
// writes by BSUID alone is a member once their phone and BSUID arrived together (their contact
// has both), and a stranger before; a member listed by user_id is one by it.
func TestGateFileMemberWritingByUserID(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, _ := testenv.Store(t)
	tenants := store.NewTenants(db, store.Options{})
	tn := clinic(t, tenants)
	gate := members.Gate{Store: tenants}

	// Before Meta sent the phone with the BSUID, nothing ties the BSUID to the file's entry.
	early := contactOf(t, db, "clinic", contact.Identity{UserID: ownerUserID})
	if adm, err := gate.Admit(ctx, tn, early, byUserID(ownerUserID, "halo"), nil); err != nil || adm.IsMember || adm.Key != i18n.OnboardingPrompt {
		t.Errorf("the owner's BSUID before it came with the phone: %+v, %v; want a stranger", adm, err)
	}

	// A message with both: the BSUID's contact and the phone's are one, and a member.
	both := contactOf(t, db, "clinic", contact.Identity{WaID: owner, UserID: ownerUserID})
	if both.WaID != owner || both.UserID != ownerUserID {
		t.Fatalf("contact of phone and BSUID = %+v; want both", both)
	}
	m := byUserID(ownerUserID, "halo")
	m.From = owner
	if adm, err := gate.Admit(ctx, tn, both, m, nil); err != nil || !adm.IsMember || adm.Handled || adm.Member.Role != tenant.RoleOwner {
		t.Errorf("the owner by phone and BSUID: %+v, %v; want the file's owner, served", adm, err)
	}

	// Then by BSUID alone: the same contact, still the owner, served in their language.
	later := contactOf(t, db, "clinic", contact.Identity{UserID: ownerUserID, Username: "agus"})
	if later.ID != both.ID || later.WaID != owner {
		t.Errorf("contact by BSUID alone = %+v; want %s, with the phone", later, both.ID)
	}
	adm, err := gate.Admit(ctx, tn, later, byUserID(ownerUserID, "halo lagi"), nil)
	if err != nil || !adm.IsMember || adm.Handled || adm.Member.Role != tenant.RoleOwner || tn.EffectiveLanguage(adm.Member) != "id" {
		t.Errorf("the owner by BSUID alone: %+v, %v; want the file's owner, served in id", adm, err)
	}

	// A member the file lists by user_id, and a stranger by BSUID.
	sam := contactOf(t, db, "clinic", contact.Identity{UserID: listedUserID})
	if adm, err := gate.Admit(ctx, tn, sam, byUserID(listedUserID, "bonjour"), nil); err != nil || !adm.IsMember || adm.Member.Role != tenant.RoleAdmin {
		t.Errorf("a member listed by user_id: %+v, %v; want the file's admin", adm, err)
	}
	nobody := contactOf(t, db, "clinic", contact.Identity{UserID: strangerUserID})
	if adm, err := gate.Admit(ctx, tn, nobody, byUserID(strangerUserID, "bonjour"), nil); err != nil || adm.IsMember || adm.Key != i18n.OnboardingPrompt {
		t.Errorf("a stranger by BSUID: %+v, %v; want the onboarding prompt", adm, err)
	}
}

// TestInviteRedeemedByUserIDAlone: a user who never shared a phone redeems an invite code; their
// contact (by BSUID) is a member from then on (RuntimeMember finds it), and still is when the
// phone arrives with the BSUID later.
func TestInviteRedeemedByUserIDAlone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, _ := testenv.Store(t)
	tenants := store.NewTenants(db, store.Options{})
	tn := clinic(t, tenants)
	gate := members.Gate{Store: tenants}
	const code = "WP-7K3M9Q2X"
	if err := tenants.CreateInvite(ctx, "clinic", tenant.InviteCodeHash(code), tenant.RoleMember, time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	marie := contactOf(t, db, "clinic", contact.Identity{UserID: strangerUserID, Username: "marie", Name: "Marie"})
	if marie.WaID != "" {
		t.Fatalf("contact = %+v; want no phone", marie)
	}
	adm, err := gate.Admit(ctx, tn, marie, byUserID(strangerUserID, code), nil)
	if err != nil || !adm.IsMember || !adm.Handled || adm.Key != i18n.WelcomeName || adm.Event != "invite_redeemed" {
		t.Fatalf("the code by BSUID alone: %+v, %v; want welcomed as a member", adm, err)
	}
	if adm.Reply.Text != i18n.Text("fr", i18n.WelcomeName, "name", "Marie") {
		t.Errorf("welcome %q, want by profile name", adm.Reply.Text)
	}
	m, ok, err := tenants.RuntimeMember(ctx, "clinic", marie)
	if err != nil || !ok || m.Role != tenant.RoleMember || m.UserID != strangerUserID || m.WaID != "" {
		t.Errorf("RuntimeMember = %+v, %v, %v; want a member by BSUID", m, ok, err)
	}
	if adm, err := gate.Admit(ctx, tn, marie, byUserID(strangerUserID, "bonjour"), nil); err != nil || !adm.IsMember || adm.Handled {
		t.Errorf("the new member's next message: %+v, %v; want served", adm, err)
	}
	// The phone arrives with the BSUID: the same contact, the same membership.
	later := contactOf(t, db, "clinic", contact.Identity{WaID: stranger, UserID: strangerUserID})
	if later.ID != marie.ID {
		t.Fatalf("contact of phone and BSUID = %s, want %s", later.ID, marie.ID)
	}
	if _, ok, err := gate.Member(ctx, tn, phoneOf(t, db, "clinic", stranger)); err != nil || !ok {
		t.Errorf("a member by phone once it came with the BSUID: %v, %v", ok, err)
	}
}
