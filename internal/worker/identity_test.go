package worker_test

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	wacontact "github.com/wapipe/wapipe/internal/contact"
	"github.com/wapipe/wapipe/internal/graph/graphfake"
	"github.com/wapipe/wapipe/internal/i18n"
	"github.com/wapipe/wapipe/internal/keyedid"
	"github.com/wapipe/wapipe/internal/logging/logcheck"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/taskqueue"
	"github.com/wapipe/wapipe/internal/tenant"
	"github.com/wapipe/wapipe/internal/testenv"
	"github.com/wapipe/wapipe/internal/whatsapp"
	"github.com/wapipe/wapipe/tasks"
)

// The end-to-end tests of people who write by business-scoped user id (BSUID, Meta's usernames:
// shared/meta/usernames.md): a tenant in mode ack and one in mode llm answer a person who shares
// no phone number by "recipient", know them as one contact whatever identifiers their messages
// carry, follow their identity changes without answering them, and never log a BSUID or a
// username.

// Identifiers of the people of these tests. The phones are the sample numbers' (checked by
// every stack's log check); the BSUIDs and usernames are checked by each test.
const (
	bsuidA     = "CO.5581920374461120"
	bsuidB     = "CO.6690314852207719"
	bsuidC     = "US.8841260937715502"
	usernameA  = "@bo_rivera"
	phoneNew   = "33698765432"
	llmDefault = "Hello! How can I help you?" // geminifake's answer to what no rule matches
)

// person is who writes: a phone, a BSUID and a username, any of which may be absent.
type person struct{ phone, userID, username, name string }

// identity is how wapipe names p.
func (p person) identity() wacontact.Identity {
	return wacontact.FromWebhook(p.phone, p.userID, "", p.username, p.name)
}

// bsuidPayload is a webhook delivery of one message from p to number, as Meta sends it since
// usernames: "from" only when p shares a phone, "from_user_id" when p has a BSUID, and the
// contacts[] entry with wa_id, user_id and the profile's name and username. msg is the message
// object without its sender.
func bsuidPayload(number string, p person, msg map[string]any) []byte {
	profile := map[string]any{"name": p.name}
	if p.username != "" {
		profile["username"] = p.username
	}
	c := map[string]any{"profile": profile}
	if p.phone != "" {
		c["wa_id"], msg["from"] = p.phone, p.phone
	}
	if p.userID != "" {
		c["user_id"], msg["from_user_id"] = p.userID, p.userID
	}
	value := map[string]any{
		"messaging_product": "whatsapp",
		"metadata":          map[string]any{"display_phone_number": "15550783881", "phone_number_id": number},
		"messages":          []any{msg},
	}
	if msg["type"] != "system" {
		// Meta sends no contacts[] with a system message.
		value["contacts"] = []any{c}
	}
	b, err := json.Marshal(map[string]any{"object": "whatsapp_business_account", "entry": []any{map[string]any{
		"id": "300000000000001", "changes": []any{map[string]any{"field": "messages", "value": value}},
	}}})
	if err != nil {
		panic(err)
	}
	return b
}

// textFrom is a text message object, with a fresh id and Meta time now.
func textFrom(body string) map[string]any {
	return map[string]any{"id": whatsapp.NewMessageID(), "timestamp": strconv.FormatInt(time.Now().Unix(), 10),
		"type": "text", "text": map[string]any{"body": body}}
}

// sayAs delivers a text from p to number through the webhook and returns its message id.
func (s *stack) sayAs(number string, p person, body string) string {
	s.t.Helper()
	msg := textFrom(body)
	s.deliver(bsuidPayload(number, p, msg))
	return msg["id"].(string)
}

// normalized is the one message of a delivery, as the webhook's fan-out reads it.
func normalized(t *testing.T, payload []byte) whatsapp.Message {
	t.Helper()
	p, err := whatsapp.Parse(payload)
	if err != nil {
		t.Fatal(err)
	}
	msgs, _ := whatsapp.Normalize(p)
	if len(msgs) != 1 {
		t.Fatalf("%d messages in the delivery, want 1", len(msgs))
	}
	return msgs[0]
}

