package store_test

import (
	"context"
	"testing"
	"time"

	"cloud.google.com/go/firestore"
	"github.com/google/go-cmp/cmp"

	"github.com/wapipe/wapipe/internal/contact"
	"github.com/wapipe/wapipe/internal/keyedid"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/tenant"
	"github.com/wapipe/wapipe/internal/testenv"
	"github.com/wapipe/wapipe/internal/turnstate"
	"github.com/wapipe/wapipe/tasks"
)

// legacyWorld is what wapipe wrote before contacts (commit b8184a4 and earlier), for one
// person known by phone: the documents are written here field for field as that code wrote
// them, under the ids it gave them (a plain hash of the phone, or the phone itself).
type legacyWorld struct {
	tenantID, number, phone, sharedNumber string
	conversationID                        string
	replyKey                              string
	period                                string
}

const (
	legacyPhone  = "6281234500001"
	legacyNumber = "106540352242922"
	legacyShared = "106540352242930"
)

// writeLegacy writes the person's conversation (a committed turn whose reply is in flight under
// its unkeyed key, a pending action, the 24-hour window), membership by invite, the invite it
// used, sender window, quota share, marketing stop and choice on a shared number.
func writeLegacy(t *testing.T, fs *firestore.Client, tenants *store.Tenants, now time.Time) legacyWorld {
	t.Helper()
	w := legacyWorld{tenantID: "acme", number: legacyNumber, phone: legacyPhone, sharedNumber: legacyShared,
		period: now.UTC().Format("2006-01")}
	acme := simpleTenant(t, "acme", legacyNumber)
	acme.PhoneNumbers = append(acme.PhoneNumbers, tenant.PhoneNumber{PhoneNumberID: legacyShared, WABAID: "900", Shared: true})
	mustApply(t, tenants, acme)
	other := simpleTenant(t, "other", legacyShared)
	other.PhoneNumbers[0].Shared = true
	mustApply(t, tenants, other)

	w.conversationID = store.LegacyConversationID(w.tenantID, w.number, w.phone)
	w.replyKey = tasks.LegacyReplyKey("wamid.LEGACY", 0)
	conv := store.Conversation{ID: w.conversationID, TenantID: w.tenantID, PhoneNumberID: w.number, Contact: w.phone,
		ContactName: "Agus", Status: store.ConversationOpen, LastMessageAt: now, LastInboundAt: now.Add(-time.Hour),
		State: turnstate.State{Pending: &turnstate.PendingAction{ActionID: "act_legacy", Intent: "book", MessageID: "wamid.LEGACY",
			Summary: "bus 01", ExpiresAt: now.Add(30 * time.Minute)}},
		Lease: store.Lease{Fence: 3}, CreatedAt: now.Add(-24 * time.Hour), UpdatedAt: now, ExpireAt: now.Add(90 * 24 * time.Hour)}
	set(t, fs.Collection(store.Conversations).Doc(w.conversationID), conv)
	msg := store.Message{Direction: store.DirectionIn, MessageID: "wamid.LEGACY", Type: "text", Text: "book bus 01",
		Timestamp: now.Add(-time.Hour).Unix(), ReceivedAt: now.Add(-time.Hour), // arrived_at: the server's time, as then
		Turn: store.TurnDone, InInbox: true, Fence: 3,
		Replies:  []store.Reply{{Index: 0, IdempotencyKey: w.replyKey, Body: "Correct?", Payload: `{"text":"Correct?"}`}},
		ExpireAt: now.Add(90 * 24 * time.Hour)}
	set(t, fs.Collection(store.Conversations).Doc(w.conversationID).Collection(store.ConversationMessages).Doc(store.DocID(msg.MessageID)), msg)
	set(t, fs.Collection(store.OutboundMessages).Doc(w.replyKey), map[string]any{
		"idempotency_key": w.replyKey, "state": "sending", "phone_number_id": w.number, "tenant_id": w.tenantID,
		"inbound_message_id": "wamid.LEGACY", "attempts": 1, "sending_since": now, "created_at": now, "updated_at": now,
		"latency_bucket": -1, "expire_at": now.Add(30 * 24 * time.Hour)})

	tenantRef := fs.Collection(store.TenantsCollection).Doc(w.tenantID)
	set(t, tenantRef.Collection(store.TenantMembers).Doc(w.phone), map[string]any{
		"wa_id": w.phone, "role": "admin", "name": "Agus", "language": "id", "joined_at": now, "invite": "hash1"})
	set(t, tenantRef.Collection(store.TenantInvites).Doc("hash1"), map[string]any{
		"role": "admin", "created_at": now, "expire_at": now.Add(time.Hour), "used_at": now, "used_by": w.phone})
	set(t, fs.Collection(store.SenderWindows).Doc(store.DocID("sender\x00"+w.tenantID+"\x00"+w.phone)), map[string]any{
		"tenant_id": w.tenantID, "window": turnstate.Window{Start: now.Add(-time.Minute), Count: 3, Recent: []string{"a", "b", "c"}},
		"updated_at": now, "expire_at": now.Add(time.Hour)})
	set(t, fs.Collection(store.SenderWindows).Doc(store.DocID("share\x00"+w.tenantID+"\x00"+w.phone+"\x00"+w.period)), map[string]any{
		"tenant_id": w.tenantID, "period": w.period, "count": 7, "limit": 10, "updated_at": now, "expire_at": now.Add(60 * 24 * time.Hour)})
	set(t, fs.Collection(store.ContactPreferences).Doc(store.DocID("pref\x00"+w.tenantID+"\x00"+w.phone)), map[string]any{
		"tenant_id": w.tenantID, "contact": w.phone, "marketing_stopped": true, "meta_time": 100, "updated_at": now})
	set(t, fs.Collection(store.PhoneNumbers).Doc(w.sharedNumber).Collection(store.NumberContacts).Doc(w.phone), map[string]any{
		"tenant_id": w.tenantID, "joined_at": now, "invite": "hash1"})
	return w
}

