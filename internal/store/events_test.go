package store_test

import (
	"context"
	"strings"
	"testing"
	"time"

	contactpkg "github.com/wapipe/wapipe/internal/contact"
	"github.com/wapipe/wapipe/internal/keyedid"
	"github.com/wapipe/wapipe/internal/tenant"

	"github.com/google/go-cmp/cmp"

	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/testenv"
	"github.com/wapipe/wapipe/internal/turnstate"
)

// eventStores are the stores Meta's other events write, on one database.
type eventStores struct {
	tenants  *store.Tenants
	convs    *store.ConversationStore
	prefs    *store.ContactPrefs
	clk      *clock
	contacts *store.Contacts
}

func newEventStores(t *testing.T) eventStores {
	t.Helper()
	db, _ := testenv.Store(t)
	clk := &clock{now: time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)}
	opts := store.Options{Now: clk.Now}
	return eventStores{store.NewTenants(db, opts), store.NewConversationStore(db, opts), store.NewContactPrefs(db, opts), clk,
		store.NewContacts(db, opts)}
}

// contact resolves id for tenantID.
func (s eventStores) contact(t *testing.T, tenantID string, id contactpkg.Identity) store.Contact {
	t.Helper()
	res, err := s.contacts.Resolve(context.Background(), tenantID, id)
	if err != nil {
		t.Fatal(err)
	}
	return res.Contact
}

// TestEraseMessage: a revoke erases the stored text, caption, filename and payload (read back
// from Firestore); the message stays, marked deleted, and one still waiting for its turn leaves
// the inbox.
func TestEraseMessage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newEventStores(t)
	conv := "conv_erase"
	doc := store.Message{MessageID: "wamid.DOC", Type: "document", Text: "invoice for Budi", Timestamp: 1, Payload: `{"text":"invoice for Budi"}`,
		Media: &store.Media{MIMEType: "application/pdf", SHA256: "ab", Size: 3, Caption: "invoice for Budi", Filename: "budi-invoice.pdf"}}
	if _, _, err := s.convs.AddInbound(ctx, conv, doc); err != nil {
		t.Fatal(err)
	}
	found, err := s.convs.EraseMessage(ctx, conv, "wamid.DOC")
	if err != nil || !found {
		t.Fatalf("EraseMessage = %v, %v; want found", found, err)
	}
	got, err := s.convs.GetMessage(ctx, conv, "wamid.DOC")
	if err != nil {
		t.Fatal(err)
	}
	if got.Text != "" || got.Payload != "" || got.Media.Caption != "" || got.Media.Filename != "" {
		t.Errorf("erased message keeps content: text %q payload %q caption %q filename %q", got.Text, got.Payload, got.Media.Caption, got.Media.Filename)
	}
	if got.DeletedAt.IsZero() || got.MessageID != "wamid.DOC" || got.Media.SHA256 != "ab" {
		t.Errorf("erased message = %+v: want it kept, marked deleted", got)
	}
	if got.InInbox || got.Turn != store.TurnDone || got.Event != store.EventMessageDeleted {
		t.Errorf("pending message deleted: inbox %v turn %q event %q; want out of the inbox, done, %q", got.InInbox, got.Turn, got.Event, store.EventMessageDeleted)
	}
	if _, ok, err := s.convs.NextInbox(ctx, conv, ""); err != nil || ok {
		t.Errorf("NextInbox after the revoke = %v, %v; want nothing to answer", ok, err)
	}
	s.clk.Add(time.Minute)
	if found, err := s.convs.EraseMessage(ctx, conv, "wamid.DOC"); err != nil || !found {
		t.Fatalf("second EraseMessage = %v, %v", found, err)
	}
	again, _ := s.convs.GetMessage(ctx, conv, "wamid.DOC")
	if !again.DeletedAt.Equal(got.DeletedAt) {
		t.Errorf("second erase moved deleted_at from %v to %v", got.DeletedAt, again.DeletedAt)
	}
	if found, err := s.convs.EraseMessage(ctx, conv, "wamid.UNKNOWN"); err != nil || found {
		t.Errorf("EraseMessage of an unknown message = %v, %v; want not found", found, err)
	}
}