// enqueueOutbound puts out on its tenant's queue as a process_outbound task, as an older
// fan-out made it (or a task that was in the queue when the worker was updated).
func (s *stack) enqueueOutbound(out tasks.Outbound) {
	s.t.Helper()
	ctx := context.Background()
	tq, err := taskqueue.New(ctx, taskqueue.Config{ProjectID: s.Project, Location: s.Location, EmulatorHost: s.TasksAddr,
		BaseURL: s.WorkerURL, Token: s.InternalToken})
	if err != nil {
		s.t.Fatal(err)
	}
	defer tq.Close()
	body, err := json.Marshal(out)
	if err != nil {
		s.t.Fatal(err)
	}
	if _, err := tq.Enqueue(ctx, taskqueue.Task{Queue: tasks.TenantQueueID(out.TenantID), ID: tasks.OutboundTaskID(out.Message.ID),
		Path: tasks.ProcessOutboundPath, Body: body, CorrelationID: out.CorrelationID}); err != nil {
		s.t.Fatal(err)
	}
}

// oldOutboundTask is the outbound task an older fan-out made of message m for tenantID.
func oldOutboundTask(tenantID string, m whatsapp.Message) tasks.Outbound {
	sender := m.Identity()
	return tasks.Outbound{IdempotencyKey: tasks.IdempotencyKey(keyedid.Dev(), m.ID), CorrelationID: "old-task",
		InboundEventID: m.ID, PhoneNumberID: m.PhoneNumberID, To: sender.WaID, UserID: sender.UserID, Message: m,
		ReceivedAt: time.Now(), TenantID: tenantID}
}

// repliesTo are the successful sends answering message id (by their callback data).
func (s *stack) repliesTo(id string) []graphfake.Request {
	key := tasks.IdempotencyKey(keyedid.Dev(), id)
	var out []graphfake.Request
	for _, r := range s.Graph.Sends() {
		if r.Body["biz_opaque_callback_data"] == key && r.Status == 200 {
			out = append(out, r)
		}
	}
	return out
}

// contactOf is tenantID's contact of the person id names; ok is false when it has none.
func (s *stack) contactOf(tenantID string, id wacontact.Identity) (store.Contact, bool) {
	s.t.Helper()
	c, ok, err := store.NewContacts(store.NewDB(s.fs), store.Options{}).Find(context.Background(), tenantID, id)
	if err != nil {
		s.t.Fatalf("find contact: %v", err)
	}
	return c, ok
}

// conversationOfID is the conversation of the person id names with tenantID's number.
func (s *stack) conversationOfID(tenantID, number string, id wacontact.Identity) string {
	s.t.Helper()
	conv, ok, err := store.NewConversationStore(store.NewDB(s.fs), store.Options{}).ConversationOf(context.Background(), tenantID, number, id)
	if err != nil || !ok {
		s.t.Fatalf("conversation of the person: ok %v, %v", ok, err)
	}
	return conv
}

// inboundCount is the number of inbound messages stored in conversation conv.
func (s *stack) inboundCount(conv string) int {
	s.t.Helper()
	msgs, err := store.NewConversationStore(store.NewDB(s.fs), store.Options{}).Messages(context.Background(), conv, 100)
	if err != nil {
		s.t.Fatalf("messages of the conversation: %v", err)
	}
	n := 0
	for _, m := range msgs {
		if m.Direction == store.DirectionIn {
			n++
		}
	}
	return n
}

// wantTo checks that send r goes by "to" to phone, with no "recipient".
func wantTo(t *testing.T, r graphfake.Request, phone string) {
	t.Helper()
	if _, has := r.Body["recipient"]; has || r.Body["to"] != phone || r.Recipient != "" {
		t.Errorf("reply sent to %v / recipient %v (%q), want \"to\" the phone and no recipient", r.Body["to"], r.Body["recipient"], r.Recipient)
	}
}

// wantRecipient checks that send r goes by "recipient" to userID, with no "to".
func wantRecipient(t *testing.T, r graphfake.Request, userID string) {
	t.Helper()
	if _, has := r.Body["to"]; has || r.Recipient != userID || r.Body["recipient"] != userID {
		t.Errorf("reply sent to %v / recipient %v (%q), want \"recipient\" the BSUID and no \"to\"", r.Body["to"], r.Body["recipient"], r.Recipient)
	}
}

// identityMode is a tenant's assistant mode, as these tests apply it.
type identityMode struct {
	name string
	// file is the tenant file's assistant section.
	file string
	// answer is the reply to an ordinary "hello" of someone the tenant serves.
	answer string
}

