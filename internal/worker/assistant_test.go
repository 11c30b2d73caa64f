package worker_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wapipe/wapipe/internal/actioncall/actionfake"
	"github.com/wapipe/wapipe/internal/assistant"
	wacontact "github.com/wapipe/wapipe/internal/contact"
	"github.com/wapipe/wapipe/internal/devstack"
	"github.com/wapipe/wapipe/internal/graph/graphfake"
	"github.com/wapipe/wapipe/internal/i18n"
	"github.com/wapipe/wapipe/internal/keyedid"
	"github.com/wapipe/wapipe/internal/llm/geminifake"
	"github.com/wapipe/wapipe/internal/operator"
	"github.com/wapipe/wapipe/internal/secrets"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/testenv"
	"github.com/wapipe/wapipe/internal/turnstate"
	"github.com/wapipe/wapipe/internal/webhook"
	"github.com/wapipe/wapipe/internal/whatsapp"
	"github.com/wapipe/wapipe/tasks"
)

// The end-to-end assistant tests: the whole pipeline with a tenant in mode llm, the fake Vertex
// AI Gemini (its default rules understand "book bus 01 for Pak Agus on 1 March") and the fake
// business action endpoint, which verifies each call's signature.

// clock is the webhook's clock, which the turns run on (received_at): tests move it forward to
// expire a confirmation or end a rate-limit window.
type clock struct{ offset atomic.Int64 }

func (c *clock) now() time.Time          { return time.Now().Add(time.Duration(c.offset.Load())) }
func (c *clock) advance(d time.Duration) { c.offset.Add(int64(d)) }

// assistantStack is a stack whose webhook runs on a movable clock.
func assistantStack(t *testing.T) (*stack, *clock) {
	t.Helper()
	c := &clock{}
	s := newStack(t, stackOptions{webhook: []func(*webhook.Deps){func(d *webhook.Deps) { d.Now = c.now }}})
	return s, c
}

// assistantTenant applies a tenant in mode llm on number with the booking intents, its token and
// the devstack's action secret; extra is more of the tenant file (limits, quota…).
func (s *stack) assistantTenant(id, number, extra string) string {
	s.t.Helper()
	return s.assistantTenantWith(s.ops(), id, number, extra)
}

// assistantTenantWith is assistantTenant with the operator's commands ops.
func (s *stack) assistantTenantWith(ops *operator.Tenants, id, number, extra string) string {
	s.t.Helper()
	return s.assistantTenantOf(ops, id, number, "en", extra, bookingIntents)
}

// bookingIntents are the assistant tenants' intents, as the tenant file writes them.
const bookingIntents = `    - name: create_booking
      description: a new booking of a bus for a client on a date
      fields: {client: string, date: date, route: string, bus: string, price: integer}
      required: [client, date, bus]
      confirm: true
    - {name: check_schedule, description: who drives which bus when, fields: {date: date}, confirm: false}
`

// assistantTenantOf is assistantTenantWith in language lang with intents (the tenant file's
// assistant.intents entries) of its own.
func (s *stack) assistantTenantOf(ops *operator.Tenants, id, number, lang, extra, intents string) string {
	s.t.Helper()
	file := tenantFile(id, number, lang, "public", fmt.Sprintf(`members:
  - {wa_id: %q, role: owner, name: Marie}
%sassistant:
  mode: llm
  model: gemini-2.5-flash
  instructions: You are the operations assistant of a tour-bus company.
  min_confidence: 0.7
  action_url: %s
  intents:
%s`, contact, extra, s.ActionURL, intents))
	tid := s.applyTenant(ops, file, "token-"+id)
	ctx := context.Background()
	keeper, err := secrets.New(ctx, secrets.Config{Dev: true})
	if err != nil {
		s.t.Fatal(err)
	}
	defer keeper.Close()
	sealed, err := keeper.Encrypt(ctx, []byte(devstack.DevActionSecret), secrets.AD(tid, secrets.PurposeActionSecret))
	if err != nil {
		s.t.Fatal(err)
	}
	if err := store.NewTenants(store.NewDB(s.fs), store.Options{}).SetActionSecret(ctx, tid, sealed); err != nil {
		s.t.Fatal(err)
	}
	return tid
}

