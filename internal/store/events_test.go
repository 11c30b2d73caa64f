package store_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wapipe/wapipe/internal/assistant"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/testenv"
)

// eventStores are the stores Meta's other events write, on one database.
type eventStores struct {
	tenants *store.Tenants
	convs   *store.ConversationStore
	prefs   *store.ContactPrefs
	clk     *clock
}

func newEventStores(t *testing.T) eventStores {
	t.Helper()
	db, _ := testenv.Store(t)
	clk := &clock{now: time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)}
	opts := store.Options{Now: clk.Now}
	return eventStores{store.NewTenants(db, opts), store.NewConversationStore(db, opts), store.NewContactPrefs(db, opts), clk}
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

// TestMoveContactKeepsAMemberAMember: after user_changed_number the new number is a member of
// each tenant the old one was (by invite or by file), and its open conversation continues under
// it with its state.
func TestMoveContactKeepsAMemberAMember(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newEventStores(t)
	const number = "106540352242922"
	byFile := contractTenant(t) // lists 6281234567890 as owner
	mustApply(t, s.tenants, byFile)
	byInvite := simpleTenant(t, "travel", "200")
	mustApply(t, s.tenants, byInvite)
	const oldNo, newNo = "6281234567890", "6289999999999"
	if err := s.tenants.CreateInvite(ctx, "travel", "hash1", "admin", s.clk.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.tenants.RedeemInvite(ctx, "travel", "hash1", oldNo, "Agus"); err != nil {
		t.Fatal(err)
	}
	oldConv := store.ConversationID(byFile.ID, number, oldNo)
	pending := &assistant.PendingAction{ActionID: "act_1", Intent: "book", MessageID: "wamid.P", Summary: "bus 01"}
	touch := &store.Touch{TenantID: byFile.ID, PhoneNumberID: number, Contact: oldNo, ContactName: "Agus"}
	conv, ok, err := s.convs.Acquire(ctx, oldConv, "h1", time.Minute, touch)
	if err != nil || !ok {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	if _, _, err := s.convs.AddInbound(ctx, oldConv, store.Message{MessageID: "wamid.P", Type: "text", Timestamp: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.convs.CommitTurn(ctx, oldConv, conv.Lease, "wamid.P", store.TurnCommit{State: assistant.State{Pending: pending}}, time.Minute); err != nil {
		t.Fatal(err)
	}

	res, err := s.tenants.MoveContact(ctx, oldNo, newNo)
	if err != nil {
		t.Fatal(err)
	}
	newConv := store.ConversationID(byFile.ID, number, newNo)
	want := store.MoveResult{Memberships: []string{byFile.ID, "travel"}, Conversations: []string{newConv}, FileMembers: []string{byFile.ID}}
	if diff := cmp.Diff(want, res); diff != "" {
		t.Errorf("MoveContact (-want, +got):\n%s", diff)
	}
	for _, tc := range []struct {
		tenant string
		role   string
	}{{byFile.ID, "owner"}, {"travel", "admin"}} {
		m, ok, err := s.tenants.RuntimeMember(ctx, tc.tenant, newNo)
		if err != nil || !ok || string(m.Role) != tc.role {
			t.Errorf("%s: new number member = %+v, %v, %v; want a %s", tc.tenant, m, ok, err, tc.role)
		}
	}
	if _, ok, _ := s.tenants.RuntimeMember(ctx, "travel", oldNo); ok {
		t.Error("travel: the old number is still a member by invite")
	}
	got, err := s.convs.Get(ctx, newConv)
	if err != nil {
		t.Fatalf("the new number's conversation: %v", err)
	}
	if got.Contact != newNo || got.MovedFrom != oldConv || got.Status != store.ConversationOpen || got.State.Pending == nil || got.State.Pending.ActionID != "act_1" || got.Lease.Holder != "" {
		t.Errorf("new conversation = %+v; want the old one's state under the new number, no lease", got)
	}
	old, _ := s.convs.Get(ctx, oldConv)
	if old.Status != store.ConversationClosed || old.MovedTo != newConv {
		t.Errorf("old conversation status %q moved_to %q; want closed, moved to %s", old.Status, old.MovedTo, newConv)
	}
	again, err := s.tenants.MoveContact(ctx, oldNo, newNo)
	if err != nil || len(again.Conversations) != 0 || len(again.Memberships) != 1 {
		// The file still lists the old number: its membership is found again, and writes nothing new.
		t.Errorf("second MoveContact = %+v, %v; want only the file's member found again", again, err)
	}
}

// TestMarketingPreference: a stop is recorded per contact, an older event does not undo a newer
// one, and only a MARKETING template to a stopped contact is refused.
func TestMarketingPreference(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newEventStores(t)
	const tn, contact = "acme", "6281234567890"
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
	if p, _ := s.prefs.Preference(ctx, "other", contact); p.MarketingStopped {
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
