package assistant_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wapipe/wapipe/internal/assistant"
	"github.com/wapipe/wapipe/internal/assistant/assistanttest"
	"github.com/wapipe/wapipe/internal/i18n"
	"github.com/wapipe/wapipe/internal/llm"
	"github.com/wapipe/wapipe/internal/tenant"
	"github.com/wapipe/wapipe/internal/turnstate"
	"github.com/wapipe/wapipe/internal/whatsapp"
)

// view is what the table checks of an Outcome and the fakes.
type view struct {
	Event, Reason string
	Intent        string
	Corrected     bool
	Replies       []replyView
	Action        *assistant.ActionRequest
	Pending       *turnstate.PendingAction
	QuotaBlocked  *turnstate.QuotaBlock
	LLMCalls      int // the Extractor's count
	QuotaChecks   int // the Guard's count
	HasCause      bool
}

func TestTurn(t *testing.T) {
	t.Parallel()
	booking := bookingResult()
	ownerFrom := assistant.ActionFrom{WaID: ownerID, Name: "Pak Agus", Role: "owner"}
	withPending := turnstate.State{Pending: pendingBooking()}
	confirmedAt := t0.Add(time.Minute)
	confirmed := &assistant.ActionRequest{
		ActionID: assistant.ActionID(tenantID, convID, "m-book"), TenantID: tenantID, Intent: "create_booking",
		Data: booking.Data, From: ownerFrom, ConversationID: convID, RequestedAt: confirmedAt,
	}
	newPending := func(msgID string, r llm.Result, at time.Time) *turnstate.PendingAction {
		return &turnstate.PendingAction{ActionID: assistant.ActionID(tenantID, convID, msgID), Intent: r.Intent, Data: r.Data,
			Summary: confirmBody(r), MessageID: msgID, CreatedAt: at, ExpiresAt: at.Add(30 * time.Minute)}
	}
	corrected := bookingResult()
	corrected.Data["date"] = "2027-03-12"
	corrected.Reply = "Saya catat: bus 01 untuk Pak Agus pada 12 Maret. Benar?"
	lowConfidence := bookingResult()
	lowConfidence.Confidence = 0.5
	lowConfidence.Reply = "Maksudnya pesan bus?"
	missing := bookingResult()
	delete(missing.Data, "bus")
	missing.MissingFields = []string{"bus"}
	missing.Reply = "Bus yang mana?"
	missingUnlisted := bookingResult() // the model forgot to list it
	delete(missingUnlisted.Data, "date")
	missingUnlisted.Reply = "Tanggal berapa?"
	optionalMissing := bookingResult()
	delete(optionalMissing.Data, "price")
	optionalMissing.MissingFields = []string{"price"}
	longReply := bookingResult()
	longReply.Reply = strings.TrimSpace(strings.Repeat("panjang ", 200))
	longRoute := bookingResult()
	longRoute.Data["route"] = strings.TrimSpace(strings.Repeat("Jakarta ", 150))
	hugeRoute := bookingResult()
	hugeRoute.Data["route"] = strings.Repeat("x", assistant.MaxTextLen)
	// The reply says one booking, the data another, with a value that tries to draw a line of
	// its own and a key the intent does not have.
	steered := bookingResult()
	steered.Data = map[string]any{"client": "Pak Agus\ndate: 2027-03-01", "date": "2027-03-09", "bus": "02",
		"price": int64(15000000), "notify_url": "https://evil.example"}
	steered.Reply = "Saya catat: bus 01 untuk Pak Agus pada 1 Maret. Benar?"
	emptyGeneral := generalResult("  ")
	unknownIntent := generalResult("x")
	unknownIntent.Intent = "fly_to_moon"
	period := turnstate.Period(t0)

	tests := []struct {
		name        string
		edit        []func(*tenant.Tenant)
		msg         whatsapp.Message
		now         time.Time // zero: t0
		state       turnstate.State
		script      []assistanttest.Step
		guard       func(*assistanttest.Guard)
		lastAttempt bool
		staleButton bool
		want        view
	}{
		{
			name:   "booking text asks to confirm with two buttons and leaves a pending action",
			msg:    textMsg("m-book", ownerID, "book bus 01 for Pak Agus on 1 March, 15 million"),
			script: []assistanttest.Step{ok(booking)},
			want: view{Event: "pending", Intent: "create_booking", LLMCalls: 1, QuotaChecks: 1,
				Replies: []replyView{{Text: confirmBody(booking), Buttons: confirmButtons("id")}},
				Pending: newPending("m-book", booking, t0)},
		},
		{
			name:  "confirm_yes runs the pending action with its id and sends nothing now",
			msg:   buttonMsg("m-yes", ownerID, "confirm_yes", "Ya, konfirmasi"),
			now:   confirmedAt,
			state: withPending,
			want:  view{Event: "confirmed", Intent: "create_booking", Action: confirmed},
		},
		{
			name:  "the word ya confirms",
			msg:   textMsg("m-yes", ownerID, "ya"),
			now:   confirmedAt,
			state: withPending,
			want:  view{Event: "confirmed", Intent: "create_booking", Action: confirmed},
		},
		{
			name:  "the word Yes! confirms",
			msg:   textMsg("m-yes", ownerID, "Yes!"),
			now:   confirmedAt,
			state: withPending,
			want:  view{Event: "confirmed", Intent: "create_booking", Action: confirmed},
		},
		{
			name:  "confirm_no cancels",
			msg:   buttonMsg("m-no", ownerID, "confirm_no", "Tidak, batalkan"),
			state: withPending,
			want:  view{Event: "cancelled", Intent: "create_booking", Replies: []replyView{sys("id", i18n.Cancelled)}},
		},
		{
			name:  "the word tidak cancels",
			msg:   textMsg("m-no", ownerID, "tidak"),
			state: withPending,
			want:  view{Event: "cancelled", Intent: "create_booking", Replies: []replyView{sys("id", i18n.Cancelled)}},
		},
		{
			name:   "a correction drops the pending action and is a fresh LLM turn",
			msg:    textMsg("m-fix", ownerID, "bukan, tanggal 12"),
			now:    confirmedAt,
			state:  withPending,
			script: []assistanttest.Step{ok(corrected)},
			want: view{Event: "pending", Intent: "create_booking", Corrected: true, LLMCalls: 1, QuotaChecks: 1,
				Replies: []replyView{{Text: confirmBody(corrected), Buttons: confirmButtons("id")}},
				Pending: newPending("m-fix", corrected, confirmedAt)},
		},
		{
			name:   "a correction answered by a general query leaves nothing pending",
			msg:    textMsg("m-fix", ownerID, "berapa harga sewa bus?"),
			state:  withPending,
			script: []assistanttest.Step{ok(generalResult("Harga mulai 5 juta."))},
			want: view{Event: "general_query", Intent: "general_query", Corrected: true, LLMCalls: 1, QuotaChecks: 1,
				Replies: []replyView{{Text: "Harga mulai 5 juta."}}},
		},
		{
			name:   "low confidence is a clarification only",
			msg:    textMsg("m-1", ownerID, "bus besok?"),
			script: []assistanttest.Step{ok(lowConfidence)},
			want: view{Event: "clarification", Intent: "create_booking", LLMCalls: 1, QuotaChecks: 1,
				Replies: []replyView{{Text: lowConfidence.Reply}}},
		},
		{
			name:   "a missing required field is a clarification only",
			msg:    textMsg("m-1", ownerID, "book for Pak Agus on 1 March"),
			script: []assistanttest.Step{ok(missing)},
			want: view{Event: "clarification", Intent: "create_booking", LLMCalls: 1, QuotaChecks: 1,
				Replies: []replyView{{Text: missing.Reply}}},
		},
		{
			name:   "a required field absent from the data is missing even when the model does not list it",
			msg:    textMsg("m-1", ownerID, "book bus 01 for Pak Agus"),
			script: []assistanttest.Step{ok(missingUnlisted)},
			want: view{Event: "clarification", Intent: "create_booking", LLMCalls: 1, QuotaChecks: 1,
				Replies: []replyView{{Text: missingUnlisted.Reply}}},
		},
		{
			name:   "a missing optional field does not hold the request up",
			msg:    textMsg("m-book", ownerID, "book bus 01 for Pak Agus on 1 March"),
			script: []assistanttest.Step{ok(optionalMissing)},
			want: view{Event: "pending", Intent: "create_booking", LLMCalls: 1, QuotaChecks: 1,
				Replies: []replyView{{Text: confirmBody(optionalMissing), Buttons: confirmButtons("id")}},
				Pending: newPending("m-book", optionalMissing, t0)},
		},
		{
			name:   "an intent without confirmation runs now with no interim reply",
			msg:    textMsg("m-sched", ownerID, "jadwal besok?"),
			script: []assistanttest.Step{ok(scheduleResult())},
			want: view{Event: "action_now", Intent: "check_schedule", LLMCalls: 1, QuotaChecks: 1,
				Action: &assistant.ActionRequest{ActionID: assistant.ActionID(tenantID, convID, "m-sched"), TenantID: tenantID,
					Intent: "check_schedule", Data: map[string]any{"date": "2026-11-24"}, From: ownerFrom,
					ConversationID: convID, RequestedAt: t0}},
		},
		{
			name:  "a confirmation after 30 minutes is expired",
			msg:   buttonMsg("m-yes", ownerID, "confirm_yes", "Ya, konfirmasi"),
			now:   t0.Add(31 * time.Minute),
			state: withPending,
			want:  view{Event: "expired", Intent: "create_booking", Replies: []replyView{sys("id", i18n.Expired)}},
		},
		{
			name:  "a confirmation at exactly 30 minutes is expired",
			msg:   textMsg("m-yes", ownerID, "ya"),
			now:   t0.Add(30 * time.Minute),
			state: withPending,
			want:  view{Event: "expired", Intent: "create_booking", Replies: []replyView{sys("id", i18n.Expired)}},
		},
		{
			name:  "a rejection of an expired action is expired too",
			msg:   textMsg("m-no", ownerID, "no"),
			now:   t0.Add(time.Hour),
			state: withPending,
			want:  view{Event: "expired", Intent: "create_booking", Replies: []replyView{sys("id", i18n.Expired)}},
		},
		{
			name:        "a tap on an older confirmation is expired and the pending action stays",
			msg:         buttonMsg("m-yes", ownerID, "confirm_yes", "Ya, konfirmasi"),
			now:         confirmedAt,
			state:       withPending,
			staleButton: true,
			want: view{Event: "expired", Reason: "stale_button", Replies: []replyView{sys("id", i18n.Expired)},
				Pending: pendingBooking()},
		},
		{
			name:        "a typed yes is not a stale tap",
			msg:         textMsg("m-yes", ownerID, "ya"),
			now:         confirmedAt,
			state:       withPending,
			staleButton: true,
			want:        view{Event: "confirmed", Intent: "create_booking", Action: confirmed},
		},
		{
			name:  "a confirmation of an intent the tenant removed is expired",
			edit:  []func(*tenant.Tenant){func(t *tenant.Tenant) { t.Assistant.Intents = t.Assistant.Intents[1:] }},
			msg:   textMsg("m-yes", ownerID, "ya"),
			state: withPending,
			want: view{Event: "expired", Reason: "intent_removed", Intent: "create_booking",
				Replies: []replyView{sys("id", i18n.Expired)}},
		},
		{
			name:  "a confirmation by a sender whose role no longer allows the intent is not allowed",
			msg:   textMsg("m-yes", memberID, "yes"),
			state: withPending,
			want: view{Event: "not_allowed", Reason: "pending_not_allowed", Intent: "create_booking",
				Replies: []replyView{sys("en", i18n.NotAllowed)}},
		},
		{
			name: "a blank text is ignored",
			msg:  textMsg("m-1", ownerID, " \n "),
			want: view{Event: "ignored"},
		},
		{
			name:  "a confirm button with nothing pending",
			msg:   buttonMsg("m-yes", ownerID, "confirm_yes", "Ya, konfirmasi"),
			want:  view{Event: "nothing_to_confirm", Replies: []replyView{sys("id", i18n.NothingToConfirm)}},
			guard: func(*assistanttest.Guard) {},
		},
		{
			name:   "a confirming word with nothing pending is an ordinary message",
			msg:    textMsg("m-1", ownerID, "ya"),
			script: []assistanttest.Step{ok(generalResult("Ada yang bisa dibantu?"))},
			want: view{Event: "general_query", Intent: "general_query", LLMCalls: 1, QuotaChecks: 1,
				Replies: []replyView{{Text: "Ada yang bisa dibantu?"}}},
		},
		{
			name:   "a member whose role the intent excludes is not allowed, in the member's language",
			msg:    textMsg("m-1", memberID, "book bus 01 for Pak Agus on 1 March"),
			script: []assistanttest.Step{ok(booking)},
			want: view{Event: "not_allowed", Intent: "create_booking", LLMCalls: 1, QuotaChecks: 1,
				Replies: []replyView{sys("en", i18n.NotAllowed)}},
		},
		{
			name:   "a non-member of a public tenant acts with no role and the profile name",
			edit:   []func(*tenant.Tenant){func(t *tenant.Tenant) { t.Audience = tenant.AudiencePublic }},
			msg:    textMsg("m-sched", strangerID, "schedule tomorrow?"),
			script: []assistanttest.Step{ok(scheduleResult())},
			want: view{Event: "action_now", Intent: "check_schedule", LLMCalls: 1, QuotaChecks: 1,
				Action: &assistant.ActionRequest{ActionID: assistant.ActionID(tenantID, convID, "m-sched"), TenantID: tenantID,
					Intent: "check_schedule", Data: map[string]any{"date": "2026-11-24"},
					From:           assistant.ActionFrom{WaID: strangerID, Name: "WA " + strangerID},
					ConversationID: convID, RequestedAt: t0}},
		},
		{
			name:   "a non-member may not use an intent with roles",
			edit:   []func(*tenant.Tenant){func(t *tenant.Tenant) { t.Audience = tenant.AudiencePublic }},
			msg:    textMsg("m-1", strangerID, "book bus 01"),
			script: []assistanttest.Step{ok(booking)},
			want: view{Event: "not_allowed", Intent: "create_booking", LLMCalls: 1, QuotaChecks: 1,
				Replies: []replyView{sys("id", i18n.NotAllowed)}},
		},
		{
			name:   "a general query gets the model's reply",
			msg:    textMsg("m-1", ownerID, "jam buka kantor?"),
			script: []assistanttest.Step{ok(generalResult("Kantor buka jam 8."))},
			want: view{Event: "general_query", Intent: "general_query", LLMCalls: 1, QuotaChecks: 1,
				Replies: []replyView{{Text: "Kantor buka jam 8."}}},
		},
		{
			name:   "a blank model reply is not understood",
			msg:    textMsg("m-1", ownerID, "halo"),
			script: []assistanttest.Step{ok(emptyGeneral)},
			want: view{Event: "not_understood", Reason: "empty_reply", Intent: "general_query", LLMCalls: 1, QuotaChecks: 1,
				Replies: []replyView{sys("id", i18n.NotUnderstood)}},
		},
		{
			name:   "an intent the tenant does not have is not understood",
			msg:    textMsg("m-1", ownerID, "halo"),
			script: []assistanttest.Step{ok(unknownIntent)},
			want: view{Event: "not_understood", Reason: "unknown_intent", Intent: "fly_to_moon", LLMCalls: 1, QuotaChecks: 1,
				Replies: []replyView{sys("id", i18n.NotUnderstood)}},
		},
		{
			name:   "a reply too long for buttons goes first as text, then the data lines with the buttons",
			msg:    textMsg("m-book", ownerID, "book bus 01 for Pak Agus on 1 March"),
			script: []assistanttest.Step{ok(longReply)},
			want: view{Event: "pending", Intent: "create_booking", LLMCalls: 1, QuotaChecks: 1,
				Replies: []replyView{{Text: longReply.Reply},
					{Index: 1, Text: dataBlock(longReply.Data), Buttons: confirmButtons("id")}},
				Pending: func() *turnstate.PendingAction {
					p := newPending("m-book", longReply, t0)
					p.PromptIndex = 1
					return p
				}()},
		},
		{
			name:   "data too long for buttons go as their own text, then the buttons under the prompt",
			msg:    textMsg("m-book", ownerID, "book bus 01 for Pak Agus on 1 March"),
			script: []assistanttest.Step{ok(longRoute)},
			want: view{Event: "pending", Intent: "create_booking", LLMCalls: 1, QuotaChecks: 1,
				Replies: []replyView{{Text: longRoute.Reply}, {Index: 1, Text: dataBlock(longRoute.Data)},
					{Index: 2, Text: i18n.Text("id", i18n.ConfirmPrompt), Buttons: confirmButtons("id")}},
				Pending: func() *turnstate.PendingAction {
					p := newPending("m-book", longRoute, t0)
					p.Summary = confirmBody(longRoute) + "\n\n" + i18n.Text("id", i18n.ConfirmPrompt)
					p.PromptIndex = 2
					return p
				}()},
		},
		{
			name:   "data that no message can show ask nothing to confirm: not understood",
			msg:    textMsg("m-book", ownerID, "book bus 01 for Pak Agus on 1 March"),
			script: []assistanttest.Step{ok(hugeRoute)},
			want: view{Event: "not_understood", Reason: "data_too_long", Intent: "create_booking", LLMCalls: 1, QuotaChecks: 1,
				Replies: []replyView{sys("id", i18n.NotUnderstood)}},
		},
		{
			name:   "a steered model: the data lines show what will be sent, whatever the reply says, and only the intent's fields are sent",
			msg:    textMsg("m-book", ownerID, "book bus 01 for Pak Agus on 1 March"),
			script: []assistanttest.Step{ok(steered)},
			want: view{Event: "pending", Intent: "create_booking", LLMCalls: 1, QuotaChecks: 1,
				Replies: []replyView{{Text: steered.Reply + "\n\nclient: \"Pak Agus\\ndate: 2027-03-01\"\ndate: 9 Maret 2027\nbus: 02\nprice: 15.000.000",
					Buttons: confirmButtons("id")}},
				Pending: func() *turnstate.PendingAction {
					p := newPending("m-book", steered, t0)
					p.Data = map[string]any{"client": "Pak Agus\ndate: 2027-03-01", "date": "2027-03-09", "bus": "02", "price": int64(15000000)}
					p.Summary = steered.Reply + "\n\nclient: \"Pak Agus\\ndate: 2027-03-01\"\ndate: 9 Maret 2027\nbus: 02\nprice: 15.000.000"
					return p
				}()},
		},
		{
			name: "ack mode sends ack_text exactly and quotes the message",
			edit: []func(*tenant.Tenant){ackMode("Thanks, we got your message.")},
			msg:  textMsg("m-1", memberID, "book bus 01"),
			want: view{Event: "ack", Replies: []replyView{{Text: "Thanks, we got your message.", Quote: true}}},
		},
		{
			name:  "ack mode without ack_text answers in the member's language and drops a pending action",
			edit:  []func(*tenant.Tenant){ackMode("")},
			msg:   mediaMsg("m-1", memberID, "image"),
			state: withPending,
			want:  view{Event: "ack", Replies: []replyView{{Text: i18n.Text("en", i18n.Ack), Key: i18n.Ack, Quote: true}}},
		},
		{
			name:  "an image is unsupported and keeps a pending action",
			msg:   mediaMsg("m-1", ownerID, "image"),
			state: withPending,
			want: view{Event: "unsupported_message", Replies: []replyView{sys("id", i18n.UnsupportedMessage)},
				Pending: pendingBooking()},
		},
		{
			name:  "a reaction is ignored",
			msg:   whatsapp.Message{ID: "m-1", From: ownerID, Type: "reaction", Reaction: &whatsapp.Reaction{MessageID: "x", Emoji: "👍"}},
			state: withPending,
			want:  view{Event: "ignored", Pending: pendingBooking()},
		},
		{
			name:   "another button is read as its title",
			msg:    buttonMsg("m-1", ownerID, "menu_schedule", "Jadwal besok"),
			script: []assistanttest.Step{ok(scheduleResult())},
			want: view{Event: "action_now", Intent: "check_schedule", LLMCalls: 1, QuotaChecks: 1,
				Action: &assistant.ActionRequest{ActionID: assistant.ActionID(tenantID, convID, "m-1"), TenantID: tenantID,
					Intent: "check_schedule", Data: map[string]any{"date": "2026-11-24"}, From: ownerFrom,
					ConversationID: convID, RequestedAt: t0}},
		},
		{
			name:   "a tap on another button titled Yes is an ordinary message: a correction, no action",
			msg:    buttonMsg("m-1", ownerID, "promo_yes", "Yes"),
			state:  withPending,
			script: []assistanttest.Step{ok(generalResult("Ada yang bisa dibantu?"))},
			want: view{Event: "general_query", Intent: "general_query", Corrected: true, LLMCalls: 1, QuotaChecks: 1,
				Replies: []replyView{{Text: "Ada yang bisa dibantu?"}}},
		},
		{
			name:   "a tap on another button titled Tidak does not reject either",
			msg:    buttonMsg("m-1", ownerID, "promo_no", "Tidak"),
			state:  withPending,
			script: []assistanttest.Step{ok(generalResult("Baik."))},
			want: view{Event: "general_query", Intent: "general_query", Corrected: true, LLMCalls: 1, QuotaChecks: 1,
				Replies: []replyView{{Text: "Baik."}}},
		},
		{
			name: "over the contact's share: the quota notice, a sender block, no LLM call",
			edit: []func(*tenant.Tenant){quota(100), func(t *tenant.Tenant) { n := 3; t.Quota.PerSenderPerMonth = &n }},
			msg:  textMsg("m-4", ownerID, "halo"),
			guard: func(g *assistanttest.Guard) {
				g.SetUsage(tenantID, period, 3)
				g.SetSenderUsage(tenantID, contactOf(ownerID), period, 3)
			},
			want: view{Event: "quota_blocked", Reason: "sender_share", QuotaChecks: 1,
				Replies:      []replyView{sys("id", i18n.QuotaExceeded)},
				QuotaBlocked: &turnstate.QuotaBlock{Period: period, Limit: 3, NotifiedAt: t0, Sender: true}},
		},
		{
			name:  "the default share is a tenth of the quota, at least 10",
			edit:  []func(*tenant.Tenant){quota(50)},
			msg:   textMsg("m-11", ownerID, "halo"),
			guard: func(g *assistanttest.Guard) { g.SetSenderUsage(tenantID, contactOf(ownerID), period, 10) },
			want: view{Event: "quota_blocked", Reason: "sender_share", QuotaChecks: 1,
				Replies:      []replyView{sys("id", i18n.QuotaExceeded)},
				QuotaBlocked: &turnstate.QuotaBlock{Period: period, Limit: 10, NotifiedAt: t0, Sender: true}},
		},
		{
			name:  "a contact's cached share block stays silent, even after a conversation window",
			edit:  []func(*tenant.Tenant){quota(100)},
			msg:   textMsg("m-12", ownerID, "halo?"),
			now:   t0.Add(time.Hour),
			state: turnstate.State{QuotaBlocked: &turnstate.QuotaBlock{Period: period, Limit: 10, NotifiedAt: t0, Sender: true}},
			want: view{Event: "quota_blocked_cached", Reason: "sender_share",
				QuotaBlocked: &turnstate.QuotaBlock{Period: period, Limit: 10, NotifiedAt: t0, Sender: true}},
		},
		{
			name:   "a raised share lifts the contact's block",
			edit:   []func(*tenant.Tenant){quota(200)},
			msg:    textMsg("m-12", ownerID, "halo"),
			state:  turnstate.State{QuotaBlocked: &turnstate.QuotaBlock{Period: period, Limit: 10, NotifiedAt: t0, Sender: true}},
			guard:  func(g *assistanttest.Guard) { g.SetSenderUsage(tenantID, contactOf(ownerID), period, 10) },
			script: []assistanttest.Step{ok(generalResult("Halo!"))},
			want: view{Event: "general_query", Intent: "general_query", LLMCalls: 1, QuotaChecks: 1,
				Replies: []replyView{{Text: "Halo!"}}},
		},
		{
			name:  "ack mode honours the conversation limit",
			edit:  []func(*tenant.Tenant){ackMode("Thanks, we got your message.")},
			msg:   textMsg("m-6", memberID, "hello?"),
			state: turnstate.State{RateWindow: &turnstate.Window{Start: t0, Count: 5}},
			want:  view{Event: "rate_limited", Reason: "conversation_limit", Replies: []replyView{sys("en", i18n.RateLimited)}},
		},
		{
			name: "ack mode honours the sender limit",
			edit: []func(*tenant.Tenant){ackMode("")},
			msg:  textMsg("m-21", memberID, "hello?"),
			guard: func(g *assistanttest.Guard) {
				for i := range 20 {
					if _, err := g.HitSender(context.Background(), turnstate.SenderHit{TenantID: tenantID, Sender: contactOf(memberID),
						MessageID: fmt.Sprint("other-", i), At: t0, Limit: tenant.Limit{Max: 20, Per: 5 * time.Minute}}); err != nil {
						panic(err)
					}
				}
			},
			want: view{Event: "rate_limited", Reason: "sender_limit", Replies: []replyView{sys("en", i18n.RateLimited)}},
		},
		{
			name:  "over quota: the quota message, the block cached, no LLM call",
			edit:  []func(*tenant.Tenant){quota(2)},
			msg:   textMsg("m-3", ownerID, "halo"),
			guard: func(g *assistanttest.Guard) { g.SetUsage(tenantID, period, 2) },
			want: view{Event: "quota_blocked", Reason: "quota_exceeded", QuotaChecks: 1,
				Replies:      []replyView{sys("id", i18n.QuotaExceeded)},
				QuotaBlocked: &turnstate.QuotaBlock{Period: period, Limit: 2, NotifiedAt: t0}},
		},
		{
			name: "quota 0 allows no call at all",
			edit: []func(*tenant.Tenant){quota(0)},
			msg:  textMsg("m-1", ownerID, "halo"),
			want: view{Event: "quota_blocked", Reason: "quota_exceeded", QuotaChecks: 1,
				Replies:      []replyView{sys("id", i18n.QuotaExceeded)},
				QuotaBlocked: &turnstate.QuotaBlock{Period: period, NotifiedAt: t0}},
		},
		{
			name:  "a cached block skips the check and stays silent within the window",
			edit:  []func(*tenant.Tenant){quota(2)},
			msg:   textMsg("m-4", ownerID, "halo?"),
			now:   t0.Add(10 * time.Second),
			state: turnstate.State{QuotaBlocked: &turnstate.QuotaBlock{Period: period, Limit: 2, NotifiedAt: t0}},
			want: view{Event: "quota_blocked_cached", Reason: "quota_exceeded",
				QuotaBlocked: &turnstate.QuotaBlock{Period: period, Limit: 2, NotifiedAt: t0}},
		},
		{
			name:  "a cached block notifies again after a conversation window",
			edit:  []func(*tenant.Tenant){quota(2)},
			msg:   textMsg("m-4", ownerID, "halo?"),
			now:   t0.Add(time.Hour),
			state: turnstate.State{QuotaBlocked: &turnstate.QuotaBlock{Period: period, Limit: 2, NotifiedAt: t0}},
			want: view{Event: "quota_blocked_cached", Reason: "quota_exceeded",
				Replies:      []replyView{sys("id", i18n.QuotaExceeded)},
				QuotaBlocked: &turnstate.QuotaBlock{Period: period, Limit: 2, NotifiedAt: t0.Add(time.Hour)}},
		},
		{
			name:   "a raised quota lifts the block",
			edit:   []func(*tenant.Tenant){quota(3)},
			msg:    textMsg("m-4", ownerID, "halo"),
			state:  turnstate.State{QuotaBlocked: &turnstate.QuotaBlock{Period: period, Limit: 2, NotifiedAt: t0}},
			guard:  func(g *assistanttest.Guard) { g.SetUsage(tenantID, period, 2) },
			script: []assistanttest.Step{ok(generalResult("Halo!"))},
			want: view{Event: "general_query", Intent: "general_query", LLMCalls: 1, QuotaChecks: 1,
				Replies: []replyView{{Text: "Halo!"}}},
		},
		{
			name:   "a removed quota lifts the block",
			msg:    textMsg("m-4", ownerID, "halo"),
			state:  turnstate.State{QuotaBlocked: &turnstate.QuotaBlock{Period: period, Limit: 2, NotifiedAt: t0}},
			script: []assistanttest.Step{ok(generalResult("Halo!"))},
			want: view{Event: "general_query", Intent: "general_query", LLMCalls: 1, QuotaChecks: 1,
				Replies: []replyView{{Text: "Halo!"}}},
		},
		{
			name:   "a new period lifts the block",
			edit:   []func(*tenant.Tenant){quota(2)},
			msg:    textMsg("m-4", ownerID, "halo"),
			now:    time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC),
			state:  turnstate.State{QuotaBlocked: &turnstate.QuotaBlock{Period: period, Limit: 2, NotifiedAt: t0}},
			guard:  func(g *assistanttest.Guard) { g.SetUsage(tenantID, period, 2) },
			script: []assistanttest.Step{ok(generalResult("Halo!"))},
			want: view{Event: "general_query", Intent: "general_query", LLMCalls: 1, QuotaChecks: 1,
				Replies: []replyView{{Text: "Halo!"}}},
		},
		{
			name:        "a failing quota check on the last attempt blocks the call and sends the fallback",
			edit:        []func(*tenant.Tenant){quota(100)},
			msg:         textMsg("m-1", ownerID, "halo"),
			guard:       func(g *assistanttest.Guard) { g.FailQuota(errors.New("firestore: deadline exceeded")) },
			lastAttempt: true,
			want: view{Event: "quota_blocked", Reason: "quota_check_error", QuotaChecks: 1, HasCause: true,
				Replies: []replyView{sys("id", i18n.Unavailable)}},
		},
		{
			name:   "an invalid answer twice is not understood",
			msg:    textMsg("m-1", ownerID, "halo"),
			script: []assistanttest.Step{fail(llm.ErrInvalidResponse), fail(llm.ErrInvalidResponse)},
			want: view{Event: "not_understood", Reason: "invalid_response", LLMCalls: 2, QuotaChecks: 2,
				Replies: []replyView{sys("id", i18n.NotUnderstood)}},
		},
		{
			name:   "an invalid answer then a valid one is answered",
			msg:    textMsg("m-1", ownerID, "halo"),
			script: []assistanttest.Step{fail(llm.ErrInvalidResponse), ok(generalResult("Halo!"))},
			want: view{Event: "general_query", Intent: "general_query", LLMCalls: 2, QuotaChecks: 2,
				Replies: []replyView{{Text: "Halo!"}}},
		},
		{
			name:        "the LLM unavailable on the last attempt sends the unavailable message",
			msg:         textMsg("m-1", ownerID, "halo"),
			script:      []assistanttest.Step{fail(llm.ErrUnavailable)},
			lastAttempt: true,
			want: view{Event: "llm_unavailable", Reason: "llm_unavailable", LLMCalls: 1, QuotaChecks: 1, HasCause: true,
				Replies: []replyView{sys("id", i18n.Unavailable)}},
		},
		{
			name:   "a permanent LLM error sends the unavailable message",
			msg:    textMsg("m-1", ownerID, "halo"),
			script: []assistanttest.Step{fail(llm.ErrPermanent)},
			want: view{Event: "llm_unavailable", Reason: "llm_permanent", LLMCalls: 1, QuotaChecks: 1, HasCause: true,
				Replies: []replyView{sys("id", i18n.Unavailable)}},
		},
		{
			name: "over the sender limit: the notice, no LLM call",
			msg:  textMsg("m-21", ownerID, "halo"),
			guard: func(g *assistanttest.Guard) {
				for i := range 20 {
					if _, err := g.HitSender(context.Background(), turnstate.SenderHit{TenantID: tenantID, Sender: contactOf(ownerID),
						MessageID: "other-" + string(rune('a'+i)), At: t0, Limit: tenant.Limit{Max: 20, Per: 5 * time.Minute}}); err != nil {
						panic(err)
					}
				}
			},
			want: view{Event: "rate_limited", Reason: "sender_limit", Replies: []replyView{sys("id", i18n.RateLimited)}},
		},
		{
			name:        "a failing sender limit on the last attempt sends the unavailable message",
			msg:         textMsg("m-1", ownerID, "halo"),
			guard:       func(g *assistanttest.Guard) { g.FailSender(errors.New("firestore: unavailable")) },
			lastAttempt: true,
			want: view{Event: "llm_unavailable", Reason: "sender_check_error", HasCause: true,
				Replies: []replyView{sys("id", i18n.Unavailable)}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tn := newTenant(t, tt.edit...)
			g := assistanttest.NewGuard()
			if tt.guard != nil {
				tt.guard(g)
			}
			x := assistanttest.NewExtractor(tt.script...)
			now := tt.now
			if now.IsZero() {
				now = t0
			}
			in := input(tn, tt.msg, now, tt.state)
			in.LastAttempt, in.StaleButton = tt.lastAttempt, tt.staleButton
			out := run(t, assistant.New(x, g), in)
			got := view{
				Event: out.Event, Reason: out.Reason, Intent: out.Intent, Corrected: out.Corrected, Replies: views(out.Replies),
				Action: out.Action, Pending: out.State.Pending, QuotaBlocked: out.State.QuotaBlocked,
				LLMCalls: x.Calls(), QuotaChecks: g.QuotaChecks(), HasCause: out.Cause != nil,
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("outcome (-want, +got):\n%s", diff)
			}
			if out.LLMCalls != x.Calls() {
				t.Errorf("Outcome.LLMCalls = %d, the extractor saw %d", out.LLMCalls, x.Calls())
			}
			if out.LLMCalls == 0 && out.Usage != (llm.Usage{}) {
				t.Errorf("usage %+v without an LLM call", out.Usage)
			}
			for i, r := range out.Replies {
				if r.Index != i {
					t.Errorf("reply %d has Index %d", i, r.Index)
				}
			}
			if n := len(out.State.Turns); out.Event == assistant.EventIgnored && n != len(tt.state.Turns) || out.Event != assistant.EventIgnored && n != len(tt.state.Turns)+1 {
				t.Errorf("state has %d turns after a %s turn that started with %d", n, out.Event, len(tt.state.Turns))
			}
		})
	}
}

