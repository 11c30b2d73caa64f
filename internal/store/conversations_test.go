package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wapipe/wapipe/internal/keyedid"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/testenv"
	"github.com/wapipe/wapipe/internal/turnstate"
)

func newConversations(t *testing.T) (*store.ConversationStore, *clock) {
	t.Helper()
	db, _ := testenv.Store(t)
	clk := &clock{now: time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)}
	return store.NewConversationStore(db, store.Options{Now: clk.Now}), clk
}

func TestConversationIDHidesTheContact(t *testing.T) {
	t.Parallel()
	k := keyedid.Dev()
	id := store.ConversationID(k, "acme-bus", "106540352242922", "ct_1")
	if strings.Contains(id, "ct_1") || id == store.ConversationID(k, "acme-bus", "106540352242922", "ct_2") {
		t.Errorf("ConversationID = %q: want a keyed hash, distinct per contact", id)
	}
	if id != store.ConversationID(keyedid.Dev(), "acme-bus", "106540352242922", "ct_1") {
		t.Error("ConversationID is not stable")
	}
	if id == store.LegacyConversationID("acme-bus", "106540352242922", "ct_1") {
		t.Error("ConversationID is the unkeyed hash")
	}
}

func TestAddInboundIsIdempotent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, clk := newConversations(t)
	m := store.Message{MessageID: "wamid.A/b+c=", Type: "text", Text: "hello", Timestamp: 1800000000, Payload: "{}"}
	created, _, err := s.AddInbound(ctx, "conv_1", m)
	if err != nil || !created {
		t.Fatalf("first AddInbound = %v, %v; want created", created, err)
	}
	clk.Add(time.Minute)
	m.Text = "changed"
	created, stored, err := s.AddInbound(ctx, "conv_1", m)
	if err != nil || created {
		t.Fatalf("second AddInbound = %v, %v; want not created", created, err)
	}
	if stored.Text != "hello" || stored.Turn != store.TurnPending || !stored.InInbox || stored.Direction != store.DirectionIn {
		t.Errorf("stored message = %+v, want the first one, pending in the inbox", stored)
	}
	want := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC).Add(store.DefaultConversationRetention)
	if !stored.ExpireAt.Equal(want) || stored.ArrivedAt.IsZero() {
		t.Errorf("expire_at = %v, arrived_at = %v; want %v and the server's time", stored.ExpireAt, stored.ArrivedAt, want)
	}
}

func TestLeaseAndFencing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, clk := newConversations(t)
	const id = "conv_1"
	touch := &store.Touch{TenantID: "acme-bus", PhoneNumberID: "1065", Contact: "628123", ContactName: "Agus",
		InboundAt: time.Unix(1800000010, 0)}
	if _, _, err := s.AddInbound(ctx, id, store.Message{MessageID: "wamid.1", Timestamp: 1800000010}); err != nil {
		t.Fatalf("AddInbound: %v", err)
	}

	a, taken, err := s.Acquire(ctx, id, "A", time.Minute, touch)
	if err != nil || !taken || a.Lease.Fence != 1 {
		t.Fatalf("Acquire A = %+v, %v, %v; want taken with fence 1", a.Lease, taken, err)
	}
	if _, taken, err := s.Acquire(ctx, id, "B", time.Minute, touch); err != nil || taken {
		t.Fatalf("Acquire B while A holds = %v, %v; want not taken", taken, err)
	}
	clk.Add(time.Minute)
	b, taken, err := s.Acquire(ctx, id, "B", time.Minute, touch)
	if err != nil || !taken || b.Lease.Fence != 2 {
		t.Fatalf("Acquire B after A's lease = %+v, %v, %v; want taken with fence 2", b.Lease, taken, err)
	}

	commit := store.TurnCommit{Touch: touch, State: turnstate.State{Turns: []turnstate.Turn{{MessageID: "wamid.1"}}},
		Replies: []store.Reply{{Index: 0, IdempotencyKey: "reply-x", Payload: "{}"}}}
	if _, err := s.CommitTurn(ctx, id, a.Lease, "wamid.1", commit, time.Minute); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("stale holder's CommitTurn = %v, want ErrLeaseLost", err)
	}
	if err := s.Release(ctx, id, a.Lease); err != nil {
		t.Fatalf("stale holder's Release: %v", err)
	}
	if conv, _ := s.Get(ctx, id); conv.Lease.Holder != "B" {
		t.Fatalf("after the stale release the lease is %+v, want still B's", conv.Lease)
	}
	conv, err := s.CommitTurn(ctx, id, b.Lease, "wamid.1", commit, time.Minute)
	if err != nil {
		t.Fatalf("holder's CommitTurn: %v", err)
	}
	if !conv.LastInboundAt.Equal(time.Unix(1800000010, 0)) || conv.ContactName != "Agus" || conv.Status != store.ConversationOpen {
		t.Errorf("conversation after the commit = %+v, want the message's touch", conv)
	}
	m, err := s.GetMessage(ctx, id, "wamid.1")
	if err != nil {
		t.Fatalf("GetMessage: %v", err)
	}
	if m.Turn != store.TurnDone || !m.InInbox || m.Fence != 2 {
		t.Errorf("committed message = %+v, want done, still in the inbox (a reply to send), fence 2", m)
	}
	if err := s.MarkEffectsDone(ctx, id, "wamid.1", []store.Reply{{Index: 0, IdempotencyKey: "reply-x", GraphMessageID: "wamid.out"}}); err != nil {
		t.Fatalf("MarkEffectsDone: %v", err)
	}
	if _, ok, err := s.NextInbox(ctx, id, ""); err != nil || ok {
		t.Errorf("NextInbox after the effects = %v, %v; want empty", ok, err)
	}
	if err := s.Release(ctx, id, b.Lease); err != nil {
		t.Fatalf("Release: %v", err)
	}
	c, taken, err := s.Acquire(ctx, id, "C", time.Minute, nil)
	if err != nil || !taken || c.Lease.Fence != 3 {
		t.Errorf("Acquire after a release = %+v, %v, %v; want taken at once with fence 3", c.Lease, taken, err)
	}
}