func set(t *testing.T, ref *firestore.DocumentRef, v any) {
	t.Helper()
	if _, err := ref.Set(context.Background(), v); err != nil {
		t.Fatalf("write %s: %v", ref.Path, err)
	}
}

// TestMigrateCarriesOverWhatTodaysCodeWrote: starting from documents written as wapipe wrote
// them before contacts, reads fall back to them until `wapipe migrate` runs; the migration (a
// dry run first, which writes nothing) carries the conversation (its state, window and a
// committed turn whose reply is in flight, under the key it recorded), the membership, the
// invite, the sender window, the quota share, the marketing stop and the shared-number choice
// over to the contact's ids; a second run moves nothing; and the services stop reading the old
// ids.
func TestMigrateCarriesOverWhatTodaysCodeWrote(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fs, _ := testenv.Firestore(t)
	db := store.NewDB(fs)
	now := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	opts := store.Options{Now: func() time.Time { return now }}
	tenants, convs := store.NewTenants(db, opts), store.NewConversationStore(db, opts)
	contacts, prefs, guard := store.NewContacts(db, opts), store.NewContactPrefs(db, opts), store.NewGuard(db, opts)
	w := writeLegacy(t, fs, tenants, now)
	person := contact.Identity{WaID: w.phone}

	// Before the migration: the person's first message after the upgrade makes their contact,
	// and every read finds what the old code wrote.
	c, err := contacts.Resolve(ctx, w.tenantID, person)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := convs.Locate(ctx, w.tenantID, w.number, c.Contact); got != w.conversationID {
		t.Errorf("before the migration Locate = %s, want the old conversation %s", got, w.conversationID)
	}
	if m, ok, _ := tenants.RuntimeMember(ctx, w.tenantID, c.Contact); !ok || m.Role != tenant.RoleAdmin {
		t.Errorf("before the migration the membership = %+v, %v", m, ok)
	}
	if p, _ := prefs.Preference(ctx, w.tenantID, c.Contact); !p.MarketingStopped {
		t.Error("before the migration the marketing stop is not read")
	}
	if sc, _ := tenants.SharedContact(ctx, w.sharedNumber, []string{"acme", "other"}, person); sc.Chosen != w.tenantID {
		t.Errorf("before the migration the choice = %+v", sc)
	}

	m := store.NewMigrator(db, opts)
	dry, err := m.Run(ctx, store.MigrateOptions{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{store.StepMembers: 1, store.StepInvites: 1, store.StepChoices: 1, store.StepConversations: 1,
		store.StepWindows: 1, store.StepShares: 1, store.StepPreferences: 1, store.StepAliases: 0}
	if diff := cmp.Diff(want, dry.Moved); diff != "" || dry.Done {
		t.Errorf("dry run (-want, +got):\n%s (done %v)", diff, dry.Done)
	}
	if got, _ := convs.Locate(ctx, w.tenantID, w.number, c.Contact); got != w.conversationID {
		t.Error("the dry run moved the conversation")
	}

	rep, err := m.Run(ctx, store.MigrateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, rep.Moved); diff != "" || !rep.Done || rep.Busy != 0 {
		t.Errorf("migration (-want, +got):\n%s (done %v, busy %d)", diff, rep.Done, rep.Busy)
	}

	newID := store.ConversationID(keyedid.Dev(), w.tenantID, w.number, c.Contact.ID)
	if got, _ := convs.Locate(ctx, w.tenantID, w.number, c.Contact); got != newID {
		t.Errorf("after the migration Locate = %s, want %s", got, newID)
	}
	conv, err := convs.Get(ctx, newID)
	if err != nil {
		t.Fatal(err)
	}
	if conv.ContactID != c.Contact.ID || conv.MovedFrom != w.conversationID || conv.State.Pending == nil ||
		conv.State.Pending.ActionID != "act_legacy" || !conv.LastInboundAt.Equal(now.Add(-time.Hour)) || conv.Lease.Holder != "" {
		t.Errorf("moved conversation = %+v; want the state, the window and no lease", conv)
	}
	inbox, ok, err := convs.NextInbox(ctx, newID, "")
	if err != nil || !ok || inbox.MessageID != "wamid.LEGACY" || len(inbox.Replies) != 1 || inbox.Replies[0].IdempotencyKey != w.replyKey {
		t.Errorf("the committed turn in the new inbox = %+v, %v, %v; want its reply under the key it recorded (%s)", inbox, ok, err, w.replyKey)
	}
	if old, _ := convs.Get(ctx, w.conversationID); old.MovedTo != newID || old.Status != store.ConversationClosed {
		t.Errorf("old conversation = moved_to %q status %q", old.MovedTo, old.Status)
	}
	if m, ok, _ := tenants.RuntimeMember(ctx, w.tenantID, c.Contact); !ok || m.Role != tenant.RoleAdmin || m.Name != "Agus" {
		t.Errorf("after the migration the membership = %+v, %v", m, ok)
	}
	if snap, _ := fs.Collection(store.TenantsCollection).Doc(w.tenantID).Collection(store.TenantMembers).Doc(w.phone).Get(ctx); snap.Exists() {
		t.Error("the member document named after the phone is still there")
	}
	if p, _ := prefs.Preference(ctx, w.tenantID, c.Contact); !p.MarketingStopped {
		t.Error("after the migration the marketing stop is lost")
	}
	if sc, _ := tenants.SharedContact(ctx, w.sharedNumber, []string{"acme", "other"}, person); sc.Chosen != w.tenantID {
		t.Errorf("after the migration the choice = %+v", sc)
	}
	if got, _ := tenants.InviteTenant(ctx, []string{"acme"}, "hash1", person); got != "acme" {
		t.Errorf("the used invite no longer finds its tenant for its user: %q", got)
	}
	// The window goes on from its count (3 of 4: the next is the 4th, the one after the first
	// over), and so does the share (7 of 10).
	limit := tenant.Limit{Max: 4, Per: time.Hour}
	if d, err := guard.HitSender(ctx, turnstate.SenderHit{TenantID: w.tenantID, Sender: c.Contact.ID, LegacySender: w.phone,
		MessageID: "d", At: now, Limit: limit}); err != nil || d.Limited {
		t.Errorf("4th hit = %+v, %v", d, err)
	}
	if d, _ := guard.HitSender(ctx, turnstate.SenderHit{TenantID: w.tenantID, Sender: c.Contact.ID, MessageID: "e", At: now, Limit: limit}); !d.First {
		t.Errorf("5th hit = %+v; want the first over the limit: the window's count was carried over", d)
	}
	for i := range 4 {
		dec, err := guard.ReserveCall(ctx, turnstate.CallReservation{TenantID: w.tenantID, Period: w.period, CallID: "call" + string(rune('a'+i)),
			Sender: c.Contact.ID, SenderLimit: 10, SenderLimited: true})
		if err != nil {
			t.Fatal(err)
		}
		if granted := i < 3; dec.Granted != granted {
			t.Errorf("call %d after the migration: %+v; want granted %v (7 of 10 used before)", i, dec, granted)
		}
	}

	again, err := m.Run(ctx, store.MigrateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for step, n := range again.Moved {
		if n != 0 {
			t.Errorf("second run moved %d %s", n, step)
		}
	}
	// The marker stops the fallback reads: a fresh database handle reads it.
	fresh := store.NewDB(fs)
	legacyConv := store.LegacyConversationID(w.tenantID, w.number, "6281234500009")
	set(t, fs.Collection(store.Conversations).Doc(legacyConv), store.Conversation{ID: legacyConv, TenantID: w.tenantID,
		PhoneNumberID: w.number, Contact: "6281234500009", Status: store.ConversationOpen})
	late, _ := store.NewContacts(fresh, opts).Resolve(ctx, w.tenantID, contact.Identity{WaID: "6281234500009"})
	if got, _ := store.NewConversationStore(fresh, opts).Locate(ctx, w.tenantID, w.number, late.Contact); got == legacyConv {
		t.Error("after the migration an old id is still read")
	}
}

// TestMigrateLeavesABusyConversation: a conversation a live turn holds is left for the next run,
// which moves it once the turn is over; the marker is set only then.
func TestMigrateLeavesABusyConversation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fs, _ := testenv.Firestore(t)
	db := store.NewDB(fs)
	now := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	opts := store.Options{Now: func() time.Time { return now }}
	convs := store.NewConversationStore(db, opts)
	mustApply(t, store.NewTenants(db, opts), simpleTenant(t, "acme", legacyNumber))
	id := store.LegacyConversationID("acme", legacyNumber, legacyPhone)
	conv, ok, err := convs.Acquire(ctx, id, "live-turn", time.Minute, &store.Touch{TenantID: "acme", PhoneNumberID: legacyNumber, Contact: legacyPhone})
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	m := store.NewMigrator(db, opts)
	rep, err := m.Run(ctx, store.MigrateOptions{})
	if err != nil || rep.Busy != 1 || rep.Done {
		t.Fatalf("run during a turn = %+v, %v; want the conversation left busy, not done", rep, err)
	}
	if err := convs.Release(ctx, id, conv.Lease); err != nil {
		t.Fatal(err)
	}
	rep, err = m.Run(ctx, store.MigrateOptions{})
	if err != nil || rep.Busy != 0 || !rep.Done || rep.Moved[store.StepConversations] != 1 {
		t.Errorf("run after the turn = %+v, %v; want it moved and done", rep, err)
	}
}