var identityModes = []identityMode{
	{"ack", "assistant: {mode: ack, ack_text: \"Got it.\"}\n", "Got it."},
	{"llm", "assistant: {mode: llm, model: gemini-2.5-flash, instructions: Help., min_confidence: 0.5}\n", llmDefault},
}

// forEachMode runs test for a tenant in each mode, each on its own stack; the stack's logs must
// name none of ids (BSUIDs, usernames) and none of phones.
func forEachMode(t *testing.T, phones, ids []string, test func(t *testing.T, s *stack, m identityMode)) {
	t.Parallel()
	for _, m := range identityModes {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			s, _ := assistantStack(t)
			test(t, s, m)
			if n := logcheck.Check(t, s.logs.String(), phones, ids); n == 0 {
				t.Error("no log lines checked")
			}
		})
	}
}

// TestUsernameOnlySender: a person with a username who shares no phone number (no "from", only
// "from_user_id", contacts[].user_id and profile.username) is answered once, by "recipient"
// with their BSUID and no "to". Their later message with both the phone and the same BSUID
// continues the same conversation, and its reply goes by "to".
func TestUsernameOnlySender(t *testing.T) {
	forEachMode(t, []string{contact}, []string{bsuidA, usernameA}, func(t *testing.T, s *stack, m identityMode) {
		tid := s.applyTenant(s.ops(), tenantFile("bsuid-"+m.name, numberA, "en", "public", m.file), "EAAtoken-bsuid-"+m.name)
		bo := person{userID: bsuidA, username: usernameA, name: "Bo"}

		first := s.sayAs(numberA, bo, "hello")
		r := s.sendFor(first)
		s.settled(tid)
		if got := s.repliesTo(first); len(got) != 1 {
			t.Fatalf("%d replies to the username-only message, want 1", len(got))
		}
		wantRecipient(t, r, bsuidA)
		if body(r) != m.answer {
			t.Errorf("reply %q, want %q", body(r), m.answer)
		}
		conv := s.conversationOfID(tid, numberA, wacontact.Identity{UserID: bsuidA})
		ct, ok := s.contactOf(tid, wacontact.Identity{UserID: bsuidA})
		if !ok || ct.WaID != "" || ct.Username != strings.TrimPrefix(usernameA, "@") {
			t.Errorf("contact %+v (found %v), want one without a phone, with the username", ct, ok)
		}

		// The same person, now sharing the phone.
		bo.phone = contact
		second := s.sayAs(numberA, bo, "hello again")
		r = s.sendFor(second)
		s.settled(tid)
		if got := s.repliesTo(second); len(got) != 1 {
			t.Fatalf("%d replies to the second message, want 1", len(got))
		}
		wantTo(t, r, contact)
		if got := s.conversationOfID(tid, numberA, wacontact.Identity{WaID: contact}); got != conv {
			t.Errorf("the phone's conversation is %s, want the BSUID's %s", got, conv)
		}
		if got, ok := s.contactOf(tid, wacontact.Identity{WaID: contact}); !ok || got.ID != ct.ID || got.UserID != bsuidA {
			t.Errorf("the phone's contact %s (%v), want %s with the BSUID", got.ID, ok, ct.ID)
		}
		if n := s.inboundCount(conv); n != 2 {
			t.Errorf("%d inbound messages in the conversation, want 2", n)
		}
		if n := len(s.Graph.Sends()); n != 2 {
			t.Errorf("%d sends, want 2", n)
		}
	})
}