// text delivers a text from `from` to number at Meta time ts (now when zero) and returns its id.
func (s *stack) text(number, from, body string, ts time.Time) string {
	s.t.Helper()
	payload := whatsapp.SampleText(whatsapp.SampleOptions{PhoneNumberID: number, From: from, ContactName: "Marie", Timestamp: ts}, body)
	s.deliver(payload)
	return messageIDs(s.t, payload)[0]
}

// tap delivers a reply-button tap on the message promptID and returns the payload (to redeliver).
func (s *stack) tap(number, from, id, promptID string) []byte {
	s.t.Helper()
	payload := whatsapp.SampleButtonReply(whatsapp.SampleOptions{PhoneNumberID: number, From: from, ContextID: promptID}, id, id)
	s.deliver(payload)
	return payload
}

// sendsTo returns the successful sends to a contact, in the order they reached the fake.
func (s *stack) sendsTo(to string) []graphfake.Request {
	var out []graphfake.Request
	for _, r := range s.Graph.Sends() {
		if r.Body["to"] == to && r.Status == 200 {
			out = append(out, r)
		}
	}
	return out
}

// waitSendsTo waits until n sends reached a contact and returns them.
func (s *stack) waitSendsTo(to string, n int) []graphfake.Request {
	s.t.Helper()
	var got []graphfake.Request
	testenv.Eventually(s.t, 30*time.Second, func() bool {
		got = s.sendsTo(to)
		return len(got) >= n
	}, "fewer than %d sends to the contact", n)
	return got
}

// body is a send's text: a text body or an interactive message's body.
func body(r graphfake.Request) string {
	if t := textOf(r); t != "" {
		return t
	}
	if in, ok := r.Body["interactive"].(map[string]any); ok {
		if b, ok := in["body"].(map[string]any); ok {
			s, _ := b["text"].(string)
			return s
		}
	}
	return ""
}

// buttons are an interactive send's reply button ids.
func buttons(r graphfake.Request) []string {
	in, _ := r.Body["interactive"].(map[string]any)
	act, _ := in["action"].(map[string]any)
	bs, _ := act["buttons"].([]any)
	var ids []string
	for _, b := range bs {
		bm, _ := b.(map[string]any)
		reply, _ := bm["reply"].(map[string]any)
		id, _ := reply["id"].(string)
		ids = append(ids, id)
	}
	return ids
}

// settled waits until the tenant's queue and the pipeline's queues are empty.
func (s *stack) settled(tenantID string) { s.t.Helper(); s.idle(tasks.TenantQueueID(tenantID)) }

const booking = "book bus 01 for Pak Agus on 1 March"

// askToConfirm sends the booking and returns the confirmation prompt.
func (s *stack) askToConfirm(number, from string) graphfake.Request {
	s.t.Helper()
	before := len(s.sendsTo(from))
	s.text(number, from, booking, time.Time{})
	prompt := s.waitSendsTo(from, before+1)[before]
	if got := buttons(prompt); !slices.Equal(got, []string{assistant.ButtonYes, assistant.ButtonNo}) {
		s.t.Fatalf("prompt buttons %v, want [confirm_yes confirm_no] (body %q)", got, body(prompt))
	}
	return prompt
}