// TestEditMessage: an edit gives the stored message its new content, marked edited; a deleted
// message stays deleted.
func TestEditMessage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newEventStores(t)
	conv := "conv_edit"
	for _, m := range []store.Message{
		{MessageID: "wamid.T", Type: "text", Text: "bus 01 on 1 March", Timestamp: 1, Payload: "{}"},
		{MessageID: "wamid.I", Type: "image", Text: "old caption", Timestamp: 2, Payload: "{}", Media: &store.Media{MIMEType: "image/jpeg", Caption: "old caption"}},
		{MessageID: "wamid.D", Type: "text", Text: "secret", Timestamp: 3, Payload: "{}"},
	} {
		if _, _, err := s.convs.AddInbound(ctx, conv, m); err != nil {
			t.Fatal(err)
		}
	}
	for id, text := range map[string]string{"wamid.T": "bus 02 on 2 March", "wamid.I": "new caption"} {
		if found, err := s.convs.EditMessage(ctx, conv, id, text); err != nil || !found {
			t.Fatalf("EditMessage %s = %v, %v", id, found, err)
		}
		got, _ := s.convs.GetMessage(ctx, conv, id)
		if got.Text != text || got.EditedAt.IsZero() || (got.Media != nil && got.Media.Caption != text) {
			t.Errorf("edited %s = text %q edited_at %v media %+v; want %q, marked edited", id, got.Text, got.EditedAt, got.Media, text)
		}
	}
	if _, err := s.convs.EraseMessage(ctx, conv, "wamid.D"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.convs.EditMessage(ctx, conv, "wamid.D", "back"); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.convs.GetMessage(ctx, conv, "wamid.D"); got.Text != "" || !got.EditedAt.IsZero() {
		t.Errorf("edit of a deleted message = text %q edited_at %v; want it to stay deleted", got.Text, got.EditedAt)
	}
}

