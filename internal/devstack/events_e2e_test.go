package devstack_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/wapipe/wapipe/internal/apikey"
	"github.com/wapipe/wapipe/internal/contact"
	"github.com/wapipe/wapipe/internal/devstack"
	"github.com/wapipe/wapipe/internal/i18n"
	"github.com/wapipe/wapipe/internal/keyedid"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/testenv"
	"github.com/wapipe/wapipe/internal/whatsapp"
	"github.com/wapipe/wapipe/tasks"
	"github.com/wapipe/wapipe/tenants"
)

// eventsWait bounds every wait of the events tests: generous, for a busy 2-core machine.
const eventsWait = 60 * time.Second

// defaultPathNumber is a business number no tenant owns: the single-tenant default serves it.
const defaultPathNumber = "199000000000001"

// eventsStack runs the whole stack with the sample tenant made members-only (so that a number
// change can be seen to keep a member a member) and its conversation limit raised (the tests
// send more than five messages in a conversation).
type eventsStack struct {
	st            *devstack.Stack
	logs          *testenv.LogBuffer
	db            *store.DB
	conversations *store.ConversationStore
	tenants       *store.Tenants
	contacts      *store.Contacts
}

func startEventsStack(t *testing.T) *eventsStack {
	t.Helper()
	sample := tenants.Sample()
	sample = bytes.Replace(sample, []byte("audience: public"), []byte("audience: members"), 1)
	sample = bytes.Replace(sample, []byte("conversation: {max: 5, per: 30s}"), []byte("conversation: {max: 100, per: 30s}"), 1)
	if !bytes.Contains(sample, []byte("audience: members")) || !bytes.Contains(sample, []byte("max: 100")) {
		t.Fatal("tenants/sample.yaml changed: the test cannot adapt it")
	}
	return startEventsStackWith(t, sample)
}