// TestPhoneContactWritesByBSUID: a person first seen by phone alone (their contact and
// conversation made by that message, and their membership by the invite code it carried), who
// then sends one message with both the phone and a BSUID, then writes by BSUID alone, is the
// same contact: still a member, in the same conversation.
func TestPhoneContactWritesByBSUID(t *testing.T) {
	forEachMode(t, []string{contact}, []string{bsuidA, usernameA}, func(t *testing.T, s *stack, m identityMode) {
		ops := s.ops()
		tid := s.applyTenant(ops, tenantFile("members-"+m.name, numberA, "en", "members", m.file), "EAAtoken-members-"+m.name)
		ctx := context.Background()
		code, _, err := ops.Invite(ctx, tid, tenant.RoleMember)
		if err != nil {
			t.Fatal(err)
		}
		marie := person{phone: contact, name: "Marie"}
		reply := func(p person, text string) graphfake.Request {
			t.Helper()
			id := s.sayAs(numberA, p, text)
			r := s.sendFor(id)
			s.settled(tid)
			if n := len(s.repliesTo(id)); n != 1 {
				t.Fatalf("%d replies to %q, want 1", n, text)
			}
			return r
		}

		if got := body(reply(marie, code)); got != i18n.Text("en", i18n.WelcomeName, "name", "Marie") {
			t.Fatalf("the invite code got %q, want the welcome", got)
		}
		ct, ok := s.contactOf(tid, marie.identity())
		if !ok {
			t.Fatal("no contact for the phone")
		}
		conv := s.mustConversationOf(tid, numberA, contact)

		marie.userID, marie.username = bsuidA, usernameA
		r := reply(marie, "hello")
		if body(r) != m.answer {
			t.Errorf("with phone and BSUID: %q, want %q", body(r), m.answer)
		}
		wantTo(t, r, contact)

		byUserID := person{userID: bsuidA, username: usernameA, name: "Marie"}
		r = reply(byUserID, "hello from my username")
		if body(r) != m.answer {
			t.Errorf("by BSUID alone: %q, want the member's answer %q (not the onboarding prompt)", body(r), m.answer)
		}
		// The contact knows the phone: the reply goes to it (contact.Identity.Address).
		wantTo(t, r, contact)

		got, ok := s.contactOf(tid, wacontact.Identity{UserID: bsuidA})
		if !ok || got.ID != ct.ID || got.WaID != contact {
			t.Errorf("the BSUID's contact %s (%v, phone known %v), want %s", got.ID, ok, got.WaID == contact, ct.ID)
		}
		if c := s.conversationOfID(tid, numberA, wacontact.Identity{UserID: bsuidA}); c != conv {
			t.Errorf("the BSUID's conversation %s, want the phone's %s", c, conv)
		}
		if n := s.inboundCount(conv); n != 3 {
			t.Errorf("%d inbound messages in the conversation, want 3", n)
		}
		if _, member, err := store.NewTenants(store.NewDB(s.fs), store.Options{}).RuntimeMember(ctx, tid, got); err != nil || !member {
			t.Errorf("the contact is no longer a member (%v)", err)
		}
		if n := s.logs.Count("onboarding_prompt"); n != 0 {
			t.Errorf("%d onboarding prompts, want none", n)
		}
	})
}

