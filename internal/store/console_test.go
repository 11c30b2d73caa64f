package store_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/testenv"
	"github.com/wapipe/wapipe/internal/turnstate"
)

func TestAuditBeginsOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, _ := testenv.Store(t)
	a := store.NewAudit(db, store.Options{})
	id := "req_0123456789abcdef"

	// Concurrent submits of one form: exactly one is created.
	var mu sync.Mutex
	created := 0
	var wg sync.WaitGroup
	for range 5 {
		wg.Go(func() {
			ok, _, err := a.Begin(ctx, store.AuditEntry{ID: id, Operator: "alice@example.com", Action: "reply", Target: "conv_1"})
			if err != nil {
				t.Errorf("Begin: %v", err)
			}
			if ok {
				mu.Lock()
				created++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if created != 1 {
		t.Fatalf("created %d entries, want 1", created)
	}
	if err := a.Finish(ctx, id, store.AuditDone, "sent", ""); err != nil {
		t.Fatalf("Finish: %v", err)
	}
	ok, stored, err := a.Begin(ctx, store.AuditEntry{ID: id, Operator: "mallory", Action: "close"})
	if err != nil || ok {
		t.Fatalf("Begin again = %v, %v; want not created", ok, err)
	}
	if stored.Operator != "alice@example.com" || stored.Action != "reply" || stored.State != store.AuditDone || stored.Result != "sent" {
		t.Errorf("stored entry = %+v", stored)
	}
	recent, err := a.Recent(ctx, 10)
	if err != nil || len(recent) != 1 || recent[0].ID != id {
		t.Errorf("Recent = %+v, %v", recent, err)
	}
	if _, _, err := a.Begin(ctx, store.AuditEntry{ID: "short"}); !errors.Is(err, store.ErrBadRequestID) {
		t.Errorf("Begin with a bad id: %v, want ErrBadRequestID", err)
	}
}

func TestListConversationsPages(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, clk := newConversations(t)
	for i := range 7 {
		id := fmt.Sprintf("conv_%d", i)
		touch := &store.Touch{TenantID: "acme", PhoneNumberID: "1", Contact: fmt.Sprint(6280000 + i)}
		if i == 3 {
			touch.TenantID = "other"
		}
		if _, _, err := s.Acquire(ctx, id, "h", time.Minute, touch); err != nil {
			t.Fatalf("Acquire: %v", err)
		}
		if i%2 == 0 {
			clk.Add(time.Second) // some share a last_message_at: the id breaks the tie
		}
	}
	if err := s.CloseConversation(ctx, "conv_1"); err != nil {
		t.Fatalf("CloseConversation: %v", err)
	}
	if err := s.AssignConversation(ctx, "conv_2", "alice@example.com"); err != nil {
		t.Fatalf("AssignConversation: %v", err)
	}

	var got []string
	after := ""
	for pages := 0; ; pages++ {
		p, err := s.ListInbox(ctx, store.InboxQuery{TenantID: "acme", Limit: 4, After: after})
		if err != nil {
			t.Fatalf("ListInbox: %v", err)
		}
		for _, c := range p.Conversations {
			got = append(got, c.ID)
		}
		if p.Next == "" {
			break
		}
		if pages > 3 {
			t.Fatal("too many pages")
		}
		after = p.Next
	}
	// Newest first; conversations of the same second by id, descending. conv_3 is another tenant's.
	if diff := cmp.Diff([]string{"conv_6", "conv_5", "conv_4", "conv_2", "conv_1", "conv_0"}, got); diff != "" {
		t.Errorf("all pages (-want, +got):\n%s", diff)
	}
	closed, err := s.ListInbox(ctx, store.InboxQuery{TenantID: "acme", Status: store.ConversationClosed})
	if err != nil || len(closed.Conversations) != 1 || closed.Conversations[0].ID != "conv_1" {
		t.Errorf("closed = %+v, %v; want conv_1", closed, err)
	}

	// A turn committed afterwards keeps the assignee (CommitTurn writes the whole document).
	conv, ok, err := s.Acquire(ctx, "conv_2", "h2", time.Minute, nil)
	if err != nil {
		t.Fatalf("Acquire: %v", err)
	}
	if !ok {
		clk.Add(2 * time.Minute)
		if conv, _, err = s.Acquire(ctx, "conv_2", "h2", time.Minute, nil); err != nil {
			t.Fatalf("Acquire: %v", err)
		}
	}
	if _, _, err := s.AddInbound(ctx, "conv_2", store.Message{MessageID: "wamid.x", Timestamp: 1}); err != nil {
		t.Fatalf("AddInbound: %v", err)
	}
	if _, err := s.CommitTurn(ctx, "conv_2", conv.Lease, "wamid.x", store.TurnCommit{State: turnstate.State{}}, time.Minute); err != nil {
		t.Fatalf("CommitTurn: %v", err)
	}
	if c, err := s.Get(ctx, "conv_2"); err != nil || c.AssignedTo != "alice@example.com" {
		t.Errorf("after a turn: assigned_to = %q, %v", c.AssignedTo, err)
	}

	for i := range 5 {
		if _, _, err := s.AddInbound(ctx, "conv_2", store.Message{MessageID: fmt.Sprintf("wamid.m%d", i), Timestamp: int64(10 + i)}); err != nil {
			t.Fatal(err)
		}
	}
	latest, err := s.ListLatestMessages(ctx, "conv_2", 3)
	var ids []string
	for _, m := range latest {
		ids = append(ids, m.MessageID)
	}
	if diff := cmp.Diff([]string{"wamid.m2", "wamid.m3", "wamid.m4"}, ids); err != nil || diff != "" {
		t.Errorf("ListLatestMessages: %v (-want, +got):\n%s", err, diff)
	}

	if _, err := s.ListInbox(ctx, store.InboxQuery{TenantID: "acme", After: "!!"}); !errors.Is(err, store.ErrBadPageToken) {
		t.Errorf("bad token: %v", err)
	}
	if err := s.CloseConversation(ctx, "conv_nope"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("close a missing conversation: %v", err)
	}
}

func TestPageDeadLettersAndSends(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, _ := testenv.Store(t)
	clk := &clock{now: time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)}
	dls := store.NewDeadLetters(db, store.Options{Now: clk.Now})
	for i := range 5 {
		if _, err := dls.PutDeadLetter(ctx, store.DeadLetter{ID: fmt.Sprintf("dl%d", i), Path: "/internal/process_outbound"}); err != nil {
			t.Fatalf("PutDeadLetter: %v", err)
		}
		clk.Add(time.Minute)
	}
	if err := dls.MarkReplayed(ctx, "dl4"); err != nil {
		t.Fatal(err)
	}
	p1, err := dls.ListDeadLetterPage(ctx, store.DeadLetterQuery{OnlyPending: true, Limit: 3})
	if err != nil || p1.Next == "" {
		t.Fatalf("first page: %+v, %v", p1, err)
	}
	p2, err := dls.ListDeadLetterPage(ctx, store.DeadLetterQuery{OnlyPending: true, Limit: 3, After: p1.Next})
	if err != nil || p2.Next != "" {
		t.Fatalf("second page: %+v, %v", p2, err)
	}
	var got []string
	for _, d := range append(p1.DeadLetters, p2.DeadLetters...) {
		got = append(got, d.ID)
	}
	if diff := cmp.Diff([]string{"dl3", "dl2", "dl1", "dl0"}, got); diff != "" {
		t.Errorf("pending dead letters (-want, +got):\n%s", diff)
	}

	out := store.NewOutbound(db, store.Options{Now: clk.Now})
	for i, k := range []string{"k1", "k2"} {
		if _, _, err := out.BeginSend(ctx, store.OutboundRecord{IdempotencyKey: k, ReceivedAt: clk.Now()}); err != nil {
			t.Fatal(err)
		}
		clk.Add(time.Duration(i+1) * time.Second)
		if _, err := out.MarkSent(ctx, k, "wamid.out"+k, false); err != nil {
			t.Fatal(err)
		}
	}
	pts, err := out.SentSince(ctx, clk.Now().Add(-time.Hour), 100)
	if err != nil || len(pts) != 2 || pts[0].LatencyMS != 1000 || pts[1].LatencyMS != 2000 {
		t.Errorf("SentSince = %+v, %v", pts, err)
	}
	recs, err := out.GetOutbounds(ctx, []string{"k1", "missing", "k2"})
	if err != nil || len(recs) != 2 || recs["k2"].State != store.OutboundSent {
		t.Errorf("GetOutbounds = %+v, %v", recs, err)
	}
}
