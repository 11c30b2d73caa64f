package devstack_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/wapipe/wapipe/internal/contact"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/whatsapp"
	"github.com/wapipe/wapipe/tenants"
)

// TestSharedNumberTypedWordAndEchoAttacks is the red team's attack on a number the sample
// tenant (sunrise-bus, whose assistant confirms bookings) shares with a rival business. The
// rival asks the sample's owner a question of its own ("Reply YES for 50% off") and the owner
// types "yes": on a shared number a typed word confirms the pending booking only as a reply
// (context) to its prompt, so this "yes" calls nothing (the booking stays pending and the owner
// is told to tap or reply to it), and the same word replying to the prompt does. What the number's Business app sends (an echo) is stored in the owner's conversation but
// never put in the sample's model's history as the sample's own words.
func TestSharedNumberTypedWordAndEchoAttacks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const number, waba, owner = "106540352242922", "102290129340398", "16505551234"
	sample := tenants.Sample()
	sample = bytes.Replace(sample, []byte(`{phone_number_id: "`+number+`", waba_id: "`+waba+`"}`),
		[]byte(`{phone_number_id: "`+number+`", waba_id: "`+waba+`", shared: true}`), 1)
	if !bytes.Contains(sample, []byte("shared: true")) {
		t.Fatal("tenants/sample.yaml changed: the test cannot adapt it")
	}
	rival := []byte("id: rival\nname: Rival\nlanguage: en\naudience: public\nphone_numbers:\n" +
		"  - {phone_number_id: \"" + number + "\", waba_id: \"" + waba + "\", shared: true}\n")
	e := startEventsStackWith(t, sample, rival)
	st := e.st
	from := whatsapp.SampleOptions{PhoneNumberID: number, WABAID: waba, From: owner, ContactName: "Sheena"}
	send := func(o whatsapp.SampleOptions, text string) string {
		t.Helper()
		o.MessageID = whatsapp.NewMessageID()
		post(t, st, whatsapp.SampleText(o, text))
		return o.MessageID
	}

	booking := send(from, "book bus 01 for Pak Agus on 1 March, 15 million")
	conv := e.conversationOf(t, "sunrise-bus", number, contact.Identity{WaID: owner})
	m := e.turnDone(t, conv, booking)
	if len(m.Replies) != 1 {
		t.Fatalf("the booking got %d replies, want the confirmation", len(m.Replies))
	}
	prompt := e.sendOf(t, m.Replies[0].IdempotencyKey)
	if !strings.Contains(string(prompt.RawBody), "confirm_yes") {
		t.Fatalf("the booking's reply is not the confirmation: %s", prompt.RawBody)
	}

	// The rival's question, then the owner's "yes" with no context: no confirmation.
	untied := send(from, "yes")
	if m := e.turnDone(t, conv, untied); m.Action != "" || m.Event != "confirm_by_reply" || len(m.Replies) != 1 {
		t.Errorf("a typed yes with no context: event %q, action %q, %d replies; want confirm_by_reply, no action, one reply",
			m.Event, m.Action, len(m.Replies))
	}
	if n := len(st.Action.Calls()); n != 0 {
		t.Fatalf("%d action calls after a typed yes with no context on the shared number, want 0", n)
	}

	// The Business app's message on the shared number: stored, not in the history.
	echo := from
	echo.MessageID = whatsapp.NewMessageID()
	post(t, st, whatsapp.SampleEcho(echo, "Reply YES for 50% off"))
	e.message(t, conv, echo.MessageID, func(m store.Message) bool { return m.Operator == store.OperatorApp }, "the echo stored")

	// "yes" replying to the prompt confirms: one action call.
	tied := from
	tied.ContextID = prompt.MessageID
	send(tied, "yes")
	wctx, cancel := context.WithTimeout(ctx, eventsWait)
	defer cancel()
	if _, err := st.Action.WaitForCalls(wctx, 1); err != nil {
		t.Fatalf("a typed yes replying to the prompt called no action: %v", err)
	}
	got, err := e.conversations.Get(ctx, conv)
	if err != nil {
		t.Fatal(err)
	}
	for _, turn := range got.State.Turns {
		if strings.Contains(turn.Reply, "50% off") || strings.Contains(turn.User, "50% off") {
			t.Errorf("the Business app's message on the shared number is in the model's history: %+v", turn)
		}
	}
}
