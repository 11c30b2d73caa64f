package events_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/wapipe/wapipe/internal/assistant"
	"github.com/wapipe/wapipe/internal/events"
	"github.com/wapipe/wapipe/internal/i18n"
	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/tenant"
	"github.com/wapipe/wapipe/internal/testenv"
	"github.com/wapipe/wapipe/internal/whatsapp"
)

const (
	number  = "106540352242922"
	waba    = "102290129340398"
	contact = "6281234567890"
)

func TestMain(m *testing.M) { os.Exit(testenv.RunWithFirestore(m)) }

// fixture is an Applier over the real stores on the emulator, with the acme tenant (number,
// WABA) applied, and a context whose logger writes to logs.
type fixture struct {
	a       *events.Applier
	convs   *store.ConversationStore
	tenants *store.Tenants
	prefs   *store.ContactPrefs
	ctx     context.Context
	logs    *testenv.LogBuffer
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	db, _ := testenv.Store(t)
	opts := store.Options{Now: func() time.Time { return time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC) }}
	f := fixture{convs: store.NewConversationStore(db, opts), tenants: store.NewTenants(db, opts), prefs: store.NewContactPrefs(db, opts), logs: &testenv.LogBuffer{}}
	f.a = events.New(f.convs, f.tenants, f.prefs)
	f.ctx = logging.WithLogger(context.Background(), logging.New(f.logs, logging.Options{}))
	tn, err := tenant.Parse([]byte("id: acme\nname: Acme\nlanguage: en\naudience: members\nphone_numbers:\n  - {phone_number_id: \"" + number +
		"\", waba_id: \"" + waba + "\"}\nmembers:\n  - {wa_id: \"" + contact + "\", role: owner}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.tenants.Apply(context.Background(), tn, false); err != nil {
		t.Fatal(err)
	}
	return f
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
	return whatsapp.SampleOptions{From: contact, PhoneNumberID: number, WABAID: waba, MessageID: id}
}

// TestApplyMessage: each message kind's store effect (read back from Firestore) and how it is
// answered; only an unsupported message gets "send it another way".
func TestApplyMessage(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	conv := store.ConversationID("acme", number, contact)
	if _, _, err := f.convs.AddInbound(f.ctx, conv, store.Message{MessageID: "wamid.A", Type: "text", Text: "bus 01 for Budi", Timestamp: 1, Payload: `{"text":"bus 01 for Budi"}`}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.convs.AddInbound(f.ctx, conv, store.Message{MessageID: "wamid.B", Type: "text", Text: "old", Timestamp: 2, Payload: "{}"}); err != nil {
		t.Fatal(err)
	}
	apply := func(body []byte) events.Outcome {
		t.Helper()
		msgs, _ := parsed(t, body)
		out, err := f.a.ApplyMessage(f.ctx, conv, msgs[0])
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

	// A number change: the member stays a member under the new number.
	const newNo = "6289999999999"
	if out := apply(whatsapp.SampleUserChangedNumber(opts("wamid.S"), newNo)); out.Answer || out.Event != events.EventNumberChanged {
		t.Errorf("user_changed_number outcome = %+v", out)
	}
	if m, ok, err := f.tenants.RuntimeMember(f.ctx, "acme", newNo); err != nil || !ok || m.Role != tenant.RoleOwner {
		t.Errorf("new number membership = %+v, %v, %v; want the owner", m, ok, err)
	}
	if strings.Contains(f.logs.String(), contact) || strings.Contains(f.logs.String(), newNo) {
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
	if p, _ := f.prefs.Preference(f.ctx, "acme", contact); !p.MarketingStopped {
		t.Error("stop not recorded")
	}
	if refused, _ := f.prefs.OptedOutOfMarketing(f.ctx, "acme", contact, "spring_sale", "en_US"); !refused {
		t.Error("a MARKETING template to a stopped contact is not refused")
	}

	conv := store.ConversationID("acme", number, contact)
	c, _, err := f.convs.Acquire(f.ctx, conv, "h", time.Minute, &store.Touch{TenantID: "acme", PhoneNumberID: number, Contact: contact})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.convs.Release(f.ctx, conv, c.Lease); err != nil {
		t.Fatal(err)
	}
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
	if n := len(got.State.Turns); n != 2 || got.State.Turns[0].Reply != "We open at 9" || got.State.Turns[0].Event != assistant.EventBusinessApp {
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
	if refused, _ := f.prefs.OptedOutOfMarketing(f.ctx, "acme", contact, "spring_sale", "en_US"); refused {
		t.Error("resume did not lift the stop")
	}
	if strings.Contains(f.logs.String(), contact) || strings.Contains(f.logs.String(), "We open at 9") || strings.Contains(f.logs.String(), "Closed tomorrow") {
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
