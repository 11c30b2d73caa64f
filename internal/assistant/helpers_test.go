package assistant_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/wapipe/wapipe/internal/assistant"
	"github.com/wapipe/wapipe/internal/assistant/assistanttest"
	"github.com/wapipe/wapipe/internal/i18n"
	"github.com/wapipe/wapipe/internal/llm"
	"github.com/wapipe/wapipe/internal/tenant"
	"github.com/wapipe/wapipe/internal/turnstate"
	"github.com/wapipe/wapipe/internal/whatsapp"
)

// t0 is the tests' clock.
var t0 = time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)

const (
	tenantID   = "acme-bus"
	convID     = "conv-1"
	ownerID    = "6281234567890"
	memberID   = "447700900123"
	strangerID = "5511999990000" // not a member
)

const tenantYAML = `
id: acme-bus
name: Acme Bus
language: id
audience: members
phone_numbers:
  - {phone_number_id: "106540352242922", waba_id: "102290129340398"}
members:
  - {wa_id: "6281234567890", role: owner, name: Pak Agus, language: id}
  - {wa_id: "447700900123", role: member, name: Sam, language: en}
limits:
  conversation: {max: 5, per: 30s}
  sender: {max: 20, per: 5m}
assistant:
  mode: llm
  instructions: You are the operations assistant of a tour-bus company.
  min_confidence: 0.7
  action_url: https://ops.example.com/wapipe/actions
  intents:
    - name: create_booking
      description: a new booking
      fields: {client: string, date: date, route: string, bus: string, price: integer}
      required: [client, date, bus]
      confirm: true
      roles: [owner, admin]
    - {name: check_schedule, description: who drives which bus when, fields: {date: date}, confirm: false}
    - {name: report_issue, description: a problem with a bus, fields: {bus: string, issue: string, departure: time, since: datetime}, required: [bus]}
`

// newTenant parses the test tenant and lets edit change it.
func newTenant(t *testing.T, edit ...func(*tenant.Tenant)) *tenant.Tenant {
	t.Helper()
	tn, err := tenant.Parse([]byte(tenantYAML))
	if err != nil {
		t.Fatalf("tenant.Parse: %v", err)
	}
	for _, e := range edit {
		e(tn)
	}
	return tn
}

func quota(n int) func(*tenant.Tenant) {
	return func(t *tenant.Tenant) { t.Quota.LLMCallsPerMonth = &n }
}

func ackMode(text string) func(*tenant.Tenant) {
	return func(t *tenant.Tenant) { t.Assistant.Mode, t.Assistant.AckText = tenant.ModeAck, text }
}

func textMsg(id, from, body string) whatsapp.Message {
	return whatsapp.Message{ID: id, From: from, ContactName: "WA " + from, PhoneNumberID: "106540352242922", Type: "text", Text: body}
}

func buttonMsg(id, from, buttonID, title string) whatsapp.Message {
	return whatsapp.Message{ID: id, From: from, ContactName: "WA " + from, PhoneNumberID: "106540352242922", Type: "interactive",
		Reply: &whatsapp.Reply{Kind: "button_reply", ID: buttonID, Title: title}, ContextID: "wamid.prompt"}
}

func mediaMsg(id, from, typ string) whatsapp.Message {
	return whatsapp.Message{ID: id, From: from, PhoneNumberID: "106540352242922", Type: typ, Media: &whatsapp.Media{ID: "media-1"}}
}

// input is a turn of the owner (or of the member known as from) at now.
func input(tn *tenant.Tenant, m whatsapp.Message, now time.Time, st turnstate.State) assistant.Input {
	mem, ok := tn.MemberOf(m.Identity())
	return assistant.Input{Tenant: tn, Member: mem, IsMember: ok, ConversationID: convID, ContactID: contactOf(m.From),
		Person: m.Identity(), Message: m, Now: now, State: st}
}

// contactOf is the test contact id of the person with phone waID: the key of its sender
// window and quota share.
func contactOf(waID string) string { return "ct_" + waID }

// The model's answers.

func bookingResult() llm.Result {
	return llm.Result{Intent: "create_booking", Confidence: 0.95,
		Data:  map[string]any{"client": "Pak Agus", "date": "2027-03-01", "bus": "01", "price": int64(15000000)},
		Reply: "Saya catat: bus 01 untuk Pak Agus pada 1 Maret, 15.000.000. Benar?",
		Usage: llm.Usage{PromptTokens: 100, OutputTokens: 20, TotalTokens: 120}}
}

