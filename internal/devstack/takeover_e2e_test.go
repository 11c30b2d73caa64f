package devstack_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/wapipe/wapipe/internal/contact"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/testenv"
	"github.com/wapipe/wapipe/internal/whatsapp"
)

// TestTakeoverByAHuman runs the takeover through the real webhook, the Cloud Tasks emulator and
// the worker: after a message from the WhatsApp Business app to a contact, the assistant stays
// silent in that conversation (the contact's next message is stored, unanswered, and the turn
// says human_holds) and not in another contact's; handed back (as the console's button does),
// it answers again. An operator's takeover (the console's reply records one) silences it the
// same way.
func TestTakeoverByAHuman(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const held, other = "6281300000001", "6281300000002"
	file := fmt.Sprintf("id: acme-bus\nname: Acme Bus\nlanguage: en\naudience: public\nphone_numbers:\n"+
		"  - {phone_number_id: %q, waba_id: \"400000000000001\"}\nassistant: {mode: ack, ack_text: \"acme heard you\", human_pause: 1h}\n", isoNumberA)
	e := startEventsStackWith(t, []byte(file))
	seq := 0
	say := func(from, text string) string {
		t.Helper()
		seq++
		id := fmt.Sprintf("wamid.takeover-%d", seq)
		post(t, e.st, whatsapp.SampleText(whatsapp.SampleOptions{PhoneNumberID: isoNumberA, From: from, MessageID: id}, text))
		return id
	}
	answered := func(from string, n int) {
		t.Helper()
		testenv.Eventually(t, eventsWait, func() bool { return len(sendsTo(e.st.Graph, from)) >= n }, "%s got fewer than %d answers", from, n)
	}
	say(held, "halo")
	answered(held, 1)
	say(other, "halo")
	answered(other, 1)
	// The business answers from its WhatsApp Business app.
	post(t, e.st, whatsapp.SampleEcho(whatsapp.SampleOptions{PhoneNumberID: isoNumberA, From: held, MessageID: "wamid.app-1"}, "Siap, kami cek"))
	conversations := store.NewConversationStore(e.db, store.Options{})
	var convID string
	testenv.Eventually(t, eventsWait, func() bool {
		id, _, err := conversations.ConversationOf(ctx, "acme-bus", isoNumberA, contact.Identity{WaID: held})
		if err != nil || id == "" {
			return false
		}
		c, err := conversations.Get(ctx, id)
		convID = id
		return err == nil && !c.HumanAt.IsZero() && c.HumanBy == store.HumanByApp
	}, "the app's message did not take the conversation over")
	heldMsg := say(held, "masih ada?")
	say(other, "and me?")
	answered(other, 2)
	testenv.Eventually(t, eventsWait, func() bool {
		m, err := conversations.GetMessage(ctx, convID, heldMsg)
		return err == nil && m.Event == "human_holds"
	}, "the held conversation's message was not stored as held")
	e.idle(t)
	if n := len(sendsTo(e.st.Graph, held)); n != 1 {
		t.Errorf("the held contact got %d answers, want only the first", n)
	}
	// Handed back: the assistant answers again.
	if err := conversations.HandBack(ctx, convID, "ops@example.com"); err != nil {
		t.Fatal(err)
	}
	say(held, "halo lagi")
	answered(held, 2)
	// An operator's reply from the console takes it over the same way.
	if err := conversations.TakeOver(ctx, convID, "ops@example.com", time.Now()); err != nil {
		t.Fatal(err)
	}
	say(held, "satu lagi")
	e.idle(t)
	if n := len(sendsTo(e.st.Graph, held)); n != 2 {
		t.Errorf("after the operator's takeover the contact got %d answers, want still 2", n)
	}
}
