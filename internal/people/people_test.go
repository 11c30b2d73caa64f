package people_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wapipe/wapipe/internal/contact"
	"github.com/wapipe/wapipe/internal/keyedid"
	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/internal/logging/logcheck"
	"github.com/wapipe/wapipe/internal/people"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/tenant"
	"github.com/wapipe/wapipe/internal/testenv"
	"github.com/wapipe/wapipe/internal/whatsapp"
)

func TestMain(m *testing.M) { os.Exit(testenv.RunWithFirestore(m)) }

// The business number of the tests, and the people of the whatsapp package's BSUID samples
// (testdata/bsuid_*.json): Ana changes number, Bo changes BSUID.
const (
	number = "106540352242922"

	anaPhone, anaUserID       = "16505551234", "US.7305518822604419"
	anaNewPhone, anaNewUserID = "16505559876", "US.8841260937715502"

	boUserID, boParent       = "CO.5581920374461120", "CO.ENT.4471902288135506"
	boNewUserID, boNewParent = "CO.6690314852207719", "CO.ENT.5582013399246617"
	boPhone                  = "573001234567"
)

// clock is a settable clock: which of two contacts is older decides a merge.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// reader reads tenants straight from the store (the worker reads them through its cache).
type reader struct{ *store.Tenants }

func (r reader) Tenant(ctx context.Context, id string) (store.TenantRecord, error) {
	return r.Get(ctx, id)
}

// fixture is a Directory over the real stores on the emulator, with tenant acme applied (its
// file lists Ana by her phone, as owner), and a context whose logger writes to logs.
type fixture struct {
	dir      *people.Directory
	contacts *store.Contacts
	tenants  *store.Tenants
	convs    *store.ConversationStore
	prefs    *store.ContactPrefs
	clk      *clock
	ctx      context.Context
	logs     *testenv.LogBuffer
}

const acmeYAML = `id: acme
name: Acme
language: en
audience: members
phone_numbers:
  - {phone_number_id: "` + number + `", waba_id: "102290129340398"}
members:
  - {wa_id: "` + anaPhone + `", role: owner, name: Ana Lima, language: pt}
  - {wa_id: "6281234567890", role: admin, name: Agus}
`

func newFixture(t *testing.T) fixture {
	t.Helper()
	db, _ := testenv.Store(t)
	clk := &clock{now: time.Now().UTC().Truncate(time.Second)}
	opts := store.Options{Now: clk.Now}
	f := fixture{contacts: store.NewContacts(db, opts), tenants: store.NewTenants(db, opts), convs: store.NewConversationStore(db, opts),
		prefs: store.NewContactPrefs(db, opts), clk: clk, logs: &testenv.LogBuffer{}}
	f.dir = &people.Directory{Contacts: f.contacts, Tenants: f.tenants, Reader: reader{f.tenants}, Conversations: f.convs}
	f.ctx = logging.WithLogger(context.Background(), logging.New(f.logs, logging.Options{}))
	f.apply(t, acmeYAML)
	return f
}

