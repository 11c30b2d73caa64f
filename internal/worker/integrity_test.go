package worker_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wapipe/wapipe/internal/assistant"
	"github.com/wapipe/wapipe/internal/i18n"
	"github.com/wapipe/wapipe/internal/keyedid"
	"github.com/wapipe/wapipe/internal/llm/geminifake"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/whatsapp"
	"github.com/wapipe/wapipe/tasks"
)

// The assistant's integrity (issue 22): what the user confirms is what the business receives,
// only wapipe's own buttons confirm, the Indonesian answers, the per-contact quota share, the
// non-members' limit and the rate limits in mode ack. End to end, with the fake Gemini, the fake
// Graph API and the fake business endpoint, on the Firestore emulator.

// TestAssistantConfirmationShowsTheDataSent: a steered model's reply describes one booking while
// its data hold another; the confirmation shows the data lines under the reply, and the action
// receives exactly those data.
func TestAssistantConfirmationShowsTheDataSent(t *testing.T) {
	t.Parallel()
	s, _ := assistantStack(t)
	tid := s.assistantTenant("acme-steered", numberA, "")
	const reply = "I'll record: booking bus 01 for Pak Agus on 1 March. Correct?"
	if err := s.Gemini.AddRule(geminifake.Rule{Contains: "steer", Response: &geminifake.Answer{
		Intent: "create_booking", Confidence: 0.95, Reply: reply,
		Data: map[string]any{"bus": "02", "client": "Pak Agus", "date": "2027-03-02", "price": 99000000}}}); err != nil {
		t.Fatal(err)
	}
	s.text(numberA, contact, "steer: book bus 01 for Pak Agus on 1 March", time.Time{})
	prompt := s.waitSendsTo(contact, 1)[0]
	wantBody := reply + "\n\nclient: Pak Agus\ndate: March 2, 2027\nbus: 02\nprice: 99,000,000"
	if got := body(prompt); got != wantBody || len(buttons(prompt)) != 2 {
		t.Fatalf("confirmation %q with buttons %v, want %q with the two buttons", got, buttons(prompt), wantBody)
	}
	calls := s.confirmYes(numberA, contact, prompt)
	s.settled(tid)
	want := map[string]any{"client": "Pak Agus", "date": "2027-03-02", "bus": "02", "price": float64(99000000)}
	if diff := cmp.Diff(want, calls[0].Request.Data); diff != "" || !calls[0].Verified {
		t.Errorf("action data (-want, +got), verified %v:\n%s", calls[0].Verified, diff)
	}
	if !strings.Contains(calls[0].Body, `"price":99000000`) {
		t.Errorf("action body %s: want the price exactly as shown", calls[0].Body)
	}
}

// TestAssistantOnlyWapipeButtonsConfirm: a tap on another button titled "Yes" is an ordinary
// message (a fresh LLM turn, no action), after which the replaced prompt's confirm_yes confirms
// nothing. (A stale prompt's confirm_yes while a newer action is pending: "expired", no action,
// in TestAssistantCorrectionDropsThePendingAction.)
func TestAssistantOnlyWapipeButtonsConfirm(t *testing.T) {
	t.Parallel()
	s, _ := assistantStack(t)
	tid := s.assistantTenant("acme-buttons", numberA, quotaLimits)
	prompt := s.askToConfirm(numberA, contact)
	payload := whatsapp.SampleButtonReply(whatsapp.SampleOptions{PhoneNumberID: numberA, From: contact, ContextID: prompt.MessageID},
		"promo_accept", "Yes")
	s.deliver(payload)
	answer := s.waitSendsTo(contact, 2)[1]
	s.settled(tid)
	if n := len(s.Action.Calls()); n != 0 {
		t.Errorf("%d action calls after a tap on another button titled Yes, want 0", n)
	}
	reqs := s.Gemini.Requests()
	if len(reqs) != 2 || reqs[1].Text != "Yes" || buttons(answer) != nil {
		t.Errorf("the other button's tap: %d LLM calls (last %q), answer %q; want a fresh turn on its title", len(reqs),
			reqs[len(reqs)-1].Text, body(answer))
	}
	// The old prompt's action was dropped by that message: its own button confirms nothing.
	s.tap(numberA, contact, assistant.ButtonYes, prompt.MessageID)
	got := body(s.waitSendsTo(contact, 3)[2])
	s.settled(tid)
	if n := len(s.Action.Calls()); n != 0 || got != i18n.Text("en", i18n.NothingToConfirm) {
		t.Errorf("a tap on a replaced prompt answered %q with %d action calls, want nothing to confirm and none", got, n)
	}
}

