package store_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wapipe/wapipe/internal/keyedid"
	"github.com/wapipe/wapipe/internal/store"
)

// seedInbox stores conversations of two tenants through the worker's own calls (Acquire creates
// a conversation, AddInbound and AddOutbound store its messages), one minute apart.
func seedInbox(t *testing.T, s *store.ConversationStore, clk *clock) {
	t.Helper()
	ctx := context.Background()
	for i, c := range []struct{ tenant, contact, name, text string }{
		{"acme", "6281230000001", "Pak Agus", "Book bus 7 for tomorrow"},
		{"acme", "6281230000002", "Bu Sari", "Where is my bus?"},
		{"acme", "6281230000003", "agustina", "Booking for Friday"},
		{"other", "6281230000004", "Pak Agus", "Book bus 9"},
	} {
		clk.Add(time.Minute)
		id := store.ConversationID(keyedid.Dev(), c.tenant, "pn1", c.contact)
		conv, _, err := s.Acquire(ctx, id, "seed", time.Minute, &store.Touch{TenantID: c.tenant, PhoneNumberID: "pn1",
			Contact: c.contact, ContactName: c.name, InboundAt: clk.Now()})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Release(ctx, id, conv.Lease); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.AddInbound(ctx, id, store.Message{MessageID: "wamid.seed" + string(rune('a'+i)), Type: "text", Text: c.text,
			Timestamp: clk.Now().Unix()}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.AddOutbound(ctx, store.ConversationID(keyedid.Dev(), "acme", "pn1", "6281230000002"), store.Message{MessageID: "console-x",
		Type: "text", Text: "Book a call with us", Operator: "op@example.com"}); err != nil {
		t.Fatal(err)
	}
}

func conversationIDs(cs []store.Conversation) []string {
	var ids []string
	for _, c := range cs {
		ids = append(ids, c.ID)
	}
	return ids
}

func TestInboxViews(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, clk := newConversations(t)
	seedInbox(t, s, clk)
	agus, sari, agustina := store.ConversationID(keyedid.Dev(), "acme", "pn1", "6281230000001"), store.ConversationID(keyedid.Dev(), "acme", "pn1", "6281230000002"),
		store.ConversationID(keyedid.Dev(), "acme", "pn1", "6281230000003")
	other := store.ConversationID(keyedid.Dev(), "other", "pn1", "6281230000004")
	if err := s.AssignConversation(ctx, sari, "op@example.com"); err != nil {
		t.Fatal(err)
	}

	t.Run("ListInbox filters by assignee, newest first", func(t *testing.T) {
		all, err := s.ListInbox(ctx, store.InboxQuery{TenantID: "acme", Status: store.ConversationOpen})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{agustina, sari, agus}, conversationIDs(all.Conversations)); diff != "" {
			t.Errorf("open conversations (-want, +got):\n%s", diff)
		}
		mine, err := s.ListInbox(ctx, store.InboxQuery{TenantID: "acme", Status: store.ConversationOpen, AssignedTo: "op@example.com"})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{sari}, conversationIDs(mine.Conversations)); diff != "" {
			t.Errorf("assigned to op (-want, +got):\n%s", diff)
		}
		page, err := s.ListInbox(ctx, store.InboxQuery{TenantID: "acme", Limit: 2})
		if err != nil || page.Next == "" {
			t.Fatalf("first page of 2: next %q, %v", page.Next, err)
		}
		rest, err := s.ListInbox(ctx, store.InboxQuery{TenantID: "acme", Limit: 2, After: page.Next})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{agus}, conversationIDs(rest.Conversations)); diff != "" {
			t.Errorf("second page (-want, +got):\n%s", diff)
		}
	})

	t.Run("GetConversations reads the ids that exist", func(t *testing.T) {
		got, err := s.GetConversations(ctx, []string{agus, "conv_nope", "", "a/b", other})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{agus, other}, conversationIDs(got)); diff != "" {
			t.Errorf("(-want, +got):\n%s", diff)
		}
	})

	t.Run("ConversationsByNamePrefix keeps to the tenant and the case", func(t *testing.T) {
		got, err := s.ConversationsByNamePrefix(ctx, "acme", "Pak", 10)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{agus}, conversationIDs(got)); diff != "" {
			t.Errorf("Pak (-want, +got):\n%s", diff)
		}
		got, err = s.ConversationsByNamePrefix(ctx, "acme", "agus", 10)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{agustina}, conversationIDs(got)); diff != "" {
			t.Errorf("agus (-want, +got):\n%s", diff)
		}
	})

	t.Run("ConversationIDsByTextPrefix finds inbound and outbound text of every tenant", func(t *testing.T) {
		got, err := s.ConversationIDsByTextPrefix(ctx, "Book", 50)
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(got)
		want := []string{agus, sari, agustina, other} // "Booking for Friday" begins with "Book" too
		slices.Sort(want)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("Book (-want, +got):\n%s", diff)
		}
		got, err = s.ConversationIDsByTextPrefix(ctx, "Nothing like it", 50)
		if err != nil || len(got) != 0 {
			t.Errorf("no match = %v, %v", got, err)
		}
	})

	t.Run("the operator of a reply is stored", func(t *testing.T) {
		m, err := s.GetMessage(ctx, sari, "console-x")
		if err != nil || m.Operator != "op@example.com" {
			t.Errorf("stored reply operator %q, %v", m.Operator, err)
		}
	})
}
