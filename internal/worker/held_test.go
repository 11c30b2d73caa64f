package worker_test

import (
	"context"
	"testing"
	"time"

	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/tasks"
)

// TestLastAttemptWaitsForTheConversationsHolder: a message whose conversation another task holds
// is retried (503 conversation_held) while its holder runs it. The test queues give up after 5
// fast attempts, well before a holder that takes a few seconds; the last attempt must then wait
// for the holder (here one that never drains, so its lease runs out), take the conversation and
// answer the message: one reply, no dead letter.
func TestLastAttemptWaitsForTheConversationsHolder(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{})
	ops := s.ops()
	id := s.applyTenant(ops, tenantFile("held-bus", numberA, "en", "public", "assistant: {mode: ack, ack_text: \"Held got it.\"}\n"), "EAAtoken-held")

	// The conversation exists once its first message is answered.
	s.sendFor(s.say(numberA, contact, "first"))
	s.idle(tasks.TenantQueueID(id))

	// A holder that will never drain: it took the conversation with a lease of a few seconds,
	// longer than the queue's five fast attempts take.
	ctx := context.Background()
	convs := store.NewConversationStore(store.NewDB(s.fs), store.Options{})
	convID := s.mustConversationOf(id, numberA, contact)
	if _, taken, err := convs.Acquire(ctx, convID, "ghost-holder", 4*time.Second, nil); err != nil || !taken {
		t.Fatalf("the ghost holder's acquire: taken %v, %v", taken, err)
	}

	msg := s.say(numberA, contact, "hello")
	r := s.sendFor(msg)
	if textOf(r) != "Held got it." {
		t.Errorf("reply %q, want the tenant's ack", textOf(r))
	}
	s.idle(tasks.TenantQueueID(id))
	if n := len(s.Graph.Sends()); n != 2 {
		t.Errorf("%d sends, want 2 (one per message)", n)
	}
	dls, err := s.records.ListDeadLetters(ctx, true, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(dls) != 0 {
		t.Errorf("%d dead letters, want none: the last attempt waits for the holder", len(dls))
	}
}