// TestIdentityChangeInOutboundTask: a system message user_changed_number, then one
// user_changed_user_id, that reach process_outbound (tasks an older fan-out made: the fan-out
// now follows them itself) are applied (people.Directory.Change) and never answered: the contact
// keeps its id and conversation under its new phone and BSUIDs, the old phone no longer finds
// it, and the person's next message by the newest BSUID alone continues the conversation.
func TestIdentityChangeInOutboundTask(t *testing.T) {
	forEachMode(t, []string{contact, phoneNew}, []string{bsuidA, bsuidB, bsuidC, usernameA}, func(t *testing.T, s *stack, m identityMode) {
		tid := s.applyTenant(s.ops(), tenantFile("moves-"+m.name, numberA, "en", "public", m.file), "EAAtoken-moves-"+m.name)
		ana := person{phone: contact, userID: bsuidA, username: usernameA, name: "Ana"}
		first := s.sayAs(numberA, ana, "hello")
		wantTo(t, s.sendFor(first), contact)
		s.settled(tid)
		ct, ok := s.contactOf(tid, ana.identity())
		if !ok {
			t.Fatal("no contact")
		}
		conv := s.mustConversationOf(tid, numberA, contact)
		sends := len(s.Graph.Sends())
		ts := strconv.FormatInt(time.Now().Unix(), 10)

		// user_changed_number: a new phone and a new BSUID.
		changed := normalized(t, bsuidPayload(numberA, person{phone: contact, userID: bsuidA}, map[string]any{
			"id": whatsapp.NewMessageID(), "timestamp": ts, "type": "system",
			"system": map[string]any{"body": "Ana changed their phone number", "wa_id": phoneNew, "type": "user_changed_number",
				"user_id": bsuidC, "previous_user_id": bsuidA}}))
		s.enqueueOutbound(oldOutboundTask(tid, changed))
		s.settled(tid)
		for _, id := range []wacontact.Identity{{WaID: phoneNew}, {UserID: bsuidC}} {
			if got, ok := s.contactOf(tid, id); !ok || got.ID != ct.ID {
				t.Errorf("after the number change, %+v finds %s (%v), want %s", id, got.ID, ok, ct.ID)
			}
		}
		if got, ok := s.contactOf(tid, wacontact.Identity{WaID: contact}); ok {
			t.Errorf("the old phone still finds contact %s", got.ID)
		}
		if got := s.conversationOfID(tid, numberA, wacontact.Identity{WaID: phoneNew}); got != conv {
			t.Errorf("the new phone's conversation %s, want %s", got, conv)
		}

		// user_changed_user_id: the BSUID changes again; the phone is not named.
		changedID := normalized(t, bsuidPayload(numberA, person{userID: bsuidC}, map[string]any{
			"id": whatsapp.NewMessageID(), "timestamp": ts, "type": "system",
			"system": map[string]any{"body": "Ana's business-scoped user ID changed", "type": "user_changed_user_id",
				"user_id": bsuidB, "previous_user_id": bsuidC}}))
		s.enqueueOutbound(oldOutboundTask(tid, changedID))
		s.settled(tid)
		if got, ok := s.contactOf(tid, wacontact.Identity{UserID: bsuidB}); !ok || got.ID != ct.ID || got.WaID != phoneNew {
			t.Errorf("after the BSUID change, the new BSUID finds %s (%v), want %s with the new phone", got.ID, ok, ct.ID)
		}

		for _, id := range []string{changed.ID, changedID.ID} {
			if n := len(s.repliesTo(id)); n != 0 {
				t.Errorf("%d replies to an identity change, want none", n)
			}
		}
		if n := len(s.Graph.Sends()); n != sends {
			t.Errorf("%d sends after the identity changes, want %d (none)", n, sends)
		}
		if n := s.logs.Count("contact_identity_changed"); n < 2 {
			t.Errorf("%d contact_identity_changed log lines, want one for each change", n)
		}

		// The person writes by the newest BSUID alone: the same conversation, answered at the
		// phone the contact now has.
		next := s.sayAs(numberA, person{userID: bsuidB, username: usernameA, name: "Ana"}, "hello, it's me")
		r := s.sendFor(next)
		s.settled(tid)
		if body(r) != m.answer {
			t.Errorf("reply %q, want %q", body(r), m.answer)
		}
		wantTo(t, r, phoneNew)
		if got := s.conversationOfID(tid, numberA, wacontact.Identity{UserID: bsuidB}); got != conv {
			t.Errorf("the new BSUID's conversation %s, want %s", got, conv)
		}
		if n := s.inboundCount(conv); n != 2 {
			// The notices are followed and never stored or answered, as process_inbound does.
			t.Errorf("%d inbound messages in the conversation, want 2 (the two texts; no notice)", n)
		}
	})
}

// TestOutboundTaskNamesNobody: a tenant's outbound task with neither "to", "user_id" nor any
// identifier in its message (a username is none) is malformed: kept as a dead letter, nothing
// sent.
// One with "user_id" alone is accepted and answered by "recipient".
func TestOutboundTaskNamesNobody(t *testing.T) {
	forEachMode(t, []string{contact}, []string{bsuidA, usernameA}, func(t *testing.T, s *stack, m identityMode) {
		tid := s.applyTenant(s.ops(), tenantFile("nobody-"+m.name, numberA, "en", "public", m.file), "EAAtoken-nobody-"+m.name)
		ctx := context.Background()
		message := func(username string) whatsapp.Message {
			return whatsapp.Message{ID: whatsapp.NewMessageID(), PhoneNumberID: numberA, Type: "text", Text: "hello",
				Timestamp: strconv.FormatInt(time.Now().Unix(), 10), Username: username}
		}

		nobody := oldOutboundTask(tid, message(usernameA))
		s.enqueueOutbound(nobody)
		var dls []store.DeadLetter
		testenv.Eventually(t, 20*time.Second, func() bool {
			var err error
			dls, err = s.records.ListDeadLettersFor(ctx, "", nobody.IdempotencyKey)
			return err == nil && len(dls) == 1
		}, "the task that names nobody was not dead-lettered")
		if dls[0].Path != tasks.ProcessOutboundPath || !strings.Contains(dls[0].LastError, "malformed outbound task") ||
			!strings.Contains(dls[0].LastError, "names nobody") {
			t.Errorf("dead letter %s: %q", dls[0].Path, dls[0].LastError)
		}
		s.settled(tid)
		if n := len(s.Graph.Sends()); n != 0 {
			t.Errorf("%d sends for a task that names nobody, want 0", n)
		}

		byUserID := oldOutboundTask(tid, message(""))
		byUserID.UserID = bsuidA
		s.enqueueOutbound(byUserID)
		r := s.sendFor(byUserID.Message.ID)
		s.settled(tid)
		wantRecipient(t, r, bsuidA)
		if body(r) != m.answer {
			t.Errorf("reply %q, want %q", body(r), m.answer)
		}
		if n := len(s.repliesTo(byUserID.Message.ID)); n != 1 {
			t.Errorf("%d replies, want 1", n)
		}
		if _, ok := s.contactOf(tid, wacontact.Identity{UserID: bsuidA}); !ok {
			t.Error("no contact for the task's user_id")
		}
		if dls, err := s.records.ListDeadLettersFor(ctx, "", byUserID.IdempotencyKey); err != nil || len(dls) != 0 {
			t.Errorf("%d dead letters for the task by user_id (%v), want 0", len(dls), err)
		}
	})
}