func TestTurnRetriesWhenTheLLMIsUnavailable(t *testing.T) {
	t.Parallel()
	tn := newTenant(t, quota(10))
	g := assistanttest.NewGuard()
	x := assistanttest.NewExtractor(fail(llm.ErrUnavailable), ok(generalResult("Halo!")))
	e := assistant.New(x, g)
	in := input(tn, textMsg("m-1", ownerID, "halo"), t0, turnstate.State{Pending: pendingBooking()})

	out, err := e.Turn(context.Background(), in)
	if !errors.Is(err, assistant.ErrRetry) || !errors.Is(err, llm.ErrUnavailable) {
		t.Fatalf("Turn error = %v; want ErrRetry and llm.ErrUnavailable", err)
	}
	if diff := cmp.Diff(assistant.Outcome{}, out); diff != "" {
		t.Errorf("an error came with an outcome (-want, +got):\n%s", diff)
	}
	// The redone turn, from the same state, is charged once for the call it makes again.
	out = run(t, e, in)
	if out.Event != assistant.EventGeneralQuery || !out.Corrected {
		t.Errorf("redone turn: event %q corrected %v; want general_query, corrected", out.Event, out.Corrected)
	}
	if got := g.Usage(tenantID, turnstate.Period(t0)); got != 1 {
		t.Errorf("usage = %d after one turn redone once; want 1", got)
	}
}