func TestAssistantConfirmRunsTheActionOnce(t *testing.T) {
	t.Parallel()
	s, _ := assistantStack(t)
	tid := s.assistantTenant("acme-confirm", numberA, "")
	prompt := s.askToConfirm(numberA, contact)
	if n := len(s.Gemini.Requests()); n != 1 {
		t.Errorf("%d LLM calls for the booking, want 1", n)
	}
	tap := s.tap(numberA, contact, assistant.ButtonYes, prompt.MessageID)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	calls, err := s.Action.WaitForCalls(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	c := calls[0]
	if !c.Verified || c.Intent != "create_booking" || c.Request.TenantID != tid || c.Request.From.Role != "owner" ||
		c.Request.Data["bus"] != "01" || c.IdempotencyKey != c.Request.ActionID {
		t.Errorf("action call %+v: want a verified create_booking for bus 01 from the owner", c)
	}
	result := s.waitSendsTo(contact, 2)[1]
	if got := body(result); got != "Done: create_booking recorded" {
		t.Errorf("result %q, want the business's reply", got)
	}
	// Meta redelivers the tap: nothing more happens.
	s.deliver(tap)
	s.settled(tid)
	if n := len(s.Action.Calls()); n != 1 {
		t.Errorf("%d action calls after a redelivered tap, want 1", n)
	}
	if n := len(s.sendsTo(contact)); n != 2 {
		t.Errorf("%d messages to the contact, want 2 (prompt, result)", n)
	}
	if n := len(s.Gemini.Requests()); n != 1 {
		t.Errorf("%d LLM calls, want 1 (a confirmation calls no LLM)", n)
	}
	rec, err := store.NewActionStore(store.NewDB(s.fs), store.Options{}).Get(context.Background(), c.Request.ActionID)
	if err != nil || rec.State != store.ActionDone || rec.Attempts != 1 || rec.ConversationID == "" {
		t.Errorf("action record %+v (%v), want done after 1 attempt", rec, err)
	}
}

func TestAssistantRejectCancels(t *testing.T) {
	t.Parallel()
	s, _ := assistantStack(t)
	tid := s.assistantTenant("acme-reject", numberA, "")
	prompt := s.askToConfirm(numberA, contact)
	s.tap(numberA, contact, assistant.ButtonNo, prompt.MessageID)
	got := s.waitSendsTo(contact, 2)[1]
	if body(got) != i18n.Text("en", i18n.Cancelled) {
		t.Errorf("answer %q, want the cancellation", body(got))
	}
	s.settled(tid)
	if n := len(s.Action.Calls()); n != 0 {
		t.Errorf("%d action calls after a rejection, want 0", n)
	}
}

func TestAssistantCorrectionDropsThePendingAction(t *testing.T) {
	t.Parallel()
	s, _ := assistantStack(t)
	tid := s.assistantTenant("acme-correct", numberA, "")
	first := s.askToConfirm(numberA, contact)
	s.text(numberA, contact, "no wait, book bus 02 for Pak Agus on 2 March", time.Time{})
	second := s.waitSendsTo(contact, 2)[1]
	if !slices.Equal(buttons(second), []string{assistant.ButtonYes, assistant.ButtonNo}) {
		t.Fatalf("the correction got %q without buttons, want a new confirmation", body(second))
	}
	if n := len(s.Gemini.Requests()); n != 2 {
		t.Errorf("%d LLM calls, want 2 (the correction is a fresh turn)", n)
	}
	// The old prompt's button is stale: "expired", and the new pending action stays.
	s.tap(numberA, contact, assistant.ButtonYes, first.MessageID)
	if got := body(s.waitSendsTo(contact, 3)[2]); got != i18n.Text("en", i18n.Expired) {
		t.Errorf("tap on the old prompt answered %q, want expired", got)
	}
	s.tap(numberA, contact, assistant.ButtonYes, second.MessageID)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	calls, err := s.Action.WaitForCalls(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	s.settled(tid)
	if len(s.Action.Calls()) != 1 || calls[0].Request.Data["bus"] != "02" {
		t.Errorf("action calls %+v, want one for bus 02", s.Action.Calls())
	}
}

func TestAssistantLowConfidenceAsksOnly(t *testing.T) {
	t.Parallel()
	s, _ := assistantStack(t)
	tid := s.assistantTenant("acme-unsure", numberA, "")
	if err := s.Gemini.AddRule(geminifake.Rule{Contains: "something", Response: &geminifake.Answer{
		Intent: "create_booking", Confidence: 0.3, Data: map[string]any{"bus": "01"},
		Reply: "Which client and which date?"}}); err != nil {
		t.Fatal(err)
	}
	s.text(numberA, contact, "something about a bus", time.Time{})
	got := s.waitSendsTo(contact, 1)[0]
	if body(got) != "Which client and which date?" || buttons(got) != nil {
		t.Errorf("answer %q with buttons %v, want the clarification alone", body(got), buttons(got))
	}
	s.text(numberA, contact, "yes", time.Time{})
	if got := body(s.waitSendsTo(contact, 2)[1]); got == "" {
		t.Error("no answer to the yes")
	}
	s.settled(tid)
	if n := len(s.Action.Calls()); n != 0 {
		t.Errorf("%d action calls after a clarification, want 0", n)
	}
}

func TestAssistantExpiredConfirmation(t *testing.T) {
	t.Parallel()
	s, clk := assistantStack(t)
	tid := s.assistantTenant("acme-expiry", numberA, "")
	prompt := s.askToConfirm(numberA, contact)
	clk.advance(turnstate.PendingTTL + time.Minute)
	s.tap(numberA, contact, assistant.ButtonYes, prompt.MessageID)
	if got := body(s.waitSendsTo(contact, 2)[1]); got != i18n.Text("en", i18n.Expired) {
		t.Errorf("late confirmation answered %q, want expired", got)
	}
	s.settled(tid)
	if n := len(s.Action.Calls()); n != 0 {
		t.Errorf("%d action calls after an expired confirmation, want 0", n)
	}
}

func TestAssistantActionRetriedUntilDone(t *testing.T) {
	t.Parallel()
	s, _ := assistantStack(t)
	tid := s.assistantTenant("acme-retry", numberA, "")
	s.Action.Script(actionfake.Answer{Status: 500}, actionfake.Answer{Status: 500}, actionfake.Answer{Status: 200, Reply: "Booked B-17"})
	prompt := s.askToConfirm(numberA, contact)
	s.tap(numberA, contact, assistant.ButtonYes, prompt.MessageID)
	if got := body(s.waitSendsTo(contact, 2)[1]); got != "Booked B-17" {
		t.Errorf("result %q, want the business's reply after the retries", got)
	}
	s.settled(tid)
	calls := s.Action.Calls()
	if len(calls) != 3 || len(s.Action.Executed()) != 1 {
		t.Errorf("%d calls, %d executed; want 3 calls (500, 500, 200), 1 executed", len(calls), len(s.Action.Executed()))
	}
	for _, c := range calls {
		if c.IdempotencyKey != calls[0].IdempotencyKey {
			t.Errorf("calls carry different Idempotency-Keys: %q, %q", c.IdempotencyKey, calls[0].IdempotencyKey)
		}
	}
	if n := len(s.sendsTo(contact)); n != 2 {
		t.Errorf("%d messages to the contact, want 2: no interim message during the retries", n)
	}
}

func TestAssistantActionRefusalIsTold(t *testing.T) {
	t.Parallel()
	s, _ := assistantStack(t)
	tid := s.assistantTenant("acme-refuse", numberA, "")
	s.Action.Script(actionfake.Answer{Status: 409, Reply: "Bus 01 is already booked on 1 March"})
	prompt := s.askToConfirm(numberA, contact)
	s.tap(numberA, contact, assistant.ButtonYes, prompt.MessageID)
	if got := body(s.waitSendsTo(contact, 2)[1]); got != "Bus 01 is already booked on 1 March" {
		t.Errorf("refusal %q, want the business's text", got)
	}
	s.settled(tid)
	if n := len(s.Action.Calls()); n != 1 {
		t.Errorf("%d action calls, want 1 (a refusal is not retried)", n)
	}
}

// TestAssistantBookThenYes50Times: fifty contacts at once each send "book …" and, once the
// confirmation prompt reached them (as a person answers it), "yes"; each booking runs exactly
// once. (A "yes" sent before its booking was even stored is conversation.TestBareAnswerWaitsForTheMessageItAnswers's subject: it waits 2 s
// for it, a wait a loaded machine can outlast, so this one does not race it.)
func TestAssistantBookThenYes50Times(t *testing.T) {
	t.Parallel()
	s, _ := assistantStack(t)
	tid := s.assistantTenant("acme-fifty", numberA, "")
	const n = 50
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			from := fmt.Sprintf("3361000%04d", i)
			now := time.Now()
			s.text(numberA, from, booking, now)
			// Not testenv.Eventually: it would end the test from this goroutine.
			for deadline := time.Now().Add(60 * time.Second); len(s.sendsTo(from)) == 0; time.Sleep(50 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Errorf("%s: no confirmation prompt within 60 s", from)
					return
				}
			}
			s.text(numberA, from, "yes", now.Add(time.Second))
		})
	}
	wg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if _, err := s.Action.WaitForCalls(ctx, n); err != nil {
		t.Fatal(err)
	}
	s.settled(tid)
	perKey := map[string]int{}
	for _, c := range s.Action.Calls() {
		perKey[c.IdempotencyKey]++
	}
	if len(perKey) != n {
		t.Errorf("%d distinct actions, want %d", len(perKey), n)
	}
	for k, c := range perKey {
		if c != 1 {
			t.Errorf("action %s called %d times, want 1", k, c)
		}
	}
}

