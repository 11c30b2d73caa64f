package events_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wapipe/wapipe/internal/contact"
	"github.com/wapipe/wapipe/internal/events"
	"github.com/wapipe/wapipe/internal/i18n"
	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/internal/logging/logcheck"
	"github.com/wapipe/wapipe/internal/people"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/tenant"
	"github.com/wapipe/wapipe/internal/testenv"
	"github.com/wapipe/wapipe/internal/turnstate"
	"github.com/wapipe/wapipe/internal/whatsapp"
)

const (
	number = "106540352242922"
	waba   = "102290129340398"
	phone  = "6281234567890"
)

func TestMain(m *testing.M) { os.Exit(testenv.RunWithFirestore(m)) }

// fixture is an Applier over the real stores on the emulator, with the acme tenant (number,
// WABA) applied, and a context whose logger writes to logs.
type fixture struct {
	a        *events.Applier
	convs    *store.ConversationStore
	tenants  *store.Tenants
	prefs    *store.ContactPrefs
	contacts *store.Contacts
	people   *people.Directory
	ctx      context.Context
	logs     *testenv.LogBuffer
}

// reader reads tenants straight from the store (the worker reads them through its cache).
type reader struct{ *store.Tenants }

func (r reader) Tenant(ctx context.Context, id string) (store.TenantRecord, error) {
	return r.Get(ctx, id)
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	db, _ := testenv.Store(t)
	opts := store.Options{Now: func() time.Time { return time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC) }}
	f := fixture{convs: store.NewConversationStore(db, opts), tenants: store.NewTenants(db, opts), prefs: store.NewContactPrefs(db, opts),
		contacts: store.NewContacts(db, opts), logs: &testenv.LogBuffer{}}
	f.people = &people.Directory{Contacts: f.contacts, Tenants: f.tenants, Reader: reader{f.tenants}, Conversations: f.convs}
	f.a = events.New(f.convs, f.tenants, f.prefs, f.people)
	f.ctx = logging.WithLogger(context.Background(), logging.New(f.logs, logging.Options{}))
	tn, err := tenant.Parse([]byte("id: acme\nname: Acme\nlanguage: en\naudience: members\nphone_numbers:\n  - {phone_number_id: \"" + number +
		"\", waba_id: \"" + waba + "\"}\nmembers:\n  - {wa_id: \"" + phone + "\", role: owner}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.tenants.Apply(context.Background(), tn, false); err != nil {
		t.Fatal(err)
	}
	return f
}

// sender is acme's contact of the person id names, and its conversation on the number, as a
// message from them finds them.
func (f fixture) sender(t *testing.T, id contact.Identity) people.Sender {
	t.Helper()
	s, err := f.people.Sender(f.ctx, "acme", number, id)
	if err != nil {
		t.Fatalf("Sender: %v", err)
	}
	return s
}

// open makes the conversation of s exist, as a message's turn does.
func (f fixture) open(t *testing.T, s people.Sender) {
	t.Helper()
	c := s.Contact
	conv, _, err := f.convs.Acquire(f.ctx, s.ConversationID, "h", time.Minute, &store.Touch{TenantID: "acme", PhoneNumberID: number,
		ContactID: c.ID, Contact: c.WaID, UserID: c.UserID})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.convs.Release(f.ctx, s.ConversationID, conv.Lease); err != nil {
		t.Fatal(err)
	}
}

// find is acme's contact of the person id names; it fails the test when there is none.
func (f fixture) find(t *testing.T, id contact.Identity) store.Contact {
	t.Helper()
	c, ok, err := f.contacts.Find(f.ctx, "acme", id)
	if err != nil || !ok {
		t.Fatalf("Find(%+v) = %+v, %v, %v; want the contact", id, c, ok, err)
	}
	return c
}

// parsed returns the one message or event of a sample body.
func parsed(t *testing.T, body []byte) ([]whatsapp.Message, []whatsapp.Event) {
	t.Helper()
	p, err := whatsapp.Parse(body)
	if err != nil {
		t.Fatal(err)
	}
	msgs, _ := whatsapp.Normalize(p)
	return msgs, whatsapp.Events(p)
}

func opts(id string) whatsapp.SampleOptions {
	return whatsapp.SampleOptions{From: phone, PhoneNumberID: number, WABAID: waba, MessageID: id}
}