// TestAssistantIndonesianAnswers: each Indonesian confirming word runs the pending booking and
// each rejecting word cancels it, none of them is taken for a correction (no LLM call).
func TestAssistantIndonesianAnswers(t *testing.T) {
	t.Parallel()
	s, _ := assistantStack(t)
	tid := s.assistantTenant("acme-kata", numberA, "")
	words := []struct {
		word    string
		confirm bool
	}{
		{"sip", true}, {"yoi", true}, {"bener", true}, {"oke", true}, {"ok", true},
		{"bukan", false}, {"salah", false}, {"batal", false},
	}
	from := func(i int) string { return fmt.Sprintf("6281300%04d", i) }
	for i := range words {
		s.text(numberA, from(i), booking, time.Time{})
	}
	for i, w := range words {
		if got := buttons(s.waitSendsTo(from(i), 1)[0]); len(got) != 2 {
			t.Fatalf("no confirmation before %q", w.word)
		}
		s.text(numberA, from(i), w.word, time.Time{})
	}
	confirms := 0
	for i, w := range words {
		got := body(s.waitSendsTo(from(i), 2)[1])
		switch {
		case w.confirm && got != "Done: create_booking recorded":
			t.Errorf("%q answered %q, want the action's reply", w.word, got)
		case !w.confirm && got != i18n.Text("en", i18n.Cancelled):
			t.Errorf("%q answered %q, want cancelled", w.word, got)
		}
		if w.confirm {
			confirms++
		}
	}
	s.settled(tid)
	if n := len(s.Action.Calls()); n != confirms {
		t.Errorf("%d action calls, want %d", n, confirms)
	}
	if n := len(s.Gemini.Requests()); n != len(words) {
		t.Errorf("%d LLM calls, want %d (the bookings only: no answer was a correction)", n, len(words))
	}
}

// TestGuardrailSenderShare: on a public tenant with room in its quota, one contact past its
// monthly share gets the quota notice once and no more LLM calls, while another contact is
// still served; usage counts the calls made, exactly.
func TestGuardrailSenderShare(t *testing.T) {
	t.Parallel()
	s, _ := assistantStack(t)
	tid := s.assistantTenant("acme-share", numberA, quotaLimits+"quota: {llm_calls_per_month: 100, per_sender_per_month: 3}\n")
	const heavy, other = "6281400000001", "6281400000002"
	base := time.Now()
	for i := range 6 {
		s.text(numberA, heavy, fmt.Sprintf("question %d", i), base.Add(time.Duration(i)*time.Second))
	}
	s.waitSendsTo(heavy, 4)
	s.settled(tid)
	if n := len(s.Gemini.Requests()); n != 3 {
		t.Errorf("%d LLM calls for 6 messages of a contact with a share of 3, want 3", n)
	}
	if n := s.countBodies(heavy, i18n.Text("en", i18n.QuotaExceeded)); n != 1 {
		t.Errorf("%d quota notices to the contact, want 1", n)
	}
	if n := len(s.sendsTo(heavy)); n != 4 {
		t.Errorf("%d messages to the contact, want 4 (3 answers, 1 notice)", n)
	}
	s.text(numberA, other, "question from someone else", base.Add(10*time.Second))
	got := s.waitSendsTo(other, 1)[0]
	s.settled(tid)
	if body(got) == i18n.Text("en", i18n.QuotaExceeded) || len(s.Gemini.Requests()) != 4 {
		t.Errorf("the other contact got %q after %d LLM calls; want an answer from the 4th call", body(got), len(s.Gemini.Requests()))
	}
	if u := s.usage(tid); u != 4 {
		t.Errorf("usage %d, want 4: one per call made", u)
	}
	if !strings.Contains(s.logs.String(), `"reason":"sender_share"`) {
		t.Error("no log line with reason sender_share")
	}
}