// TestAssistantTurnsRunInTimestampOrder: the first message's turn is still running (its LLM call
// waits) when nineteen more of the same contact arrive at once, out of order; they run as
// nineteen more turns, one at a time, in Meta timestamp order, picked up by the running drain.
func TestAssistantTurnsRunInTimestampOrder(t *testing.T) {
	t.Parallel()
	s, _ := assistantStack(t)
	tid := s.assistantTenant("acme-order", numberA, "limits:\n  conversation: {max: 100, per: 30s}\n  sender: {max: 100, per: 5m}\n")
	const n = 20
	convs := store.NewConversationStore(store.NewDB(s.fs), store.Options{})
	var inFlight, maxInFlight atomic.Int32
	if err := s.Gemini.AddRule(geminifake.Rule{Contains: "msg-", Respond: func(c geminifake.Call) geminifake.Answer {
		if v := inFlight.Add(1); v > maxInFlight.Load() {
			maxInFlight.Store(v)
		}
		defer inFlight.Add(-1)
		if c.Text == "msg-00" {
			// Hold the first turn until every message is in the conversation's inbox.
			testenv.Eventually(t, 30*time.Second, func() bool {
				// The contact exists: its first message is being answered.
				convID, _, err := convs.ConversationOf(context.Background(), tid, numberA, wacontact.Identity{WaID: contact})
				if err != nil {
					return false
				}
				msgs, err := convs.Messages(context.Background(), convID, 100)
				return err == nil && len(msgs) >= n
			}, "not every message was stored")
		}
		return geminifake.Answer{Intent: geminifake.GeneralQuery, Confidence: 0.9, Reply: "ok " + c.Text}
	}}); err != nil {
		t.Fatal(err)
	}
	base := time.Now().Add(-time.Minute)
	s.text(numberA, contact, "msg-00", base)
	testenv.Eventually(t, 20*time.Second, func() bool { return len(s.Gemini.Requests()) > 0 || inFlight.Load() > 0 },
		"the first turn never called the LLM")
	var wg sync.WaitGroup
	for _, i := range rand.Perm(n - 1) {
		wg.Go(func() {
			s.text(numberA, contact, fmt.Sprintf("msg-%02d", i+1), base.Add(time.Duration(i+1)*time.Second))
		})
	}
	wg.Wait()
	s.waitSendsTo(contact, n)
	s.settled(tid)
	var order []string
	for _, r := range s.Gemini.Requests() {
		order = append(order, r.Text)
	}
	if !slices.IsSorted(order) || len(order) != n {
		t.Errorf("LLM saw %v, want the %d messages in timestamp order", order, n)
	}
	if m := maxInFlight.Load(); m != 1 {
		t.Errorf("%d turns of one conversation ran at once, want 1", m)
	}
	var replies []string
	for _, r := range s.sendsTo(contact) {
		replies = append(replies, strings.TrimPrefix(body(r), "ok "))
	}
	if !slices.Equal(replies, order) {
		t.Errorf("replies sent in the order %v, want the turns' order", replies)
	}
}