// TestApplyMessage: each message kind's store effect (read back from Firestore) and how it is
// answered; only an unsupported message gets "send it another way".
func TestApplyMessage(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	owner := f.sender(t, contact.Identity{WaID: phone})
	conv := owner.ConversationID
	if _, _, err := f.convs.AddInbound(f.ctx, conv, store.Message{MessageID: "wamid.A", Type: "text", Text: "bus 01 for Budi", Timestamp: 1, Payload: `{"text":"bus 01 for Budi"}`}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.convs.AddInbound(f.ctx, conv, store.Message{MessageID: "wamid.B", Type: "text", Text: "old", Timestamp: 2, Payload: "{}"}); err != nil {
		t.Fatal(err)
	}
	apply := func(body []byte) events.Outcome {
		t.Helper()
		msgs, _ := parsed(t, body)
		out, err := f.a.ApplyMessage(f.ctx, "acme", conv, msgs[0])
		if err != nil {
			t.Fatal(err)
		}
		return out
	}

	if out := apply(whatsapp.SampleRevoke(opts("wamid.R"), "wamid.A")); out.Answer || out.Reply != "" || out.Event != events.EventRevoked {
		t.Errorf("revoke outcome = %+v; want recorded, no answer", out)
	}
	got, _ := f.convs.GetMessage(f.ctx, conv, "wamid.A")
	if got.Text != "" || got.Payload != "" || got.DeletedAt.IsZero() {
		t.Errorf("revoked message in Firestore: text %q payload %q deleted_at %v; want erased, marked deleted", got.Text, got.Payload, got.DeletedAt)
	}

	if out := apply(whatsapp.SampleEdit(opts("wamid.E"), "wamid.B", "new text")); out.Answer || out.Event != events.EventEdited {
		t.Errorf("edit outcome = %+v", out)
	}
	if got, _ := f.convs.GetMessage(f.ctx, conv, "wamid.B"); got.Text != "new text" || got.EditedAt.IsZero() {
		t.Errorf("edited message in Firestore: text %q edited_at %v", got.Text, got.EditedAt)
	}

	for _, tc := range []struct {
		name   string
		body   []byte
		answer bool
		reply  i18n.Key
	}{
		{"order", whatsapp.SampleOrder(opts(""), "C1", "", []whatsapp.ProductItem{{ProductRetailerID: "burger", Quantity: "3"}}), true, ""},
		{"text", whatsapp.SampleText(opts(""), "hi"), true, ""},
		{"call permission", whatsapp.SampleCallPermissionReply(opts(""), "accept"), false, ""},
		{"unsupported", whatsapp.SampleUnsupported(opts("")), false, i18n.UnsupportedMessage},
	} {
		if out := apply(tc.body); out.Answer != tc.answer || out.Reply != tc.reply {
			t.Errorf("%s: outcome %+v; want answer %v reply %q", tc.name, out, tc.answer, tc.reply)
		}
	}

	// A number change: the member stays a member under the new number; the file's entry of the
	// old one is suspended.
	const newNo = "6289999999999"
	if out := apply(whatsapp.SampleUserChangedNumber(opts("wamid.S"), newNo, "")); out.Answer || out.Event != events.EventNumberChanged {
		t.Errorf("user_changed_number outcome = %+v", out)
	}
	moved := f.find(t, contact.Identity{WaID: newNo})
	if moved.ID != owner.Contact.ID {
		t.Errorf("the new number finds contact %s, want the owner's %s", moved.ID, owner.Contact.ID)
	}
	if m, ok, err := f.tenants.RuntimeMember(f.ctx, "acme", moved); err != nil || !ok || m.Role != tenant.RoleOwner {
		t.Errorf("new number membership = %+v, %v, %v; want the owner", m, ok, err)
	}
	if rec, err := f.tenants.Get(f.ctx, "acme"); err != nil || len(rec.Suspended) != 1 || rec.Suspended[0].WaID != phone {
		t.Errorf("acme suspended members = %+v, %v; want the old number's", rec.Suspended, err)
	} else if _, listed := rec.Tenant.MemberOf(contact.Identity{WaID: phone}); listed {
		t.Error("the old number is still a file member")
	}
	if strings.Contains(f.logs.String(), phone) || strings.Contains(f.logs.String(), newNo) {
		t.Errorf("a phone number is in the logs:\n%s", f.logs.String())
	}
}

// TestApplyOtherFields: a stop is recorded per contact and refuses a MARKETING template; an echo
// is stored as the business's message (operator app); an account restriction is recorded on
// the tenant owning the WABA and logged at ERROR; template and call events are recorded.
func TestApplyOtherFields(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	apply := func(tenantID string, body []byte) events.Outcome {
		t.Helper()
		_, evs := parsed(t, body)
		if len(evs) != 1 {
			t.Fatalf("%d events in %s", len(evs), body)
		}
		out, err := f.a.Apply(f.ctx, tenantID, evs[0])
		if err != nil {
			t.Fatal(err)
		}
		if out.Answer || out.Reply != "" {
			t.Errorf("%s: outcome %+v; want no answer", evs[0].Field, out)
		}
		return out
	}

	apply("acme", whatsapp.SampleTemplateStatus(opts(""), "spring_sale", "APPROVED", "MARKETING"))
	apply("acme", whatsapp.SamplePreference(opts(""), "stop"))
	who := f.find(t, contact.Identity{WaID: phone})
	if p, _ := f.prefs.Preference(f.ctx, "acme", who); !p.MarketingStopped {
		t.Error("stop not recorded")
	}
	if refused, _ := f.prefs.OptedOutOfMarketing(f.ctx, "acme", who, "spring_sale", "en_US"); !refused {
		t.Error("a MARKETING template to a stopped contact is not refused")
	}

	s := f.sender(t, contact.Identity{WaID: phone})
	conv := s.ConversationID
	f.open(t, s)
	apply("acme", whatsapp.SampleEcho(opts("wamid.ECHO"), "We open at 9"))
	apply("acme", whatsapp.SampleEcho(opts("wamid.ECHO"), "We open at 9")) // a redelivery
	echo, err := f.convs.GetMessage(f.ctx, conv, "wamid.ECHO")
	if err != nil || echo.Direction != store.DirectionOut || echo.Operator != store.OperatorApp || echo.Text != "We open at 9" {
		t.Errorf("echo in Firestore = %+v, %v; want an outbound message of operator app", echo, err)
	}
	// The business deletes it in the app: the echo of its revoke erases it.
	_, evs := parsed(t, whatsapp.SampleEcho(opts("wamid.ECHO2"), "Closed tomorrow"))
	if _, err := f.a.Apply(f.ctx, "acme", evs[0]); err != nil {
		t.Fatal(err)
	}
	revoke := evs[0]
	revoke.Echo = &whatsapp.Message{ID: "wamid.ECHO3", Type: "revoke", OriginalID: "wamid.ECHO2", PhoneNumberID: number}
	if _, err := f.a.Apply(f.ctx, "acme", revoke); err != nil {
		t.Fatal(err)
	}
	if m, _ := f.convs.GetMessage(f.ctx, conv, "wamid.ECHO2"); m.Text != "" || m.DeletedAt.IsZero() {
		t.Errorf("echo revoked in the app = text %q deleted_at %v; want erased", m.Text, m.DeletedAt)
	}
	got, _ := f.convs.Get(f.ctx, conv)
	if n := len(got.State.Turns); n != 2 || got.State.Turns[0].Reply != "We open at 9" || got.State.Turns[0].Event != turnstate.EventBusinessApp {
		t.Errorf("history after the echo = %+v; want the business's message once", got.State.Turns)
	}

	apply("", whatsapp.SampleAccountUpdate(opts(""), "ACCOUNT_RESTRICTION"))
	rec, _ := f.tenants.Get(f.ctx, "acme")
	if !rec.Account.Restricted || rec.Account.Event != "ACCOUNT_RESTRICTION" {
		t.Errorf("acme account = %+v; want restricted", rec.Account)
	}
	if line := logLine(t, f.logs.String(), events.EventAccountUpdate); line["severity"] != "ERROR" || line["account_event"] != "ACCOUNT_RESTRICTION" {
		t.Errorf("account_update log line = %v; want ERROR naming the event", line)
	}

	apply("acme", whatsapp.SampleCall(opts("wamid.CALL")))
	apply("acme", whatsapp.SamplePreference(opts(""), "resume"))
	if refused, _ := f.prefs.OptedOutOfMarketing(f.ctx, "acme", who, "spring_sale", "en_US"); refused {
		t.Error("resume did not lift the stop")
	}
	if strings.Contains(f.logs.String(), phone) || strings.Contains(f.logs.String(), "We open at 9") || strings.Contains(f.logs.String(), "Closed tomorrow") {
		t.Errorf("a phone number or message text is in the logs:\n%s", f.logs.String())
	}
}

// logLine returns the first JSON log line with event name.
func logLine(t *testing.T, logs, name string) map[string]any {
	t.Helper()
	for _, l := range strings.Split(strings.TrimSpace(logs), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil && m["event"] == name {
			return m
		}
	}
	t.Fatalf("no %s line in:\n%s", name, logs)
	return nil
}

// bsuidSample is a webhook body of package whatsapp's testdata (Meta's shapes for users known by
// their business-scoped user id).
func bsuidSample(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "whatsapp", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The person of the BSUID samples: no phone shared, a BSUID, a username.
const (
	boUserID   = "CO.5581920374461120"
	boUsername = "bo_rivera"
)

// TestPreferenceByUserIDAlone (CONTRACT.md, Wave 4): a user_preferences event that names the
// user by user_id alone records the preference for their contact, which a later message from the
// same person (by BSUID, then by phone and BSUID together) finds; no BSUID or username is logged.
func TestPreferenceByUserIDAlone(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	body := bsuidSample(t, "bsuid_user_preferences.json")
	_, evs := parsed(t, body)
	if len(evs) != 1 || evs[0].Contact.WaID != "" || evs[0].Contact.UserID != boUserID {
		t.Fatalf("events = %+v; want one preference by user_id alone", evs)
	}
	out, err := f.a.Apply(f.ctx, "acme", evs[0])
	if err != nil || out.Event != events.EventPreference || out.Answer {
		t.Fatalf("Apply = %+v, %v; want the preference recorded, no answer", out, err)
	}
	bo := f.find(t, contact.Identity{UserID: boUserID})
	if bo.WaID != "" || bo.Username != boUsername || bo.Name != "Bo Rivera" {
		t.Errorf("contact = %+v; want Bo by BSUID and username, no phone", bo)
	}
	if p, err := f.prefs.Preference(f.ctx, "acme", bo); err != nil || !p.MarketingStopped {
		t.Errorf("preference = %+v, %v; want marketing stopped", p, err)
	}
	if err := f.prefs.RecordTemplate(f.ctx, store.Template{TenantID: "acme", Name: "spring_sale", Language: "en_US", Status: "APPROVED",
		Category: "MARKETING"}); err != nil {
		t.Fatal(err)
	}
	// Bo writes by BSUID, then with the phone too: the same contact, still stopped.
	if s := f.sender(t, contact.Identity{UserID: boUserID, Username: boUsername}); s.Contact.ID != bo.ID {
		t.Errorf("a message by BSUID finds contact %s, want %s", s.Contact.ID, bo.ID)
	}
	both := f.sender(t, contact.Identity{WaID: "573001234567", UserID: boUserID})
	if both.Contact.ID != bo.ID {
		t.Errorf("a message by phone and BSUID finds contact %s, want %s", both.Contact.ID, bo.ID)
	}
	if refused, err := f.prefs.OptedOutOfMarketing(f.ctx, "acme", f.find(t, contact.Identity{WaID: "573001234567"}), "spring_sale", "en_US"); err != nil || !refused {
		t.Errorf("OptedOutOfMarketing by the phone = %v, %v; want refused", refused, err)
	}
	// A redelivery changes nothing; a preference that names nobody is logged, not recorded.
	if _, err := f.a.Apply(f.ctx, "acme", evs[0]); err != nil {
		t.Fatal(err)
	}
	nobody := evs[0]
	nobody.Contact = contact.Identity{Name: "Bo Rivera", Username: boUsername}
	if out, err := f.a.Apply(f.ctx, "acme", nobody); err != nil || out.Event != events.EventPreference {
		t.Errorf("Apply of a preference that names nobody = %+v, %v; want it logged and dropped", out, err)
	}
	if line := logLine(t, f.logs.String(), events.EventPreference); line == nil {
		t.Error("no preference log line")
	}
	if !strings.Contains(f.logs.String(), "marketing preference that names nobody") {
		t.Errorf("no warning for the preference that names nobody:\n%s", f.logs.String())
	}
	logcheck.Check(t, f.logs.String(), []string{"573001234567"}, []string{boUserID, "@" + boUsername, "Bo Rivera"})
}

// TestEchoToUserIDAlone: an smb_message_echoes event that names the user by to_user_id alone is
// stored as the business's message in the conversation of the contact known by that BSUID.
func TestEchoToUserIDAlone(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	bo := f.sender(t, contact.Identity{UserID: boUserID, Username: boUsername, Name: "Bo Rivera"})
	f.open(t, bo)
	_, evs := parsed(t, bsuidSample(t, "bsuid_echo.json"))
	if len(evs) != 1 || evs[0].Echo == nil || evs[0].Contact.WaID != "" || evs[0].Contact.UserID != boUserID {
		t.Fatalf("events = %+v; want one echo to user_id alone", evs)
	}
	for range 2 { // and a redelivery
		out, err := f.a.Apply(f.ctx, "acme", evs[0])
		if err != nil || out.Event != events.EventEcho || out.Answer {
			t.Fatalf("Apply = %+v, %v; want the echo stored, no answer", out, err)
		}
	}
	echo, err := f.convs.GetMessage(f.ctx, bo.ConversationID, "wamid.bsuid-echo")
	if err != nil || echo.Direction != store.DirectionOut || echo.Operator != store.OperatorApp || echo.Text != "We open at 9" {
		t.Errorf("echo in Firestore = %+v, %v; want an outbound message of operator app in Bo's conversation", echo, err)
	}
	conv, err := f.convs.Get(f.ctx, bo.ConversationID)
	if err != nil || len(conv.State.Turns) != 1 || conv.State.Turns[0].Reply != "We open at 9" || conv.ContactID != bo.Contact.ID {
		t.Errorf("Bo's conversation = %+v, %v; want the business's message once in its history", conv, err)
	}
	if c := f.find(t, contact.Identity{UserID: boUserID}); c.ID != bo.Contact.ID {
		t.Errorf("the echo made contact %s, want Bo's %s", c.ID, bo.Contact.ID)
	}
	if logcheck.Check(t, f.logs.String(), nil, []string{boUserID, "@" + boUsername, "We open at 9"}) == 0 {
		t.Error("nothing was logged")
	}
}

// TestApplyUserIDUpdate: a user_id_update event (withdrawn by Meta, still forwarded by some
// providers) is followed in the tenant of its number, never answered; on the default path
// (no tenant) nothing is changed.
func TestApplyUserIDUpdate(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	bo := f.sender(t, contact.Identity{UserID: boUserID, ParentUserID: "CO.ENT.4471902288135506"})
	_, evs := parsed(t, bsuidSample(t, "bsuid_user_id_update.json"))
	if len(evs) != 2 || evs[0].IdentityChange == nil {
		t.Fatalf("events = %+v; want two user_id updates", evs)
	}
	if out, err := f.a.Apply(f.ctx, "", evs[0]); err != nil || out.Event != events.EventNumberChanged {
		t.Errorf("Apply on the default path = %+v, %v", out, err)
	}
	if c := f.find(t, contact.Identity{UserID: boUserID}); c.UserID != boUserID {
		t.Errorf("the default path changed Bo: %+v", c.Identity)
	}
	out, err := f.a.Apply(f.ctx, "acme", evs[0])
	if err != nil || out.Event != events.EventNumberChanged || out.Answer {
		t.Fatalf("Apply = %+v, %v; want the change followed, no answer", out, err)
	}
	c := f.find(t, contact.Identity{UserID: "CO.6690314852207719"})
	if c.ID != bo.Contact.ID || c.UserID != "CO.6690314852207719" || c.ParentUserID != "CO.ENT.5582013399246617" {
		t.Errorf("Bo after the update = %+v; want contact %s with the new BSUIDs", c, bo.Contact.ID)
	}
	if s := f.sender(t, contact.Identity{UserID: "CO.6690314852207719"}); s.ConversationID != bo.ConversationID {
		t.Errorf("Bo's conversation after the update = %s, want %s", s.ConversationID, bo.ConversationID)
	}
	logcheck.Check(t, f.logs.String(), nil, []string{boUserID, "CO.6690314852207719", "CO.ENT.5582013399246617"})
}