// TestAbsorbCarriesWhatTheContactHad: when two contacts turn out to be one person, the absorbed
// one's open conversation continues under the survivor with its state (a pending action, the
// assignment), its membership by invite becomes the survivor's, and so does its marketing
// preference; doing it again changes nothing more.
func TestAbsorbCarriesWhatTheContactHad(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newEventStores(t)
	const number = "106540352242922"
	mustApply(t, s.tenants, simpleTenant(t, "travel", number))
	from := s.contact(t, "travel", contactpkg.Identity{WaID: "6281234567890"})
	into := s.contact(t, "travel", contactpkg.Identity{UserID: "ID.1349120865530"})
	if err := s.tenants.CreateInvite(ctx, "travel", "hash1", "admin", s.clk.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.tenants.RedeemInvite(ctx, "travel", "hash1", from, "Agus"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.prefs.SetMarketing(ctx, "travel", from, true, 100); err != nil {
		t.Fatal(err)
	}
	oldConv := store.ConversationID(keyedid.Dev(), "travel", number, from.ID)
	pending := &turnstate.PendingAction{ActionID: "act_1", Intent: "book", MessageID: "wamid.P", Summary: "bus 01"}
	touch := &store.Touch{TenantID: "travel", PhoneNumberID: number, ContactID: from.ID, Contact: from.WaID, ContactName: "Agus"}
	conv, ok, err := s.convs.Acquire(ctx, oldConv, "h1", time.Minute, touch)
	if err != nil || !ok {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	if _, _, err := s.convs.AddInbound(ctx, oldConv, store.Message{MessageID: "wamid.P", Type: "text", Timestamp: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.convs.CommitTurn(ctx, oldConv, conv.Lease, "wamid.P", store.TurnCommit{State: turnstate.State{Pending: pending}}, time.Minute); err != nil {
		t.Fatal(err)
	}

	res, err := s.tenants.Absorb(ctx, "travel", from, into)
	if err != nil {
		t.Fatal(err)
	}
	newConv := store.ConversationID(keyedid.Dev(), "travel", number, into.ID)
	if diff := cmp.Diff(store.AbsorbResult{Conversations: []string{newConv}, Membership: true}, res); diff != "" {
		t.Errorf("Absorb (-want, +got):\n%s", diff)
	}
	if m, ok, err := s.tenants.RuntimeMember(ctx, "travel", into); err != nil || !ok || m.Role != "admin" {
		t.Errorf("survivor's membership = %+v, %v, %v; want an admin", m, ok, err)
	}
	if _, ok, _ := s.tenants.RuntimeMember(ctx, "travel", store.Contact{ID: from.ID}); ok {
		t.Error("the absorbed contact is still a member")
	}
	got, err := s.convs.Get(ctx, newConv)
	if err != nil {
		t.Fatalf("the survivor's conversation: %v", err)
	}
	if got.ContactID != into.ID || got.MovedFrom != oldConv || got.Status != store.ConversationOpen || got.State.Pending == nil ||
		got.State.Pending.ActionID != "act_1" || got.Lease.Holder != "" {
		t.Errorf("new conversation = %+v; want the old one's state under the survivor, no lease", got)
	}
	old, _ := s.convs.Get(ctx, oldConv)
	if old.Status != store.ConversationClosed || old.MovedTo != newConv {
		t.Errorf("old conversation status %q moved_to %q; want closed, moved to %s", old.Status, old.MovedTo, newConv)
	}
	if p, _ := s.prefs.Preference(ctx, "travel", into); !p.MarketingStopped {
		t.Error("the absorbed contact's stop did not follow")
	}
	again, err := s.tenants.Absorb(ctx, "travel", from, into)
	if err != nil || len(again.Conversations) != 0 || again.Membership {
		t.Errorf("second Absorb = %+v, %v; want nothing more", again, err)
	}
}

// TestSuspendFileMember: a file member whose owner changed number no longer counts (the number
// may be given to someone else) while the file lists it; the person keeps the role by a member
// document; an apply that no longer lists the phone lifts the suspension.
func TestSuspendFileMember(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newEventStores(t)
	tn := contractTenant(t) // lists 6281234567890 as owner
	mustApply(t, s.tenants, tn)
	const old = "6281234567890"
	person := s.contact(t, tn.ID, contactpkg.Identity{WaID: "6289999999999", UserID: "ID.777"})
	fm, _ := tn.MemberOf(contactpkg.Identity{WaID: old})
	if granted, err := s.tenants.GrantMember(ctx, tn.ID, person, fm, store.InviteMovedNumber); err != nil || !granted {
		t.Fatalf("GrantMember = %v, %v", granted, err)
	}
	for round := 0; round < 2; round++ {
		suspended, err := s.tenants.SuspendFileMember(ctx, tn.ID, old)
		if err != nil || suspended != (round == 0) {
			t.Errorf("round %d: SuspendFileMember = %v, %v", round, suspended, err)
		}
	}
	rec, err := s.tenants.Get(ctx, tn.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := rec.Tenant.MemberOf(contactpkg.Identity{WaID: old}); ok || len(rec.Suspended) != 1 || rec.Suspended[0].WaID != old {
		t.Errorf("after the suspension: members %+v suspended %+v; want the old phone out", rec.Tenant.Members, rec.Suspended)
	}
	if m, ok, _ := s.tenants.RuntimeMember(ctx, tn.ID, person); !ok || m.Role != tenant.RoleOwner {
		t.Errorf("the person's own membership = %+v, %v; want the file's owner role", m, ok)
	}
	if res := mustApply(t, s.tenants, tn); len(res.Suspended) != 1 {
		t.Errorf("re-applying the same file: suspended %+v; want the old phone still suspended and named", res.Suspended)
	}
	if rec, _ := s.tenants.Get(ctx, tn.ID); len(rec.Suspended) != 1 {
		t.Error("re-applying the same file lifted the suspension")
	}
	edited := contractTenant(t)
	edited.Members = []tenant.Member{{UserID: "ID.777", Role: tenant.RoleOwner, Name: "Pak Agus"}}
	mustApply(t, s.tenants, edited)
	rec, _ = s.tenants.Get(ctx, tn.ID)
	if len(rec.Suspended) != 0 {
		t.Errorf("the file no longer lists the phone, still suspended: %+v", rec.Suspended)
	}
	if _, ok := rec.Tenant.MemberOf(person.Identity); !ok {
		t.Error("the file's member by user_id is not found by the person's BSUID")
	}
}

// TestMarketingPreference: a stop is recorded per contact, an older event does not undo a newer
// one, and only a MARKETING template to a stopped contact is refused.
func TestMarketingPreference(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newEventStores(t)
	const tn = "acme"
	contact := s.contact(t, tn, contactpkg.Identity{WaID: "6281234567890"})
	for _, tpl := range []store.Template{
		{TenantID: tn, Name: "promo", Language: "en_US", Status: "APPROVED", Category: "MARKETING"},
		{TenantID: tn, Name: "ticket", Language: "en_US", Status: "APPROVED", Category: "UTILITY"},
	} {
		if err := s.prefs.RecordTemplate(ctx, tpl); err != nil {
			t.Fatal(err)
		}
	}
	refused := func(name string) bool {
		t.Helper()
		r, err := s.prefs.OptedOutOfMarketing(ctx, tn, contact, name, "en_US")
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	if refused("promo") {
		t.Error("promo refused before any preference")
	}
	if changed, err := s.prefs.SetMarketing(ctx, tn, contact, true, 100); err != nil || !changed {
		t.Fatalf("stop = %v, %v", changed, err)
	}
	if !refused("promo") || refused("ticket") || refused("unknown_template") {
		t.Errorf("after stop: promo %v ticket %v unknown %v; want only promo refused", refused("promo"), refused("ticket"), refused("unknown_template"))
	}
	if changed, _ := s.prefs.SetMarketing(ctx, tn, contact, false, 90); changed || !refused("promo") {
		t.Error("an older resume undid a newer stop")
	}
	if changed, _ := s.prefs.SetMarketing(ctx, tn, contact, false, 110); !changed || refused("promo") {
		t.Error("a newer resume did not lift the stop")
	}
	if p, _ := s.prefs.Preference(ctx, "other", store.Contact{ID: contact.ID}); p.MarketingStopped {
		t.Error("a preference leaked to another tenant")
	}
	// A category update keeps the status recorded before.
	if err := s.prefs.RecordTemplate(ctx, store.Template{TenantID: tn, Name: "ticket", Language: "en_US", Category: "marketing"}); err != nil {
		t.Fatal(err)
	}
	if _, _ = s.prefs.SetMarketing(ctx, tn, contact, true, 120); !refused("ticket") {
		t.Error("a template recategorised MARKETING is not refused")
	}
}

// TestAccountUpdateOnTheTenantOwningTheWABA: a restriction is recorded on every tenant with a
// number of the WABA, named by RestrictedAccounts, and lifted by Meta's update that lifts it.
func TestAccountUpdateOnTheTenantOwningTheWABA(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newEventStores(t)
	mustApply(t, s.tenants, simpleTenant(t, "acme", "301")) // WABA 900
	mustApply(t, s.tenants, contractTenant(t))              // another WABA
	ids, err := s.tenants.RecordAccountUpdate(ctx, "900", "ACCOUNT_RESTRICTION", "RESTRICTED_BIZ_INITIATED_MESSAGING")
	if err != nil || !cmp.Equal(ids, []string{"acme"}) {
		t.Fatalf("RecordAccountUpdate = %v, %v; want [acme]", ids, err)
	}
	rec, _ := s.tenants.Get(ctx, "acme")
	if !rec.Account.Restricted || rec.Account.Event != "ACCOUNT_RESTRICTION" || rec.Account.WABAID != "900" {
		t.Errorf("acme account = %+v; want restricted", rec.Account)
	}
	names, err := s.tenants.RestrictedAccounts(ctx)
	if err != nil || len(names) != 1 || !strings.HasPrefix(names[0], "acme: ACCOUNT_RESTRICTION (RESTRICTED_BIZ_INITIATED_MESSAGING)") {
		t.Errorf("RestrictedAccounts = %q, %v; want acme's restriction", names, err)
	}
	if ids, _ := s.tenants.RecordAccountUpdate(ctx, "900", "VERIFIED_ACCOUNT", ""); len(ids) != 0 {
		t.Errorf("an event that neither restricts nor lifts was recorded on %v", ids)
	}
	mustApply(t, s.tenants, simpleTenant(t, "acme", "301")) // an apply keeps the account status
	if rec, _ := s.tenants.Get(ctx, "acme"); !rec.Account.Restricted {
		t.Error("apply erased the account status")
	}
	if _, err := s.tenants.RecordAccountUpdate(ctx, "900", "ACCOUNT_RESTRICTION", ""); err != nil {
		t.Fatal(err)
	}
	if names, _ := s.tenants.RestrictedAccounts(ctx); len(names) != 0 {
		t.Errorf("after the lift RestrictedAccounts = %q", names)
	}
	if ids, _ := s.tenants.RecordAccountUpdate(ctx, "unknown-waba", "PARTNER_REMOVED", ""); len(ids) != 0 {
		t.Errorf("an unknown WABA recorded on %v", ids)
	}
}