func scheduleResult() llm.Result {
	return llm.Result{Intent: "check_schedule", Confidence: 0.9, Data: map[string]any{"date": "2026-11-24"},
		Reply: "Saya cek jadwalnya.", Usage: llm.Usage{PromptTokens: 90, OutputTokens: 10, TotalTokens: 100}}
}

func generalResult(reply string) llm.Result {
	return llm.Result{Intent: "general_query", Confidence: 0.9, Data: map[string]any{}, Reply: reply,
		Usage: llm.Usage{PromptTokens: 50, OutputTokens: 10, TotalTokens: 60}}
}

func ok(r llm.Result) assistanttest.Step { return assistanttest.Step{Result: r} }

func fail(kind error) assistanttest.Step {
	return assistanttest.Step{Err: &llm.Error{Kind: kind, Reason: "scripted"}}
}

// bookingFields is the order of create_booking's fields in the test tenant's file.
var bookingFields = []string{"client", "date", "route", "bus", "price"}

// dataBlock is what wapipe renders under a confirmation for create_booking's data: one
// "field: value" line per field with a value, in the file's field order.
func dataBlock(data map[string]any) string { return dataBlockIn("id", data) }

// dataBlockIn is the data lines of a booking as lang writes them (the test tenant has no labels):
// dates spelled, numbers grouped (i18n's formats, checked exactly by TestDataLinesInEachLanguage).
func dataBlockIn(lang string, data map[string]any) string {
	var lines []string
	for _, f := range bookingFields {
		v, ok := data[f]
		if !ok {
			continue
		}
		s := fmt.Sprint(v)
		switch x := v.(type) {
		case int64:
			s = i18n.FormatNumber(lang, float64(x))
		case string:
			if d, err := time.Parse(time.DateOnly, x); err == nil && f == "date" {
				s = i18n.FormatDate(lang, d)
			}
		}
		lines = append(lines, f+": "+s)
	}
	return strings.Join(lines, "\n")
}

// confirmBody is a confirmation's body in the test tenant's language (id): the model's reply,
// then the data lines.
func confirmBody(r llm.Result) string { return confirmBodyIn("id", r) }

// confirmBodyIn is confirmBody in lang.
func confirmBodyIn(lang string, r llm.Result) string {
	return r.Reply + "\n\n" + dataBlockIn(lang, r.Data)
}

// pendingBooking is the pending action a booking message "m-book" left at t0.
func pendingBooking() *turnstate.PendingAction {
	r := bookingResult()
	return &turnstate.PendingAction{
		ActionID: assistant.ActionID(tenantID, convID, "m-book"), Intent: "create_booking", Data: r.Data,
		Summary: r.Reply, MessageID: "m-book", CreatedAt: t0, ExpiresAt: t0.Add(turnstate.PendingTTL),
	}
}

// replyView is what a test checks of a Reply.
type replyView struct {
	Index   int
	Text    string
	Key     i18n.Key
	Quote   bool
	Buttons []string // "id=title"
}

func views(rs []assistant.Reply) []replyView {
	var out []replyView
	for _, r := range rs {
		v := replyView{Index: r.Index, Text: r.Body(), Key: r.Key, Quote: r.Quote}
		if m := r.Graph; m != nil && m.Interactive != nil {
			for _, b := range m.Interactive.Action.Buttons {
				v.Buttons = append(v.Buttons, b.Reply.ID+"="+b.Reply.Title)
			}
		}
		out = append(out, v)
	}
	return out
}

func sys(lang string, key i18n.Key) replyView {
	return replyView{Text: i18n.Text(lang, key), Key: key}
}

func confirmButtons(lang string) []string {
	return []string{"confirm_yes=" + i18n.Text(lang, i18n.ButtonConfirm), "confirm_no=" + i18n.Text(lang, i18n.ButtonCancel)}
}

// run runs one turn and fails the test on error.
func run(t *testing.T, e *assistant.Engine, in assistant.Input) assistant.Outcome {
	t.Helper()
	out, err := e.Turn(context.Background(), in)
	if err != nil {
		t.Fatalf("Turn(%s): %v", in.Message.ID, err)
	}
	return out
}