// TestTurnRetriesWhenTheQuotaCannotBeChecked: a quota check that fails (a store outage of
// seconds) before the last attempt makes no call and answers nothing: the turn is redone, as for
// the sender check, and only the last attempt answers "unavailable".
func TestTurnRetriesWhenTheQuotaCannotBeChecked(t *testing.T) {
	t.Parallel()
	g := assistanttest.NewGuard()
	g.FailQuota(errors.New("firestore: deadline exceeded"))
	x := assistanttest.NewExtractor()
	_, err := assistant.New(x, g).Turn(context.Background(), input(newTenant(t, quota(100)), textMsg("m-1", ownerID, "halo"), t0, turnstate.State{}))
	if !errors.Is(err, assistant.ErrRetry) {
		t.Fatalf("Turn error = %v; want ErrRetry", err)
	}
	if x.Calls() != 0 {
		t.Errorf("LLM calls %d; want none without a counted reservation", x.Calls())
	}
}

func TestTurnRetriesWhenTheSenderLimitCannotBeRead(t *testing.T) {
	t.Parallel()
	g := assistanttest.NewGuard()
	g.FailSender(errors.New("firestore: unavailable"))
	x := assistanttest.NewExtractor()
	_, err := assistant.New(x, g).Turn(context.Background(), input(newTenant(t), textMsg("m-1", ownerID, "halo"), t0, turnstate.State{}))
	if !errors.Is(err, assistant.ErrRetry) {
		t.Fatalf("Turn error = %v; want ErrRetry", err)
	}
	if x.Calls() != 0 || g.QuotaChecks() != 0 {
		t.Errorf("LLM calls %d, quota checks %d; want none", x.Calls(), g.QuotaChecks())
	}
}

func TestTurnRejectsAnIncompleteInput(t *testing.T) {
	t.Parallel()
	e := assistant.New(assistanttest.NewExtractor(), assistanttest.NewGuard())
	tn := newTenant(t)
	good := input(tn, textMsg("m-1", ownerID, "halo"), t0, turnstate.State{})
	for name, edit := range map[string]func(*assistant.Input){
		"no tenant":       func(in *assistant.Input) { in.Tenant = nil },
		"no conversation": func(in *assistant.Input) { in.ConversationID = "" },
		"no message id":   func(in *assistant.Input) { in.Message.ID = "" },
		"no time":         func(in *assistant.Input) { in.Now = time.Time{} },
	} {
		in := good
		edit(&in)
		if _, err := e.Turn(context.Background(), in); err == nil || errors.Is(err, assistant.ErrRetry) {
			t.Errorf("%s: error = %v; want a non-retry error", name, err)
		}
	}
}
