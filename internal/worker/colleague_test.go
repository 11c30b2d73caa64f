package worker_test

import (
	"strings"
	"testing"
	"time"

	"github.com/wapipe/wapipe/internal/assistant"
	"github.com/wapipe/wapipe/internal/graph/graphfake"
	"github.com/wapipe/wapipe/internal/i18n"
	"github.com/wapipe/wapipe/internal/llm/geminifake"
	"github.com/wapipe/wapipe/internal/testenv"
	"github.com/wapipe/wapipe/internal/whatsapp"
)

// TestTurnKnowsTheTenantsDayAndTheSendersName: a message at 23:30 UTC to a tenant in
// Asia/Makassar (UTC+8) reaches Gemini with the next local day as "today" (07:30 there), and with
// the sender's name from the tenant file.
func TestTurnKnowsTheTenantsDayAndTheSendersName(t *testing.T) {
	t.Parallel()
	s, c := assistantStack(t)
	tid := s.assistantTenant("acme-tz", numberA, "time_zone: Asia/Makassar\n")
	now := time.Now().UTC()
	late := time.Date(now.Year(), now.Month(), now.Day(), 23, 30, 0, 0, time.UTC)
	c.advance(late.Sub(time.Now()))
	s.text(numberA, contact, "is bus 03 free tomorrow?", c.now())
	s.waitSendsTo(contact, 1)
	s.settled(tid)
	reqs := s.Gemini.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d Gemini calls, want 1", len(reqs))
	}
	local := late.In(time.FixedZone("WITA", 8*3600))
	sys := reqs[0].SystemInstruction
	for _, want := range []string{"Today is " + local.Format("Monday 2006-01-02") + " (time zone Asia/Makassar), and it is 07:30 there",
		`The user's name is "Marie"`} {
		if !strings.Contains(sys, want) {
			t.Errorf("the model's instructions lack %q:\n%s", want, sys)
		}
	}
}

// TestTypingWhileTheModelThinks: with the fake Gemini's answer held back two seconds, the sender
// sees the typing indicator once in the turn (a mark-as-read with typing_indicator reaches Meta,
// besides the plain read receipt); a turn the model answers at once shows none.
func TestTypingWhileTheModelThinks(t *testing.T) {
	t.Parallel()
	s, _ := assistantStack(t)
	tid := s.assistantTenant("acme-typing", numberA, "")
	typing := func() int {
		n := 0
		for _, r := range s.Graph.Requests() {
			if r.Kind == graphfake.KindRead && r.Status == 200 && r.Body["typing_indicator"] != nil {
				n++
			}
		}
		return n
	}
	s.text(numberA, contact, "halo", time.Now())
	s.waitSendsTo(contact, 1)
	s.settled(tid)
	if n := typing(); n != 0 {
		t.Errorf("%d typing indicators for a quick turn, want none", n)
	}
	s.Gemini.FailNext(1, geminifake.Failure{Delay: 2 * time.Second})
	s.text(numberA, contact, "is bus 03 free tomorrow?", time.Now().Add(time.Second))
	s.waitSendsTo(contact, 2)
	s.settled(tid)
	if n := typing(); n != 1 {
		t.Errorf("%d typing indicators for a turn the model took 2 s over, want 1", n)
	}
}

