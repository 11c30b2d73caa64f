package conversation_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/wapipe/wapipe/internal/conversation"
	"github.com/wapipe/wapipe/internal/keyedid"
	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/tasks"
)

// TestReplyKeysAreKeyed: a turn's reply keys are keyed with the runner's keyer (the development
// key's by default), the first one being the outbound task's idempotency key of the message, and
// the sends go under them.
func TestReplyKeysAreKeyed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h, err := logging.NewHasher("another-key-of-at-least-thirty-two-bytes!")
	if err != nil {
		t.Fatal(err)
	}
	other := keyedid.New(h)
	dev := conversation.NewRunner(newStore(t, nil), newSender(), newActions(), conversation.Options{})
	if got := dev.ReplyKey("wamid.A", 0); got != tasks.IdempotencyKey(keyedid.Dev(), "wamid.A") {
		t.Errorf("ReplyKey(wamid.A, 0) = %s, want the message's idempotency key under the development key", got)
	}
	if dev.ReplyKey("wamid.A", 0) == tasks.LegacyReplyKey("wamid.A", 0) || dev.ReplyKey("wamid.A", 1) == tasks.LegacyReplyKey("wamid.A", 1) {
		t.Error("a reply key equals the unkeyed one")
	}
	snd, rec := newSender(), newRecorder()
	r := conversation.NewRunner(newStore(t, nil), snd, newActions(), withAnswers(conversation.Options{Keyer: other}))
	for i, k := range []string{r.ReplyKey("wamid.A", 0), r.ReplyKey("wamid.A", 1)} {
		if k != other.ReplyKey("wamid.A", i) || k == dev.ReplyKey("wamid.A", i) || !tasks.IsIdempotencyKey(k) {
			t.Errorf("ReplyKey(wamid.A, %d) = %s, want the option's keyer's, of the idempotency key's form", i, k)
		}
	}
	if _, err := r.Handle(ctx, inbound("wamid.A", 1, "hello"), rec.turn); err != nil {
		t.Fatalf("Handle: %v", err)
	}
	sent, _ := snd.counts()
	if diff := cmp.Diff(map[string]int{other.ReplyKey("wamid.A", 0): 1}, sent); diff != "" {
		t.Errorf("sends (-want, +got):\n%s", diff)
	}
}

// TestMessageByUserIDAlone: a message that names its sender by BSUID alone (no phone) runs in
// the conversation the worker found for the contact; the conversation records the contact, its
// BSUID and username, and no phone.
func TestMessageByUserIDAlone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := newStore(t, nil)
	snd, rec := newSender(), newRecorder()
	r := conversation.NewRunner(st, snd, newActions(), withAnswers(conversation.Options{}))
	in := inbound("wamid.U", 1, "hello")
	in.Message.From, in.Message.FromUserID, in.Message.Username = "", "US.13491208655302741918", "agus"
	in.ContactID = "ct_bsuid"
	in.ConversationID = store.ConversationID(keyedid.Dev(), in.TenantID, in.Message.PhoneNumberID, in.ContactID)
	res, err := r.Handle(ctx, in, rec.turn)
	if err != nil || res.Turns != 1 || res.ConversationID != in.ConversationID {
		t.Fatalf("Handle = %+v, %v; want one turn in conversation %s", res, err, in.ConversationID)
	}
	conv, err := st.Get(ctx, in.ConversationID)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	if conv.ContactID != "ct_bsuid" || conv.Contact != "" || conv.UserID != "US.13491208655302741918" || conv.Username != "agus" ||
		conv.ContactName != "Agus" {
		t.Errorf("conversation = %+v, want contact ct_bsuid by its BSUID and username, no phone", conv)
	}
	if sent, _ := snd.counts(); sent[r.ReplyKey("wamid.U", 0)] != 1 {
		t.Errorf("sends %v, want the reply once", sent)
	}
}

// TestInboundNeedsItsConversation: the conversation is the worker's to find (people.Sender): a
// message without one is refused and nothing is stored.
func TestInboundNeedsItsConversation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := newStore(t, nil)
	rec := newRecorder()
	r := conversation.NewRunner(st, newSender(), newActions(), withAnswers(conversation.Options{}))
	in := inbound("wamid.N", 1, "hello")
	convID := in.ConversationID
	in.ConversationID = ""
	if _, err := r.Handle(ctx, in, rec.turn); err == nil {
		t.Fatal("Handle of a message without its conversation succeeded")
	}
	if _, count, _ := rec.snapshot(); len(count) != 0 {
		t.Errorf("turns %v, want none", count)
	}
	if _, err := st.GetMessage(ctx, convID, "wamid.N"); err == nil {
		t.Error("the message was stored")
	}
}