func (f fixture) apply(t *testing.T, yaml string) {
	t.Helper()
	tn, err := tenant.Parse([]byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.tenants.Apply(context.Background(), tn, false); err != nil {
		t.Fatal(err)
	}
}

// sender is Directory.Sender in acme on the number; it fails the test on error.
func (f fixture) sender(t *testing.T, id contact.Identity) people.Sender {
	t.Helper()
	s, err := f.dir.Sender(f.ctx, "acme", number, id)
	if err != nil {
		t.Fatalf("Sender(%+v): %v", id, err)
	}
	return s
}

// open makes s's conversation exist, as a message's turn does, with the business's message text
// in its history.
func (f fixture) open(t *testing.T, s people.Sender, text string) {
	t.Helper()
	c := s.Contact
	conv, _, err := f.convs.Acquire(f.ctx, s.ConversationID, "h", time.Minute, &store.Touch{TenantID: "acme", PhoneNumberID: number,
		ContactID: c.ID, Contact: c.WaID, UserID: c.UserID, InboundAt: f.clk.Now()})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.convs.Release(f.ctx, s.ConversationID, conv.Lease); err != nil {
		t.Fatal(err)
	}
	if err := f.convs.AddBusinessMessage(f.ctx, s.ConversationID, store.Message{MessageID: "wamid.biz-" + c.ID, Type: "text", Text: text,
		Timestamp: f.clk.Now().Unix()}, true); err != nil {
		t.Fatal(err)
	}
}

// get reads acme's contact id as stored.
func (f fixture) get(t *testing.T, id string) store.Contact {
	t.Helper()
	c, err := f.contacts.Get(f.ctx, "acme", id)
	if err != nil {
		t.Fatalf("Get(%s): %v", id, err)
	}
	return c
}

// checkLogs fails the test when the logs hold a personal identifier, or nothing.
func (f fixture) checkLogs(t *testing.T, phones, ids []string) {
	t.Helper()
	if n := logcheck.Check(t, f.logs.String(), phones, ids); n == 0 {
		t.Error("nothing was logged")
	}
}

// change is the identity change of the whatsapp package's sample name (a system message, or a
// user_id_update event), as process_inbound reads it.
func change(t *testing.T, name string) []whatsapp.IdentityChange {
	t.Helper()
	body, err := os.ReadFile(filepath.Join("..", "whatsapp", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	p, err := whatsapp.Parse(body)
	if err != nil {
		t.Fatal(err)
	}
	msgs, _ := whatsapp.Normalize(p)
	var out []whatsapp.IdentityChange
	for _, m := range msgs {
		if ch, ok := m.IdentityChange(); ok {
			out = append(out, ch)
		}
	}
	for _, ev := range whatsapp.Events(p) {
		if ev.IdentityChange != nil {
			out = append(out, *ev.IdentityChange)
		}
	}
	if len(out) == 0 {
		t.Fatalf("%s holds no identity change", name)
	}
	return out
}

// logLines returns the JSON log lines with event name.
func logLines(logs, name string) []map[string]any {
	var out []map[string]any
	for l := range strings.Lines(logs) {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil && m["event"] == name {
			out = append(out, m)
		}
	}
	return out
}

// TestSenderResolvesAndCreates: a person's first message makes their contact (logged), later
// ones find it by any identifier, adding those it did not have; the conversation is the
// contact's on the number; each tenant has its own contact of a person.
func TestSenderResolvesAndCreates(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	first := f.sender(t, contact.Identity{WaID: "6281234567890", Name: "Agus"})
	c := first.Contact
	if !strings.HasPrefix(c.ID, store.ContactIDPrefix) || c.TenantID != "acme" || c.WaID != "6281234567890" || c.UserID != "" || c.Name != "Agus" {
		t.Fatalf("new contact = %+v", c)
	}
	if want := store.ConversationID(keyedid.Dev(), "acme", number, c.ID); first.ConversationID != want {
		t.Errorf("conversation %s, want the contact's on the number %s", first.ConversationID, want)
	}
	if n := f.logs.Count("contact_created"); n != 1 {
		t.Errorf("%d contact_created lines, want 1", n)
	}

	again := f.sender(t, contact.Identity{WaID: "6281234567890"})
	if again.Contact.ID != c.ID || again.ConversationID != first.ConversationID {
		t.Errorf("second message: %+v, want the same contact and conversation", again)
	}
	both := f.sender(t, contact.Identity{WaID: "6281234567890", UserID: "ID.1234567890", Username: "agus"})
	if both.Contact.ID != c.ID || both.Contact.UserID != "ID.1234567890" || both.Contact.Username != "agus" || both.Contact.Name != "Agus" {
		t.Errorf("with a BSUID: %+v, want the contact with the BSUID and username added, its name kept", both.Contact)
	}
	byUserID := f.sender(t, contact.Identity{UserID: "ID.1234567890"})
	if byUserID.Contact.ID != c.ID || byUserID.Contact.WaID != "6281234567890" || byUserID.ConversationID != first.ConversationID {
		t.Errorf("by BSUID alone: %+v, want the same contact, with its phone, and conversation", byUserID)
	}
	if n := f.logs.Count("contact_created"); n != 1 {
		t.Errorf("%d contact_created lines, want 1: nobody new wrote", n)
	}
	if got := f.get(t, c.ID); got.Identity != byUserID.Contact.Identity {
		t.Errorf("stored contact %+v, want %+v", got.Identity, byUserID.Contact.Identity)
	}

	// Another tenant knows the same person as its own contact.
	f.apply(t, strings.NewReplacer("id: acme", "id: other", "name: Acme", "name: Other", number, "106540352242923").Replace(acmeYAML))
	other, err := f.dir.Sender(f.ctx, "other", "106540352242923", contact.Identity{UserID: "ID.1234567890"})
	if err != nil || other.Contact.ID == c.ID || other.Contact.TenantID != "other" || other.Contact.WaID != "" {
		t.Errorf("the person in another tenant: %+v, %v; want a contact of its own, by what that tenant was told", other, err)
	}
	f.checkLogs(t, []string{"6281234567890"}, []string{"ID.1234567890", "agus"})
}

// TestSenderNobody: a message that names neither a phone nor a BSUID names nobody: ErrNobody,
// and nothing is made.
func TestSenderNobody(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for _, id := range []contact.Identity{{}, {Name: "Ana Lima"}, {Username: "ana"}, {Name: "Ana", Username: "ana"}} {
		if s, err := f.dir.Sender(f.ctx, "acme", number, id); !errors.Is(err, people.ErrNobody) || s.Contact.ID != "" || s.ConversationID != "" {
			t.Errorf("Sender(%+v) = %+v, %v; want ErrNobody", id, s, err)
		}
	}
	if f.logs.Has("contact_created") {
		t.Errorf("a contact was made:\n%s", f.logs.String())
	}
}

// TestSenderMergesContacts (CONTRACT.md, Wave 4): a person known by phone and, separately, by
// BSUID has two contacts until a message carries both; they then merge into the older one, which
// keeps its id and gets the BSUID; the newer one's conversation continues in the survivor's
// (with its history), its membership and its opt-out too; either identifier then finds the
// survivor. Merging is logged once.
func TestSenderMergesContacts(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	byPhone := f.sender(t, contact.Identity{WaID: boPhone})
	f.clk.Add(time.Minute)
	byUserID := f.sender(t, contact.Identity{UserID: boUserID, Username: "bo_rivera", Name: "Bo Rivera"})
	if byUserID.Contact.ID == byPhone.Contact.ID || byUserID.ConversationID == byPhone.ConversationID {
		t.Fatalf("the BSUID found the phone's contact before anything tied them: %+v", byUserID)
	}
	// The newer contact talked, joined by invite and stopped marketing.
	f.open(t, byUserID, "We open at 9")
	if err := f.tenants.CreateInvite(f.ctx, "acme", tenant.InviteCodeHash("WP-BBBBBBBB"), tenant.RoleMember, f.clk.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, err := f.tenants.RedeemInvite(f.ctx, "acme", tenant.InviteCodeHash("WP-BBBBBBBB"), byUserID.Contact, "Bo"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.prefs.SetMarketing(f.ctx, "acme", byUserID.Contact, true, f.clk.Now().Unix()); err != nil {
		t.Fatal(err)
	}

	f.clk.Add(time.Minute)
	merged := f.sender(t, contact.Identity{WaID: boPhone, UserID: boUserID})
	c := merged.Contact
	if c.ID != byPhone.Contact.ID || c.WaID != boPhone || c.UserID != boUserID || c.Username != "bo_rivera" || c.Name != "Bo Rivera" {
		t.Fatalf("merged contact = %+v; want the phone's (older) contact %s with the BSUID, username and name", c, byPhone.Contact.ID)
	}
	if merged.ConversationID != byPhone.ConversationID {
		t.Errorf("conversation %s, want the survivor's %s", merged.ConversationID, byPhone.ConversationID)
	}
	conv, err := f.convs.Get(f.ctx, merged.ConversationID)
	if err != nil {
		t.Fatalf("the survivor's conversation: %v", err)
	}
	if conv.MovedFrom != byUserID.ConversationID || conv.ContactID != c.ID || conv.Status != store.ConversationOpen ||
		len(conv.State.Turns) != 1 || conv.State.Turns[0].Reply != "We open at 9" {
		t.Errorf("the survivor's conversation = %+v; want the absorbed one's continued, its history kept", conv)
	}
	old, err := f.convs.Get(f.ctx, byUserID.ConversationID)
	if err != nil || old.MovedTo != merged.ConversationID || old.Status != store.ConversationClosed {
		t.Errorf("the absorbed conversation = %+v, %v; want closed, moved to %s", old, err, merged.ConversationID)
	}
	if m, ok, err := f.tenants.RuntimeMember(f.ctx, "acme", c); err != nil || !ok || m.Role != tenant.RoleMember {
		t.Errorf("the survivor's membership = %+v, %v, %v; want the absorbed one's", m, ok, err)
	}
	if p, err := f.prefs.Preference(f.ctx, "acme", c); err != nil || !p.MarketingStopped {
		t.Errorf("the survivor's preference = %+v, %v; want the absorbed one's stop", p, err)
	}
	// The absorbed id leads to the survivor; each identifier alone finds it.
	if got := f.get(t, byUserID.Contact.ID); got.ID != c.ID {
		t.Errorf("Get(absorbed) = %s, want the survivor %s", got.ID, c.ID)
	}
	for _, id := range []contact.Identity{{WaID: boPhone}, {UserID: boUserID}, {WaID: boPhone, UserID: boUserID}} {
		if s := f.sender(t, id); s.Contact.ID != c.ID || s.ConversationID != merged.ConversationID {
			t.Errorf("Sender(%+v) = %+v; want the survivor and its conversation", id, s)
		}
	}
	lines := logLines(f.logs.String(), "contacts_merged")
	if len(lines) != 1 || lines[0]["contact_id"] != c.ID || lines[0]["merged_contact_id"] != byUserID.Contact.ID {
		t.Errorf("contacts_merged lines = %v; want one naming the survivor and the absorbed contact", lines)
	}
	f.checkLogs(t, []string{boPhone}, []string{boUserID, "bo_rivera"})
}

// TestChangeNumber: user_changed_number (the whatsapp package's sample: Ana moves from her phone
// and BSUID to new ones) moves Ana's contact to her new identifiers: it keeps its id and
// conversation; her old phone stops finding it (the next message from it with another BSUID is
// a new person, a stranger); the file's entry of her old phone is suspended, with a WARNING,
// and she keeps the role by a member document. A tenant that never knew her is left alone.
// Doing it again changes nothing.
func TestChangeNumber(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.apply(t, strings.NewReplacer("id: acme", "id: bystander", "name: Acme", "name: Bystander", number, "106540352242923").Replace(acmeYAML))
	ana := f.sender(t, contact.Identity{WaID: anaPhone, UserID: anaUserID, Name: "Ana Lima"})
	f.open(t, ana, "Your booking is confirmed")
	chs := change(t, "bsuid_user_changed_number.json")
	ch := chs[0]
	if ch.Type != whatsapp.SystemUserChangedNumber || ch.Previous.WaID != anaPhone || ch.Previous.UserID != anaUserID ||
		ch.Current.WaID != anaNewPhone || ch.Current.UserID != anaNewUserID {
		t.Fatalf("the sample's change = %+v", ch)
	}

	f.clk.Add(time.Minute)
	moved, err := f.dir.Change(f.ctx, []string{"acme", "bystander"}, ch)
	if err != nil || len(moved) != 2 {
		t.Fatalf("Change = %+v, %v; want one result per tenant", moved, err)
	}
	c := moved[0].Contact
	if moved[0].TenantID != "acme" || c.ID != ana.Contact.ID || c.WaID != anaNewPhone || c.UserID != anaNewUserID || c.Name != "Ana Lima" ||
		!moved[0].SuspendedFileMember {
		t.Errorf("acme: %+v; want Ana's contact on her new phone and BSUID, her file entry suspended", moved[0])
	}
	if moved[1].TenantID != "bystander" || moved[1].Contact.ID != "" || moved[1].SuspendedFileMember {
		t.Errorf("bystander: %+v; want left alone", moved[1])
	}
	for _, id := range []contact.Identity{{WaID: anaPhone}, {UserID: anaUserID}, {WaID: anaNewPhone}, {UserID: anaNewUserID}} {
		if got, ok, err := f.contacts.Find(f.ctx, "bystander", id); err != nil || ok {
			t.Errorf("bystander knows %+v as %+v (%v): want nobody made", id, got, err)
		}
	}
	if got := f.get(t, c.ID); got.Identity != c.Identity {
		t.Errorf("stored contact %+v, want %+v", got.Identity, c.Identity)
	}

	// The file's entry of the old phone no longer counts; Ana keeps its role by a membership.
	rec, err := f.tenants.Get(f.ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Suspended) != 1 || rec.Suspended[0].WaID != anaPhone || rec.Suspended[0].Role != tenant.RoleOwner {
		t.Errorf("suspended = %+v; want Ana's old entry", rec.Suspended)
	}
	if _, listed := rec.Tenant.MemberOf(contact.Identity{WaID: anaPhone}); listed {
		t.Error("the old phone is still a file member")
	}
	if _, listed := rec.Tenant.MemberOf(contact.Identity{WaID: "6281234567890"}); !listed {
		t.Error("another file member was suspended")
	}
	if m, ok, err := f.tenants.RuntimeMember(f.ctx, "acme", c); err != nil || !ok || m.Role != tenant.RoleOwner || m.Name != "Ana Lima" {
		t.Errorf("Ana's membership = %+v, %v, %v; want the file's owner role kept", m, ok, err)
	}
	warns := logLines(f.logs.String(), "file_member_suspended")
	if len(warns) != 1 || warns[0]["severity"] != "WARNING" || warns[0]["tenant_id"] != "acme" || warns[0]["role"] != "owner" {
		t.Errorf("file_member_suspended lines = %v; want one WARNING for acme's owner", warns)
	}

	// Ana writes from her new phone and BSUID: the same contact and conversation.
	for _, id := range []contact.Identity{{WaID: anaNewPhone, UserID: anaNewUserID}, {UserID: anaNewUserID}, {WaID: anaNewPhone}} {
		if s := f.sender(t, id); s.Contact.ID != c.ID || s.ConversationID != ana.ConversationID {
			t.Errorf("Sender(%+v) = %+v; want Ana's contact and conversation", id, s)
		}
	}

	// Again (a redelivered notice): nothing changes, nothing is logged as suspended again.
	before := f.get(t, c.ID)
	f.clk.Add(time.Minute)
	again, err := f.dir.Change(f.ctx, []string{"acme", "bystander"}, ch)
	if err != nil || len(again) != 2 || again[0].Contact.ID != c.ID || again[0].Contact.Identity != c.Identity || again[1].Contact.ID != "" {
		t.Errorf("Change again = %+v, %v; want the same contact, bystander still left alone", again, err)
	}
	if after := f.get(t, c.ID); !after.UpdatedAt.Equal(before.UpdatedAt) || after.Identity != before.Identity {
		t.Errorf("the contact changed on a redelivery: %+v, was %+v", after, before)
	}
	if n := f.logs.Count("file_member_suspended"); n != 1 {
		t.Errorf("%d file_member_suspended lines after a redelivery, want 1", n)
	}
	if rec, _ := f.tenants.Get(f.ctx, "acme"); len(rec.Suspended) != 1 {
		t.Errorf("suspended after a redelivery = %+v", rec.Suspended)
	}

	// Someone else gets Ana's old number: a new person, a stranger, not Ana.
	f.clk.Add(time.Minute)
	stranger := f.sender(t, contact.Identity{WaID: anaPhone, UserID: "US.1111111111111111"})
	if stranger.Contact.ID == c.ID || stranger.ConversationID == ana.ConversationID {
		t.Errorf("the old phone with another BSUID = %+v; want a new contact", stranger)
	}
	if _, ok, err := f.tenants.RuntimeMember(f.ctx, "acme", stranger.Contact); err != nil || ok {
		t.Errorf("the old phone's new owner is a member: %v, %v", ok, err)
	}
	if got := f.get(t, c.ID); got.Identity != c.Identity {
		t.Errorf("Ana's contact changed when her old number wrote: %+v", got.Identity)
	}
	f.checkLogs(t, []string{anaPhone, anaNewPhone}, []string{anaUserID, anaNewUserID, "US.1111111111111111"})
}

// TestChangeNumberRedeliveredAfterTheNumberWasReused: a user_changed_number notice redelivered
// after someone else wrote from the old number leaves them alone: they are not merged into the
// person who left the number (who would give them her conversation and her role), and the
// person's contact keeps her new identifiers.
func TestChangeNumberRedeliveredAfterTheNumberWasReused(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ana := f.sender(t, contact.Identity{WaID: anaPhone, UserID: anaUserID})
	ch := change(t, "bsuid_user_changed_number.json")[0]
	if _, err := f.dir.Change(f.ctx, []string{"acme"}, ch); err != nil {
		t.Fatal(err)
	}
	moved := f.get(t, ana.Contact.ID)
	f.clk.Add(time.Minute)
	stranger := f.sender(t, contact.Identity{WaID: anaPhone, UserID: "US.1111111111111111"})
	f.clk.Add(time.Minute)
	again, err := f.dir.Change(f.ctx, []string{"acme"}, ch)
	if err != nil || len(again) != 1 || again[0].Contact.ID != ana.Contact.ID || again[0].Contact.Identity != moved.Identity {
		t.Errorf("Change again = %+v, %v; want Ana's contact as it was", again, err)
	}
	if got := f.get(t, stranger.Contact.ID); got.ID != stranger.Contact.ID || got.MergedInto != "" {
		t.Errorf("the old number's new owner = %+v; want their own contact, not merged into %s", got, ana.Contact.ID)
	}
	if got := f.get(t, ana.Contact.ID); got.Identity != moved.Identity {
		t.Errorf("Ana = %+v, want %+v", got.Identity, moved.Identity)
	}
	f.clk.Add(time.Minute)
	next := f.sender(t, contact.Identity{WaID: anaPhone, UserID: "US.1111111111111111"})
	if next.Contact.ID != stranger.Contact.ID || next.ConversationID == ana.ConversationID {
		t.Errorf("the new owner's next message = %+v; want their own contact and conversation", next)
	}
	if _, ok, err := f.tenants.RuntimeMember(f.ctx, "acme", next.Contact); err != nil || ok {
		t.Errorf("the old number's new owner has a membership: %v, %v", ok, err)
	}
	if m, ok, err := f.tenants.RuntimeMember(f.ctx, "acme", moved); err != nil || !ok || m.Role != tenant.RoleOwner {
		t.Errorf("Ana's membership = %+v, %v, %v; want the owner", m, ok, err)
	}
	if s := f.sender(t, contact.Identity{WaID: anaNewPhone, UserID: anaNewUserID}); s.Contact.ID != ana.Contact.ID || s.Contact.Identity != moved.Identity {
		t.Errorf("Ana's next message = %+v; want her contact, unchanged", s.Contact)
	}
	f.checkLogs(t, []string{anaPhone, anaNewPhone}, []string{anaUserID, anaNewUserID, "US.1111111111111111"})
}

// TestChangeUserID: user_changed_user_id (the sample: Bo's BSUID and parent BSUID change) keeps
// Bo's contact (id, phone, conversation) under the new ones; a late message from the previous
// BSUID still finds it and does not bring the old BSUID back.
func TestChangeUserID(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	bo := f.sender(t, contact.Identity{WaID: boPhone, UserID: boUserID, ParentUserID: boParent, Username: "bo_rivera"})
	ch := change(t, "bsuid_user_changed_user_id.json")[0]
	if ch.Type != whatsapp.SystemUserChangedUserID || ch.Previous.UserID != boUserID || ch.Current.UserID != boNewUserID || ch.Current.WaID != "" {
		t.Fatalf("the sample's change = %+v", ch)
	}
	f.clk.Add(time.Minute)
	moved, err := f.dir.Change(f.ctx, []string{"acme"}, ch)
	if err != nil || len(moved) != 1 {
		t.Fatalf("Change = %+v, %v", moved, err)
	}
	c := moved[0].Contact
	if c.ID != bo.Contact.ID || c.UserID != boNewUserID || c.ParentUserID != boNewParent || c.WaID != boPhone || c.Username != "bo_rivera" ||
		moved[0].SuspendedFileMember {
		t.Errorf("moved = %+v; want Bo's contact with the new BSUIDs, the phone kept, nothing suspended", moved[0])
	}
	if got := f.get(t, c.ID); got.Identity != c.Identity {
		t.Errorf("stored contact %+v, want %+v", got.Identity, c.Identity)
	}
	for _, id := range []contact.Identity{{UserID: boNewUserID}, {WaID: boPhone}, {ParentUserID: boNewParent}} {
		if s := f.sender(t, id); s.Contact.ID != c.ID || s.ConversationID != bo.ConversationID {
			t.Errorf("Sender(%+v) = %+v; want Bo's contact and conversation", id, s)
		}
	}
	// A message from the previous BSUID, sent before the change, arrives late.
	late := f.sender(t, contact.Identity{UserID: boUserID, ParentUserID: boParent})
	if late.Contact.ID != c.ID || late.Contact.UserID != boNewUserID || late.Contact.ParentUserID != boNewParent {
		t.Errorf("a late message from the previous BSUID = %+v; want Bo's contact, its BSUIDs the new ones", late.Contact)
	}
	if got := f.get(t, c.ID); got.UserID != boNewUserID || got.ParentUserID != boNewParent {
		t.Errorf("stored after the late message: %+v; want the new BSUIDs kept", got.Identity)
	}
	if addr := f.get(t, c.ID).Address(); addr != (contact.Address{To: boPhone}) {
		t.Errorf("address %+v, want the phone", addr)
	}
	// Again: nothing changes.
	before := f.get(t, c.ID)
	if _, err := f.dir.Change(f.ctx, []string{"acme"}, ch); err != nil {
		t.Fatal(err)
	}
	if after := f.get(t, c.ID); after.Identity != before.Identity || !after.UpdatedAt.Equal(before.UpdatedAt) {
		t.Errorf("a redelivered change changed the contact: %+v, was %+v", after, before)
	}
	f.checkLogs(t, []string{boPhone}, []string{boUserID, boParent, boNewUserID, boNewParent, "bo_rivera"})
}

// TestChangeUserIDKeepsTheFileRole: a member the tenant file lists by user_id keeps their role
// when their BSUID changes (by a member document, with a WARNING asking for the file to list the
// new one), once however often the change arrives.
func TestChangeUserIDKeepsTheFileRole(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.apply(t, acmeYAML+"  - {user_id: "+boUserID+", role: admin, name: Bo}\n")
	bo := f.sender(t, contact.Identity{UserID: boUserID, ParentUserID: boParent})
	ch := change(t, "bsuid_user_changed_user_id.json")[0]
	for range 2 {
		if _, err := f.dir.Change(f.ctx, []string{"acme"}, ch); err != nil {
			t.Fatal(err)
		}
	}
	c := f.get(t, bo.Contact.ID)
	rec, err := f.tenants.Get(f.ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}
	if _, listed := rec.Tenant.MemberOf(c.Identity); listed {
		t.Errorf("the file lists %+v", c.Identity)
	}
	if m, ok, err := f.tenants.RuntimeMember(f.ctx, "acme", c); err != nil || !ok || m.Role != tenant.RoleAdmin || m.Name != "Bo" {
		t.Errorf("Bo's membership = %+v, %v, %v; want the file's admin role kept", m, ok, err)
	}
	if len(rec.Suspended) != 0 {
		t.Errorf("suspended = %+v, want none: a BSUID is never given to someone else", rec.Suspended)
	}
	warns := logLines(f.logs.String(), "file_member_user_id_changed")
	if len(warns) != 1 || warns[0]["severity"] != "WARNING" || warns[0]["role"] != "admin" {
		t.Errorf("file_member_user_id_changed lines = %v; want one WARNING", warns)
	}
	f.checkLogs(t, nil, []string{boUserID, boParent, boNewUserID, boNewParent})
}

// TestUserIDUpdate: the user_id_update field (withdrawn by Meta, still forwarded by some
// providers) is followed like user_changed_user_id: both updates of the sample move their
// contacts, the one that names a phone keeps it.
func TestUserIDUpdate(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	bo := f.sender(t, contact.Identity{UserID: boUserID, ParentUserID: boParent, Username: "bo_rivera"})
	ana := f.sender(t, contact.Identity{WaID: anaPhone, UserID: anaUserID})
	chs := change(t, "bsuid_user_id_update.json")
	if len(chs) != 2 || chs[0].Type != whatsapp.FieldUserIDUpdate {
		t.Fatalf("the sample's changes = %+v", chs)
	}
	for _, ch := range chs {
		if _, err := f.dir.Change(f.ctx, []string{"acme"}, ch); err != nil {
			t.Fatal(err)
		}
	}
	if got := f.get(t, bo.Contact.ID); got.UserID != boNewUserID || got.ParentUserID != boNewParent || got.WaID != "" {
		t.Errorf("Bo = %+v; want the new BSUIDs, no phone", got.Identity)
	}
	if got := f.get(t, ana.Contact.ID); got.UserID != anaNewUserID || got.WaID != anaPhone {
		t.Errorf("Ana = %+v; want the new BSUID, her phone kept", got.Identity)
	}
	if s := f.sender(t, contact.Identity{UserID: boNewUserID}); s.Contact.ID != bo.Contact.ID || s.ConversationID != bo.ConversationID {
		t.Errorf("Bo's new BSUID finds %+v", s)
	}
	if s := f.sender(t, contact.Identity{WaID: anaPhone, UserID: anaNewUserID}); s.Contact.ID != ana.Contact.ID {
		t.Errorf("Ana's phone and new BSUID find %+v", s.Contact)
	}
	// Ana's phone did not change: her file entry stands.
	if rec, err := f.tenants.Get(f.ctx, "acme"); err != nil || len(rec.Suspended) != 0 {
		t.Errorf("suspended = %+v, %v; want none", rec.Suspended, err)
	}
	f.checkLogs(t, []string{anaPhone}, []string{boUserID, boNewUserID, anaUserID, anaNewUserID, "bo_rivera"})
}

// TestChangeIncomplete: a change without a previous or a current identifier follows nothing and
// says so.
func TestChangeIncomplete(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ana := f.sender(t, contact.Identity{WaID: anaPhone})
	for _, ch := range []whatsapp.IdentityChange{
		{Type: whatsapp.SystemUserChangedNumber, Previous: contact.Identity{WaID: anaPhone}},
		{Type: whatsapp.SystemUserChangedUserID, Current: contact.Identity{UserID: anaNewUserID}},
	} {
		if moved, err := f.dir.Change(f.ctx, []string{"acme"}, ch); err != nil || len(moved) != 0 {
			t.Errorf("Change(%+v) = %+v, %v; want nothing", ch, moved, err)
		}
	}
	if n := f.logs.Count("identity_change_incomplete"); n != 2 {
		t.Errorf("%d identity_change_incomplete lines, want 2", n)
	}
	if got := f.get(t, ana.Contact.ID); got.WaID != anaPhone || got.UserID != "" {
		t.Errorf("Ana = %+v; want unchanged", got.Identity)
	}
	if rec, _ := f.tenants.Get(f.ctx, "acme"); len(rec.Suspended) != 0 {
		t.Errorf("suspended = %+v, want none", rec.Suspended)
	}
}