// TestWhichBusAsAList: the model asks "which bus?" offering four buses: the question goes as a
// list (ids option:<id>); the contact's row is the answer, given to the model as the bus's
// title, and completes the booking: its confirmation prompt follows, and "yes" calls the action
// with that bus. A row that was never offered is not an answer ("expired").
func TestWhichBusAsAList(t *testing.T) {
	t.Parallel()
	s, _ := assistantStack(t)
	tid := s.assistantTenant("acme-choices", numberA, "")
	buses := []geminifake.AnswerOption{{ID: "bus-01", Title: "Bus 01"}, {ID: "bus-02", Title: "Bus 02", Description: "Hiace, 14 seats"},
		{ID: "bus-03", Title: "Bus 03"}, {ID: "bus-04", Title: "Bus 04"}}
	for _, r := range []geminifake.Rule{
		{Name: "which bus", Contains: "book a bus", Response: &geminifake.Answer{Intent: "create_booking", Confidence: 0.9,
			Data: map[string]any{"client": "Pak Agus", "date": "2027-03-01"}, MissingFields: []string{"bus"}, Reply: "Which bus?", Options: buses}},
		{Name: "bus 02", Contains: "Bus 02", Response: &geminifake.Answer{Intent: "create_booking", Confidence: 0.95,
			Data: map[string]any{"client": "Pak Agus", "date": "2027-03-01", "bus": "02"}, Reply: "Bus 02 for Pak Agus on 1 March?"}},
	} {
		if err := s.Gemini.AddRule(r); err != nil {
			t.Fatal(err)
		}
	}
	s.text(numberA, contact, "book a bus for Pak Agus on 1 March", time.Now())
	question := s.waitSendsTo(contact, 1)[0]
	it, _ := question.Body["interactive"].(map[string]any)
	action, _ := it["action"].(map[string]any)
	sections, _ := action["sections"].([]any)
	if it["type"] != "list" || len(sections) != 1 || len(sections[0].(map[string]any)["rows"].([]any)) != 4 {
		t.Fatalf("the question: %v, want a list of the four buses", question.Body)
	}
	// A row the question did not offer.
	s.deliver(whatsapp.SampleListReply(whatsapp.SampleOptions{PhoneNumberID: numberA, From: contact, ContextID: question.MessageID},
		"option:bus-99", "Bus 99", ""))
	if got := body(s.waitSendsTo(contact, 2)[1]); got != i18n.Text("en", i18n.Expired) {
		t.Errorf("a row never offered was answered %q, want expired", got)
	}
	s.text(numberA, contact, "book a bus for Pak Agus on 1 March", time.Now().Add(time.Second))
	question = s.waitSendsTo(contact, 3)[2]
	s.deliver(whatsapp.SampleListReply(whatsapp.SampleOptions{PhoneNumberID: numberA, From: contact, ContextID: question.MessageID},
		"option:bus-02", "Bus 02", "Hiace, 14 seats"))
	prompt := s.waitSendsTo(contact, 4)[3]
	if !strings.Contains(body(prompt), "bus: 02") || buttons(prompt) == nil {
		t.Fatalf("after the row: %q with buttons %v, want the confirmation of bus 02", body(prompt), buttons(prompt))
	}
	s.tap(numberA, contact, assistant.ButtonYes, prompt.MessageID)
	testenv.Eventually(t, 30*time.Second, func() bool { return len(s.Action.Calls()) == 1 }, "the booking was never called")
	s.settled(tid)
	if calls := s.Action.Calls(); len(calls) != 1 || calls[0].Request.Data["bus"] != "02" {
		t.Errorf("action calls %+v, want one for bus 02", calls)
	}
}

// TestConfirmationReadsInTheConversationsLanguage: a booking in an Indonesian tenant is confirmed
// with the file's Indonesian labels and the values written for them (Harga: Rp15.000.000,
// Tanggal: 1 Maret 2026), while the action receives the canonical values (15000000, 2026-03-01).
func TestConfirmationReadsInTheConversationsLanguage(t *testing.T) {
	t.Parallel()
	s, _ := assistantStack(t)
	tid := s.assistantTenantOf(s.ops(), "acme-id", numberA, "id", "currency: IDR\n", `    - name: create_booking
      description: a new booking of a bus for a client on a date
      fields:
        client: string
        date: {type: date, label: {en: Date, id: Tanggal}}
        bus: string
        price: {type: money, label: {en: Price, id: Harga}}
      required: [client, date, bus]
      confirm: true
`)
	if err := s.Gemini.AddRule(geminifake.Rule{Contains: "pesan bus", Response: &geminifake.Answer{Intent: "create_booking", Confidence: 0.95,
		Data: map[string]any{"client": "Pak Agus", "date": "2026-03-01", "bus": "01", "price": 15000000}, Reply: "Saya catat. Benar?"}}); err != nil {
		t.Fatal(err)
	}
	s.text(numberA, contact, "pesan bus 01 untuk Pak Agus 1 Maret, 15 juta", time.Now())
	prompt := s.waitSendsTo(contact, 1)[0]
	for _, want := range []string{"Harga: Rp15.000.000", "Tanggal: 1 Maret 2026"} {
		if !strings.Contains(body(prompt), want) {
			t.Errorf("the confirmation %q lacks %q", body(prompt), want)
		}
	}
	s.tap(numberA, contact, assistant.ButtonYes, prompt.MessageID)
	testenv.Eventually(t, 30*time.Second, func() bool { return len(s.Action.Calls()) == 1 }, "the booking was never called")
	s.settled(tid)
	d := s.Action.Calls()[0].Request.Data
	if price, _ := d["price"].(float64); price != 15000000 || d["date"] != "2026-03-01" {
		t.Errorf("the action's data %v, want price 15000000 and date 2026-03-01", d)
	}
}