// TestNonMemberRepliesLimited: a non-member of a members-only tenant gets at most 5 replies in
// an hour (onboarding prompts and "invalid code"), then silence: every message is stored, none
// of the 6th to 8th is answered, and no invite code is tried past the limit.
func TestNonMemberRepliesLimited(t *testing.T) {
	t.Parallel()
	s, _ := assistantStack(t)
	tid := s.applyTenant(s.ops(), tenantFile("acme-closed", numberA, "en", "members",
		"assistant: {mode: llm, model: gemini-2.5-flash, instructions: Help., min_confidence: 0.5}\n"), "token-acme-closed")
	base := time.Now()
	texts := []string{"hello", "WP-ZZZZZZZZ", "hello?", "anyone", "WP-YYYYYYYY", "hello!!", "WP-XXXXXXXX", "please"}
	ids := make([]string, len(texts))
	for i, text := range texts {
		ids[i] = s.text(numberA, contact, text, base.Add(time.Duration(i)*time.Second))
	}
	s.waitSendsTo(contact, 5)
	s.settled(tid)
	// Each reply by the message it answers (its callback data): the sends of consecutive turns
	// may reach the Graph API in either order.
	byKey := map[string]string{}
	for _, r := range s.sendsTo(contact) {
		k, _ := r.Body["biz_opaque_callback_data"].(string)
		byKey[k] = body(r)
	}
	got := make([]string, len(ids))
	for i, id := range ids {
		got[i] = byKey[tasks.IdempotencyKey(keyedid.Dev(), id)]
	}
	prompt, invalid := i18n.Text("en", i18n.OnboardingPrompt), i18n.Text("en", i18n.InvalidCode)
	if diff := cmp.Diff([]string{prompt, invalid, prompt, prompt, invalid, "", "", ""}, got); diff != "" {
		t.Errorf("replies to a non-member's messages, in order (-want, +got):\n%s", diff)
	}
	if n := len(s.sendsTo(contact)); n != 5 {
		t.Errorf("%d sends to the non-member, want 5", n)
	}
	msgs, err := store.NewConversationStore(store.NewDB(s.fs), store.Options{}).Messages(context.Background(),
		s.mustConversationOf(tid, numberA, contact), 100)
	inbound := 0
	for _, m := range msgs {
		if m.Direction == store.DirectionIn {
			inbound++
		}
	}
	if err != nil || inbound != len(texts) {
		t.Errorf("%d stored inbound messages (%v), want %d", inbound, err, len(texts))
	}
	if n := strings.Count(s.logs.String(), `"event":"onboarding_limited"`); n != 3 {
		t.Errorf("%d onboarding_limited log lines, want 3", n)
	}
	if n := strings.Count(s.logs.String(), `"event":"invite_refused"`); n != 2 {
		t.Errorf("%d invite codes tried, want 2 (none past the limit)", n)
	}
	if n := len(s.Gemini.Requests()); n != 0 {
		t.Errorf("%d LLM calls for a non-member, want 0", n)
	}
}

// TestAckModeRateLimits: in mode ack the conversation limit and the sender limit (across the
// tenant's numbers) hold like in mode llm: one notice, then silence.
func TestAckModeRateLimits(t *testing.T) {
	t.Parallel()
	s, _ := assistantStack(t)
	ops := s.ops()
	tid := s.applyTenant(ops, twoNumberTenant("acme-ack", "{max: 4, per: 1m}", "{max: 5, per: 5m}",
		"{mode: ack, ack_text: Got it.}"), "token-acme-ack")
	const burst, spread = "6281500000001", "6281500000002"
	base := time.Now()
	// One conversation: 4 acks, a notice, silence.
	for i := range 6 {
		s.text(numberA, burst, fmt.Sprintf("message %d", i), base.Add(time.Duration(i)*time.Second))
	}
	// One sender over two numbers (conversations of 4 and 3 messages): 5 acks, a notice, silence.
	for i := range 7 {
		number := numberA
		if i%2 == 1 {
			number = numberB
		}
		s.text(number, spread, fmt.Sprintf("message %d", i), base.Add(time.Duration(i)*time.Second))
	}
	s.waitSendsTo(burst, 5)
	s.waitSendsTo(spread, 6)
	s.settled(tid)
	notice := i18n.Text("en", i18n.RateLimited)
	for _, tc := range []struct {
		from       string
		acks, sent int
	}{{burst, 4, 5}, {spread, 5, 6}} {
		if n := s.countBodies(tc.from, "Got it."); n != tc.acks {
			t.Errorf("%d acknowledgements, want %d", n, tc.acks)
		}
		if n := s.countBodies(tc.from, notice); n != 1 {
			t.Errorf("%d rate-limit notices, want 1", n)
		}
		if n := len(s.sendsTo(tc.from)); n != tc.sent {
			t.Errorf("%d messages, want %d", n, tc.sent)
		}
	}
	logs := s.logs.String()
	for _, reason := range []string{"conversation_limit", "sender_limit"} {
		if !strings.Contains(logs, `"reason":"`+reason+`"`) {
			t.Errorf("no log line with reason %s", reason)
		}
	}
}

// twoNumberTenant is a public tenant file with numberA and numberB, the limits and assistant
// given as flow mappings.
func twoNumberTenant(id, conversation, sender, assistant string) []byte {
	return []byte(fmt.Sprintf(`id: %s
name: Acme
language: en
audience: public
phone_numbers:
  - {phone_number_id: %q, waba_id: "300000000000001"}
  - {phone_number_id: %q, waba_id: "300000000000001"}
limits:
  conversation: %s
  sender: %s
assistant: %s
`, id, numberA, numberB, conversation, sender, assistant))
}