func TestAssistantConversationRateLimit(t *testing.T) {
	t.Parallel()
	s, clk := assistantStack(t)
	tid := s.assistantTenant("acme-burst", numberA, "limits:\n  conversation: {max: 5, per: 30s}\n")
	base := time.Now()
	for i := range 6 {
		s.text(numberA, contact, fmt.Sprintf("question %d", i), base.Add(time.Duration(i)*time.Second))
	}
	s.waitSendsTo(contact, 6)
	s.settled(tid)
	if n := len(s.Gemini.Requests()); n != 5 {
		t.Errorf("%d LLM calls for 6 messages with a 5/30s limit, want 5", n)
	}
	notices := 0
	for _, r := range s.sendsTo(contact) {
		if body(r) == i18n.Text("en", i18n.RateLimited) {
			notices++
		}
	}
	if notices != 1 {
		t.Errorf("%d rate-limit notices, want 1", notices)
	}
	convID := s.mustConversationOf(tid, numberA, contact)
	msgs, err := store.NewConversationStore(store.NewDB(s.fs), store.Options{}).Messages(context.Background(), convID, 100)
	inbound := 0
	for _, m := range msgs {
		if m.Direction == store.DirectionIn {
			inbound++
		}
	}
	if err != nil || inbound != 6 {
		t.Errorf("%d stored inbound messages (%v), want 6", inbound, err)
	}
	// A message over the limit in the same window gets nothing; after the window, served again.
	s.text(numberA, contact, "question 7", base.Add(7*time.Second))
	s.settled(tid)
	clk.advance(31 * time.Second)
	s.text(numberA, contact, "question 8", base.Add(40*time.Second))
	s.waitSendsTo(contact, 7)
	s.settled(tid)
	if n := len(s.Gemini.Requests()); n != 6 {
		t.Errorf("%d LLM calls after the window, want 6", n)
	}
	if !strings.Contains(s.logs.String(), `"event":"conversation_turn"`) {
		t.Error("no conversation_turn log line")
	}
}