func TestLastInboundAtKeepsTheLatest(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := newConversations(t)
	const id = "conv_1"
	lease := store.Lease{}
	for i, ts := range []int64{1800000020, 1800000010} {
		mid := []string{"wamid.late", "wamid.early"}[i]
		if _, _, err := s.AddInbound(ctx, id, store.Message{MessageID: mid, Timestamp: ts}); err != nil {
			t.Fatalf("AddInbound: %v", err)
		}
		touch := &store.Touch{TenantID: "t", InboundAt: time.Unix(ts, 0)}
		conv, taken, err := s.Acquire(ctx, id, mid, time.Minute, touch)
		if err != nil || !taken {
			t.Fatalf("Acquire = %v, %v", taken, err)
		}
		lease = conv.Lease
		if _, err := s.CommitTurn(ctx, id, lease, mid, store.TurnCommit{Touch: touch}, time.Minute); err != nil {
			t.Fatalf("CommitTurn: %v", err)
		}
		if err := s.Release(ctx, id, lease); err != nil {
			t.Fatalf("Release: %v", err)
		}
	}
	conv, err := s.Get(ctx, id)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	if !conv.LastInboundAt.Equal(time.Unix(1800000020, 0)) {
		t.Errorf("last_inbound_at = %v, want the later message's, whatever the arrival order", conv.LastInboundAt)
	}
}

func TestNextInboxOrder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := newConversations(t)
	const id = "conv_1"
	at := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	add := func(mid string, ts int64, received time.Time) {
		if _, _, err := s.AddInbound(ctx, id, store.Message{MessageID: mid, Timestamp: ts, ReceivedAt: received}); err != nil {
			t.Fatalf("AddInbound: %v", err)
		}
	}
	add("wamid.c", 1800000002, at)
	add("wamid.b", 1800000001, at.Add(2*time.Second))
	add("wamid.a", 1800000001, at.Add(time.Second)) // same second as b, received first
	add("wamid.d", 1800000003, at)
	conv, _, err := s.Acquire(ctx, id, "H", time.Minute, &store.Touch{TenantID: "t"})
	if err != nil {
		t.Fatalf("Acquire: %v", err)
	}
	// d's turn is done with a reply unsent: it comes first, before older pending messages.
	if _, err := s.CommitTurn(ctx, id, conv.Lease, "wamid.d", store.TurnCommit{Replies: []store.Reply{{IdempotencyKey: "k"}}}, time.Minute); err != nil {
		t.Fatalf("CommitTurn: %v", err)
	}
	var got []string
	skip := ""
	for range 4 {
		m, ok, err := s.NextInbox(ctx, id, skip)
		if err != nil || !ok {
			t.Fatalf("NextInbox = %v, %v", ok, err)
		}
		got = append(got, m.MessageID)
		if m.Turn == store.TurnDone {
			skip = m.MessageID // its effects are being performed
			continue
		}
		if _, err := s.CommitTurn(ctx, id, conv.Lease, m.MessageID, store.TurnCommit{}, time.Minute); err != nil {
			t.Fatalf("CommitTurn: %v", err)
		}
	}
	if diff := cmp.Diff([]string{"wamid.d", "wamid.a", "wamid.b", "wamid.c"}, got); diff != "" {
		t.Errorf("inbox order (-want, +got):\n%s", diff)
	}
}