// startEventsStackWith is the whole stack with the tenant files files, patient queues and its
// logs kept, and a store on its Firestore.
func startEventsStackWith(t *testing.T, files ...[]byte) *eventsStack {
	t.Helper()
	ctx := context.Background()
	_, project := testenv.Firestore(t)
	logs := &testenv.LogBuffer{}
	st, err := devstack.Start(ctx, devstack.Options{
		FirestoreHost: testenv.FirestoreHost(t), Project: project, Queues: patientQueues(t),
		Tenants: files, Logs: func(string) io.Writer { return logs },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Stop)
	db, err := store.OpenEmulator(ctx, st.FirestoreHost, st.Project, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return &eventsStack{st: st, logs: logs, db: db, conversations: store.NewConversationStore(db, store.Options{}),
		tenants: store.NewTenants(db, store.Options{}), contacts: store.NewContacts(db, store.Options{})}
}

// contactOf waits for tenantID to know the person id names (their first message or event makes
// the contact) and returns the contact.
func (e *eventsStack) contactOf(t *testing.T, tenantID string, id contact.Identity) store.Contact {
	t.Helper()
	return contactOf(t, e.db, tenantID, id)
}

// conversationOf waits for tenantID to know the person id names and returns the id of their
// conversation with the business number.
func (e *eventsStack) conversationOf(t *testing.T, tenantID, number string, id contact.Identity) string {
	t.Helper()
	return conversationOf(t, e.db, tenantID, number, id)
}

// traceTarget waits for the inbound event of webhook body to be traced as finished and returns
// the trace's target of message id (the outcome of the message: a task, or why none).
func (e *eventsStack) traceTarget(t *testing.T, body []byte, id string) store.TraceTarget {
	t.Helper()
	eventID, err := whatsapp.EventID(body)
	if err != nil {
		t.Fatal(err)
	}
	traces := store.NewTraces(e.db, store.Options{})
	var tr store.Trace
	testenv.Eventually(t, eventsWait, func() bool {
		tr, err = traces.GetTrace(context.Background(), eventID)
		return err == nil && tr.State == store.TraceFinished
	}, "the inbound event of %s was never traced as finished", id)
	target, ok := tr.Outbound[tasks.IdempotencyKey(keyedid.Dev(), id)]
	if !ok {
		t.Fatalf("the trace of the inbound event has no target for the message: %+v", tr.Outbound)
	}
	return target
}

// patientQueues are fast retries, but many: a message that finds its conversation held by the
// task answering the previous one is retried until that task lets go, however slow a busy
// machine makes it (the default 5 fast attempts can run out in a second and dead-letter it).
func patientQueues(t *testing.T) *tasks.QueueFile {
	t.Helper()
	queues := testenv.FastQueues(t)
	for id, q := range queues.Queues {
		q.RetryConfig.MaxAttempts = 300
		queues.Queues[id] = q
	}
	for id, q := range queues.Templates {
		q.RetryConfig.MaxAttempts = 300
		queues.Templates[id] = q
	}
	return queues
}

// turnDone waits for the turn of message id in the conversation to be committed and its
// replies sent, and returns the stored message, with the replies the turn decided.
func (e *eventsStack) turnDone(t *testing.T, conv, id string) store.Message {
	t.Helper()
	var m store.Message
	testenv.Eventually(t, eventsWait, func() bool {
		var err error
		m, err = e.conversations.GetMessage(context.Background(), conv, id)
		return err == nil && m.Turn == store.TurnDone && (len(m.Replies) == 0 || !m.EffectsDoneAt.IsZero())
	}, "the turn of %s never ran", id)
	return m
}

// message waits for message id to be stored in the conversation and for ok to hold of it.
func (e *eventsStack) message(t *testing.T, conv, id string, ok func(store.Message) bool, what string) store.Message {
	t.Helper()
	var m store.Message
	testenv.Eventually(t, eventsWait, func() bool {
		var err error
		m, err = e.conversations.GetMessage(context.Background(), conv, id)
		return err == nil && ok(m)
	}, "%s", what)
	return m
}

func replyKeys(m store.Message) []string {
	var keys []string
	for _, r := range m.Replies {
		keys = append(keys, r.Key)
	}
	return keys
}

// TestOtherEventsAssistantTenantEndToEnd posts Meta's other events (issue 29) through the
// webhook, the Cloud Tasks emulator and the worker, to a members-only assistant tenant in mode
// llm, and reads what they did in Firestore, the fake Graph API and the fake Gemini.
func TestOtherEventsAssistantTenantEndToEnd(t *testing.T) {
	t.Parallel()
	e := startEventsStack(t)
	ctx := context.Background()
	const owner = "16505551234" // a member of the sample tenant, by its file
	pn := whatsapp.DefaultSampleOptions.PhoneNumberID
	bodies := map[string][]byte{}
	send := func(body func(o whatsapp.SampleOptions) []byte, from string) string {
		id := whatsapp.NewMessageID()
		bodies[id] = body(whatsapp.SampleOptions{From: from, MessageID: id})
		post(t, e.st, bodies[id])
		return id
	}

	// A message, then its deletion: no reply, the stored text erased, the message kept.
	first := send(func(o whatsapp.SampleOptions) []byte { return whatsapp.SampleText(o, "hello, is the office open") }, owner)
	ownerContact := e.contactOf(t, "sunrise-bus", contact.Identity{WaID: owner})
	conv := e.conversationOf(t, "sunrise-bus", pn, contact.Identity{WaID: owner})
	if m := e.turnDone(t, conv, first); len(m.Replies) != 1 {
		t.Fatalf("the first message's replies %v, want one", replyKeys(m))
	}
	revoke := send(func(o whatsapp.SampleOptions) []byte { return whatsapp.SampleRevoke(o, first) }, owner)
	if m := e.turnDone(t, conv, revoke); len(m.Replies) != 0 {
		t.Errorf("a deleted message was answered: %v", replyKeys(m))
	}
	e.message(t, conv, first, func(m store.Message) bool { return !m.DeletedAt.IsZero() && m.Text == "" && m.Payload == "" },
		"the deleted message's text was not erased")

	// An edit of an older message: the stored message changes, no reply.
	second := send(func(o whatsapp.SampleOptions) []byte { return whatsapp.SampleText(o, "what time do you close") }, owner)
	e.turnDone(t, conv, second)
	edit := send(func(o whatsapp.SampleOptions) []byte { return whatsapp.SampleEdit(o, second, "what time do you open") }, owner)
	if m := e.turnDone(t, conv, edit); len(m.Replies) != 0 {
		t.Errorf("an edit was answered: %v", replyKeys(m))
	}
	e.message(t, conv, second, func(m store.Message) bool { return !m.EditedAt.IsZero() && m.Text == "what time do you open" },
		"the edited message does not hold the new text")

	// An order reaches the model as text listing the items, and is answered by it.
	order := send(func(o whatsapp.SampleOptions) []byte {
		return whatsapp.SampleOrder(o, "cat-1", "no onions", []whatsapp.ProductItem{
			{ProductRetailerID: "burger-01", Quantity: "3", ItemPrice: "5.50", Currency: "USD"},
			{ProductRetailerID: "fries-02", Quantity: "2", ItemPrice: "2", Currency: "USD"}})
	}, owner)
	if m := e.turnDone(t, conv, order); len(m.Replies) != 1 || m.Replies[0].Key != "" {
		t.Errorf("the order's replies %v, want the model's one", replyKeys(m))
	}
	sawOrder := false
	for _, r := range e.st.Gemini.Requests() {
		if strings.Contains(r.Text, "burger-01") && strings.Contains(r.Text, "fries-02") {
			sawOrder = true
		}
	}
	if !sawOrder {
		t.Error("the model never read the order's items")
	}

	// A call permission answer: recorded, no reply. An unsupported message: "send it another way".
	call := send(func(o whatsapp.SampleOptions) []byte { return whatsapp.SampleCallPermissionReply(o, "accept") }, owner)
	if m := e.turnDone(t, conv, call); len(m.Replies) != 0 {
		t.Errorf("a call permission answer was answered: %v", replyKeys(m))
	}
	unsupported := send(whatsapp.SampleUnsupported, owner)
	if m := e.turnDone(t, conv, unsupported); len(m.Replies) != 1 || m.Replies[0].Key != string(i18n.UnsupportedMessage) {
		t.Errorf("the unsupported message's replies %v, want %s", replyKeys(m), i18n.UnsupportedMessage)
	}

	// The business's own message from the WhatsApp Business app: stored as the business's,
	// never answered (it is no inbound message: no outbound task).
	echo := send(func(o whatsapp.SampleOptions) []byte {
		o.From = owner
		return whatsapp.SampleEcho(o, "we open at 8 tomorrow")
	}, owner)
	if m := e.message(t, conv, echo, func(m store.Message) bool { return m.Operator == store.OperatorApp }, "the echo was not stored"); m.Direction == store.DirectionIn || m.Text != "we open at 8 tomorrow" {
		t.Errorf("the echo stored as %+v, want the business's message", m)
	}
	// The echo took the conversation over (a human of the business answered: the assistant is
	// silent, TestTakeoverByAHuman); handed back, as the console's button does, so that the
	// member's next message below is answered.
	testenv.Eventually(t, eventsWait, func() bool {
		c, err := e.conversations.Get(ctx, conv)
		return err == nil && c.HumanBy == store.HumanByApp
	}, "the echo did not take the conversation over")
	if err := e.conversations.HandBack(ctx, conv, "ops@example.com"); err != nil {
		t.Fatal(err)
	}

	// A number change: followed as the inbound task runs, never answered (no outbound task);
	// the contact is found by the new number and keeps its conversation, and the member stays a
	// member under the new number (served, not onboarded).
	const newNumber = "16505559876"
	moved := send(func(o whatsapp.SampleOptions) []byte { return whatsapp.SampleUserChangedNumber(o, newNumber, "") }, owner)
	testenv.Eventually(t, eventsWait, func() bool {
		c, ok, err := e.contacts.Find(ctx, "sunrise-bus", contact.Identity{WaID: newNumber})
		return err == nil && ok && c.ID == ownerContact.ID && c.WaID == newNumber
	}, "the number change was not followed: the new number does not find the member's contact")
	if target := e.traceTarget(t, bodies[moved], moved); target.Status != "identity_change" {
		t.Errorf("the number change traced as %+v, want identity_change (no task)", target)
	}
	if movedConv := e.conversationOf(t, "sunrise-bus", pn, contact.Identity{WaID: newNumber}); movedConv != conv {
		t.Errorf("the new number's conversation is %s, want the member's %s", movedConv, conv)
	}
	if _, err := e.conversations.GetMessage(ctx, conv, moved); err == nil {
		t.Error("the number change was stored as a message to answer")
	}
	if _, err := store.NewOutbound(e.db, store.Options{}).GetOutbound(ctx, tasks.IdempotencyKey(keyedid.Dev(), moved)); err == nil {
		t.Error("the number change got an outbound record: it must never be answered")
	}
	after := send(func(o whatsapp.SampleOptions) []byte { return whatsapp.SampleText(o, "hello from my new phone") }, newNumber)
	m := e.turnDone(t, conv, after)
	if len(m.Replies) != 1 || m.Replies[0].Key == string(i18n.OnboardingPrompt) {
		t.Errorf("the moved member's message got %v, want the assistant's answer (not the onboarding prompt)", replyKeys(m))
	}
	// The file listed the member by the number they left: that entry is suspended, and the
	// contact keeps the role by a membership of its own.
	if mem, ok, err := e.tenants.RuntimeMember(ctx, "sunrise-bus", ownerContact); err != nil || !ok {
		t.Errorf("the moved member has no membership of their own: %+v %v %v", mem, ok, err)
	}

	e.marketingOptOut(t, ctx, owner)
	e.accountRestriction(t, ctx)

	// A call event: recorded in the log, never a dead letter.
	post(t, e.st, whatsapp.SampleCall(whatsapp.SampleOptions{From: owner, MessageID: whatsapp.NewMessageID()}))
	testenv.Eventually(t, eventsWait, func() bool { return strings.Contains(e.logs.String(), `"event":"call_event"`) },
		"the call event was not recorded")
	if rep := e.health(t); rep.DeadLetters != 0 {
		dls, _ := store.NewDeadLetters(e.db, store.Options{}).ListDeadLetters(ctx, true, 10)
		for _, d := range dls {
			t.Logf("dead letter: %s retry %d: %s (%d)", d.Path, d.RetryCount, d.LastError, d.LastErrorCode)
		}
		t.Errorf("%d dead letters after the events, want none", rep.DeadLetters)
	}
}

// marketingOptOut: a contact stops marketing messages (user_preferences); the api then refuses
// a MARKETING template to it with 422 contact_opted_out and sends a UTILITY one.
func (e *eventsStack) marketingOptOut(t *testing.T, ctx context.Context, phone string) {
	t.Helper()
	o := whatsapp.SampleOptions{From: phone, MessageID: whatsapp.NewMessageID()}
	post(t, e.st, whatsapp.SampleTemplateStatus(o, "spring_sale", "APPROVED", "MARKETING"))
	post(t, e.st, whatsapp.SampleTemplateStatus(o, "order_update", "APPROVED", "UTILITY"))
	post(t, e.st, whatsapp.SamplePreference(o, "stop"))
	prefs := store.NewContactPrefs(e.db, store.Options{})
	who := e.contactOf(t, "sunrise-bus", contact.Identity{WaID: phone})
	testenv.Eventually(t, eventsWait, func() bool {
		out, err := prefs.OptedOutOfMarketing(ctx, "sunrise-bus", who, "spring_sale", "en_US")
		return err == nil && out
	}, "the stop was not recorded")
	testenv.Eventually(t, eventsWait, func() bool {
		out, err := prefs.OptedOutOfMarketing(ctx, "sunrise-bus", who, "order_update", "en_US")
		_, terr := prefs.Preference(ctx, "sunrise-bus", who)
		return err == nil && terr == nil && !out
	}, "the utility template was not recorded")

	// Meta has the utility template, so the send it accepts goes out (a send Meta refused for
	// good would be a dead letter).
	e.st.Graph.AddTemplate("order_update")
	key, keyID, hash, _ := apikey.New()
	if err := store.NewAPIKeys(e.db, store.Options{}).CreateAPIKey(ctx, store.APIKeyRecord{ID: keyID, TenantID: "sunrise-bus", Hash: hash}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		template string
		want     int
		code     string
	}{
		{"spring_sale", http.StatusUnprocessableEntity, "contact_opted_out"},
		{"order_update", http.StatusAccepted, ""},
	} {
		body := []byte(`{"phone_number_id":"` + whatsapp.DefaultSampleOptions.PhoneNumberID + `","to":"` + phone + `","type":"template","template":{"name":"` + c.template + `","language":{"code":"en_US"}}}`)
		req, _ := http.NewRequest(http.MethodPost, e.st.APIURL+"/v1/messages", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", "optout-"+c.template)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var got struct {
			Error struct {
				Code string `json:"code"`
			} `json:"error"`
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		_ = json.Unmarshal(raw, &got)
		if resp.StatusCode != c.want || got.Error.Code != c.code {
			t.Errorf("template %s to a stopped contact: %d %s, want %d %q", c.template, resp.StatusCode, raw, c.want, c.code)
		}
	}
}

// accountRestriction: Meta restricts the tenant's WhatsApp Business Account; the tenant record
// says so (tenants show), the health report is degraded naming the tenant, and the log line
// matches the alert's filter (event account_update at ERROR).
func (e *eventsStack) accountRestriction(t *testing.T, ctx context.Context) {
	t.Helper()
	post(t, e.st, whatsapp.SampleAccountUpdate(whatsapp.SampleOptions{MessageID: whatsapp.NewMessageID()}, "ACCOUNT_RESTRICTION"))
	testenv.Eventually(t, eventsWait, func() bool {
		rec, err := e.tenants.Get(ctx, "sunrise-bus")
		return err == nil && rec.Account.Restricted && rec.Account.Event == "ACCOUNT_RESTRICTION"
	}, "the restriction was not recorded on the tenant")

	rep := e.health(t)
	if rep.Status == "ok" || len(rep.RestrictedAccounts) != 1 || !strings.HasPrefix(rep.RestrictedAccounts[0], "sunrise-bus") ||
		!strings.Contains(rep.Reason, "sunrise-bus") {
		t.Errorf("health: %+v, want degraded naming sunrise-bus", rep)
	}

	alert := false
	for _, line := range strings.Split(e.logs.String(), "\n") {
		var l struct {
			Severity string `json:"severity"`
			Event    string `json:"event"`
		}
		if json.Unmarshal([]byte(line), &l) == nil && l.Severity == "ERROR" && l.Event == "account_update" {
			alert = true
		}
	}
	if !alert {
		t.Error(`no log line with severity ERROR and event account_update (the alert's filter)`)
	}
}

// healthReport is the part of the worker's health report the events tests read.
type healthReport struct {
	Status             string   `json:"status"`
	Reason             string   `json:"reason"`
	RestrictedAccounts []string `json:"restricted_accounts"`
	DeadLetters        int      `json:"dead_letters_pending"`
}

// health reads the worker's GET /internal/health (what `wapipe health` reports).
func (e *eventsStack) health(t *testing.T) healthReport {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, e.st.WorkerURL+"/internal/health", nil)
	req.Header.Set(tasks.HeaderInternalToken, e.st.InternalToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var rep healthReport
	if err := json.NewDecoder(resp.Body).Decode(&rep); err != nil {
		t.Fatalf("GET /internal/health: %d: %v", resp.StatusCode, err)
	}
	return rep
}

// TestOtherEventsDefaultPathEndToEnd posts Meta's other events for a business number no
// tenant owns: the single-tenant default answers what it acknowledges, says "send it another
// way" to an unsupported message only, and answers nothing else; a number change is recorded
// and makes no task; the business app's messages are never answered (the default path keeps
// no conversation to store them in).
func TestOtherEventsDefaultPathEndToEnd(t *testing.T) {
	t.Parallel()
	e := startEventsStack(t)
	ctx := context.Background()
	const contact = "447700900555"
	outbound := store.NewOutbound(e.db, store.Options{})
	opts := func() whatsapp.SampleOptions {
		return whatsapp.SampleOptions{WABAID: "199000000000000", PhoneNumberID: defaultPathNumber, From: contact, MessageID: whatsapp.NewMessageID()}
	}
	// answered waits for the default path to settle message id's reply and returns the text
	// sent, "" when the send was skipped.
	answered := func(id string) string {
		t.Helper()
		var rec store.OutboundRecord
		testenv.Eventually(t, eventsWait, func() bool {
			var err error
			rec, err = outbound.GetOutbound(ctx, tasks.IdempotencyKey(keyedid.Dev(), id))
			return err == nil && (rec.State == store.OutboundSent || rec.State == store.OutboundSkipped)
		}, "the default path never settled the reply to %s", id)
		if rec.State == store.OutboundSkipped {
			return ""
		}
		for _, s := range e.st.Graph.Sends() {
			if s.MessageID == rec.GraphMessageID {
				text, _ := s.Body["text"].(map[string]any)
				body, _ := text["body"].(string)
				return body
			}
		}
		t.Fatalf("the reply to %s (%s) is not among the fake Graph API's sends", id, rec.GraphMessageID)
		return ""
	}

	o := opts()
	post(t, e.st, whatsapp.SampleText(o, "hello"))
	if got := answered(o.MessageID); got == "" {
		t.Fatal("the default path did not acknowledge a text")
	}
	first := o.MessageID
	unsupported := i18n.Text(i18n.Default, i18n.UnsupportedMessage)
	for _, c := range []struct {
		name string
		body func(o whatsapp.SampleOptions) []byte
		want string // "" for no reply
	}{
		{"revoke", func(o whatsapp.SampleOptions) []byte { return whatsapp.SampleRevoke(o, first) }, ""},
		{"edit", func(o whatsapp.SampleOptions) []byte { return whatsapp.SampleEdit(o, first, "hello again") }, ""},
		{"order", func(o whatsapp.SampleOptions) []byte {
			return whatsapp.SampleOrder(o, "cat-1", "", []whatsapp.ProductItem{{ProductRetailerID: "burger-01", Quantity: "3"}})
		}, "Thanks, we received your order."},
		{"call_permission", func(o whatsapp.SampleOptions) []byte { return whatsapp.SampleCallPermissionReply(o, "reject") }, ""},
		{"unsupported", whatsapp.SampleUnsupported, unsupported},
	} {
		o := opts()
		post(t, e.st, c.body(o))
		if got := answered(o.MessageID); got != c.want {
			t.Errorf("%s: the default path answered %q, want %q", c.name, got, c.want)
		}
	}

	// A number change: followed (recorded) as the inbound task runs, never a task, never
	// answered.
	o = opts()
	changed := whatsapp.SampleUserChangedNumber(o, "447700900556", "")
	post(t, e.st, changed)
	if target := e.traceTarget(t, changed, o.MessageID); target.Status != "identity_change" {
		t.Errorf("the number change on the default path traced as %+v, want identity_change (no task)", target)
	}
	if _, err := outbound.GetOutbound(ctx, tasks.IdempotencyKey(keyedid.Dev(), o.MessageID)); err == nil {
		t.Error("the number change got an outbound record: it must never be answered")
	}

	// The business app's message: recorded, never answered; the default path has no tenant,
	// hence no contact and no conversation to store it in.
	o = opts()
	post(t, e.st, whatsapp.SampleEcho(o, "see you soon"))
	testenv.Eventually(t, eventsWait, func() bool {
		return strings.Contains(e.logs.String(), `"event":"message_echo"`)
	}, "the echo was not handled")
	// A preference on the default path: recorded in the log only (no tenant sends templates).
	post(t, e.st, whatsapp.SamplePreference(opts(), "stop"))
	testenv.Eventually(t, eventsWait, func() bool {
		return strings.Contains(e.logs.String(), `"event":"contact_preference_default_path"`)
	}, "the default path's preference was not handled")
	if _, err := outbound.GetOutbound(ctx, tasks.IdempotencyKey(keyedid.Dev(), o.MessageID)); err == nil {
		t.Error("the echo got an outbound record: it must never be answered")
	}
}