// TestReplyOutsideTheWindow: a reply to a message Meta stamped over 24 hours ago (delivered late),
// or one Meta refuses with 131047, is sent as the tenant's reengage template, or, without one,
// recorded failed with 131047.
func TestReplyOutsideTheWindow(t *testing.T) {
	t.Parallel()
	const reengage = "templates:\n  reengage: {name: resume_conversation, language: en_US}\n"
	for _, tc := range []struct {
		name, extra  string
		stamp        time.Duration
		metaRefuses  bool
		wantTemplate bool
	}{
		{"late message, reengage template", reengage, -25 * time.Hour, false, true},
		{"late message, no template", "", -25 * time.Hour, false, false},
		{"Meta answers 131047, reengage template", reengage, 0, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, _ := assistantStack(t)
			tid := s.assistantTenant("acme-window", numberA, tc.extra)
			if tc.metaRefuses {
				s.Graph.CloseWindow(contact, true)
			}
			id := s.text(numberA, contact, "hello", time.Now().Add(tc.stamp))
			ctx := context.Background()
			var rec store.OutboundRecord
			testenv.Eventually(t, 20*time.Second, func() bool {
				r, err := s.records.GetOutbound(ctx, tasks.IdempotencyKey(keyedid.Dev(), id))
				rec = r
				return err == nil && (r.State == store.OutboundSent || r.State == store.OutboundFailed)
			}, "the reply was never settled")
			s.settled(tid)
			sends := s.sendsTo(contact)
			if tc.wantTemplate {
				if len(sends) != 1 || sends[0].Body["type"] != "template" || rec.State != store.OutboundSent {
					t.Fatalf("sends %v, record %s; want the reengage template sent", sends, rec.State)
				}
				if tpl, _ := sends[0].Body["template"].(map[string]any); tpl["name"] != "resume_conversation" {
					t.Errorf("template %v, want resume_conversation", tpl)
				}
				return
			}
			if len(sends) != 0 || rec.State != store.OutboundFailed || rec.LastErrorCode != 131047 {
				t.Errorf("%d sends, record %s code %d; want nothing sent, failed with 131047", len(sends), rec.State, rec.LastErrorCode)
			}
		})
	}
}