// TestInboundBSUIDSenders: process_inbound (on fakes, the single-tenant default) makes an
// outbound task of a username-only sender's message, named by user_id and without "to"; it
// makes none of a message that names nobody (recorded no_sender) nor of an identity change
// (recorded identity_change), and logs no BSUID or username.
func TestInboundBSUIDSenders(t *testing.T) {
	t.Parallel()
	number := whatsapp.DefaultSampleOptions.PhoneNumberID
	noOne := textFrom("who am I")
	change := map[string]any{"id": whatsapp.NewMessageID(), "timestamp": strconv.FormatInt(time.Now().Unix(), 10), "type": "system",
		"system": map[string]any{"type": "user_changed_user_id", "user_id": bsuidB, "previous_user_id": bsuidA}}
	for _, tc := range []struct {
		name    string
		payload []byte
		counts  map[string]any
		status  string // the trace target's status
	}{
		{"username only", bsuidPayload(number, person{userID: bsuidA, username: usernameA, name: "Bo"}, textFrom("hi")),
			map[string]any{"tasks_created": 1.0}, "created"},
		{"nobody", bsuidPayload(number, person{username: usernameA, name: "Bo"}, noOne),
			map[string]any{"tasks_created": 0.0, "no_sender": 1.0}, "no_sender"},
		{"identity change", bsuidPayload(number, person{userID: bsuidA}, change),
			map[string]any{"tasks_created": 0.0, "identity_changes": 1.0}, "identity_change"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			hs := newHarness(t)
			id := normalized(t, tc.payload).ID
			got := hs.run(tasks.ProcessInboundPath, inboundTask("evt-1", tc.payload), attempt{})
			want := map[string]any{"status": "ok", "messages": 1.0, "statuses": 0.0, "tasks_existed": 0.0}
			for k, v := range tc.counts {
				want[k] = v
			}
			hs.want(got, 200, want, "inbound_fanout")
			hs.records.mu.Lock()
			started := append([]store.Trace(nil), hs.records.started...)
			hs.records.mu.Unlock()
			if len(started) != 1 || started[0].Outbound[tasks.IdempotencyKey(keyedid.Dev(), id)].Status != tc.status {
				t.Errorf("trace targets %+v, want the message's %s", started, tc.status)
			}
			qs := hs.queue.Tasks()
			if tc.status != "created" {
				if len(qs) != 0 {
					t.Errorf("%d outbound tasks, want none", len(qs))
				}
			} else {
				var body map[string]any
				if len(qs) != 1 || json.Unmarshal(qs[0].Body, &body) != nil {
					t.Fatalf("%d outbound tasks, want 1", len(qs))
				}
				if _, hasTo := body["to"]; hasTo || body["user_id"] != bsuidA {
					t.Errorf("outbound task to %v, user_id %v: want no \"to\" and the BSUID", body["to"], body["user_id"])
				}
			}
			logcheck.Check(t, hs.logs.String(), []string{customerPhone}, []string{bsuidA, bsuidB, usernameA})
		})
	}
}
