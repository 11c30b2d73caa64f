package store_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/testenv"
)

type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Add(d time.Duration) { c.mu.Lock(); c.now = c.now.Add(d); c.mu.Unlock() }

// records are the stores these tests use, on one database.
type records struct {
	*store.Outbound
	*store.Statuses
}

func newRecords(t *testing.T) (records, *clock) {
	db, _ := testenv.Store(t)
	clk := &clock{now: time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)}
	opts := store.Options{ReconcileWindow: time.Minute, Now: clk.Now}
	return records{store.NewOutbound(db, opts), store.NewStatuses(db, opts)}, clk
}

// TestBeginSend walks the decisions that keep a reply from being sent twice.
func TestBeginSend(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r, clk := newRecords(t)
	seed := store.OutboundRecord{IdempotencyKey: "reply-a", ReceivedAt: clk.Now().Add(-time.Second)}
	step := func(name string, want store.Decision, wantAttempts int64) store.OutboundRecord {
		t.Helper()
		dec, rec, err := r.BeginSend(ctx, seed)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if dec != want || rec.Attempts != wantAttempts {
			t.Fatalf("%s: decision %v after %d attempts, want %v after %d", name, dec, rec.Attempts, want, wantAttempts)
		}
		return rec
	}
	if rec := step("new", store.Send, 1); rec.State != store.OutboundSending || !rec.ExpireAt.After(clk.Now()) {
		t.Fatalf("new record %+v", rec)
	}
	step("outcome unknown, inside the window", store.AwaitReconcile, 1)
	clk.Add(61 * time.Second)
	step("outcome unknown, window passed: never resent blindly", store.OutcomeUnknown, 1)
	if err := r.MarkRetry(ctx, "reply-a", true, 130429, "throttled"); err != nil {
		t.Fatal(err)
	}
	step("Meta refused: send again at once", store.Send, 2)
	if _, err := r.MarkSent(ctx, "reply-a", "wamid.out", true); err != nil {
		t.Fatal(err)
	}
	rec := step("sent is never sent again", store.AlreadyDone, 2)
	if rec.LatencyMS != 62000 || rec.LatencyBucket != store.LatencyBucket(62000) || !rec.ReadMarked {
		t.Errorf("sent record %+v", rec)
	}
}

func TestApplyStatus(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tests := []struct {
		name      string
		prepare   func(r records)
		statuses  []string
		wantState string
		wantRank  string
	}{
		{"out of order keeps the highest", func(r records) { r.MarkSent(ctx, "k", "wamid.out", false) },
			[]string{"read", "sent", "delivered"}, store.OutboundSent, store.DeliveryRead},
		{"read without delivered", func(r records) { r.MarkSent(ctx, "k", "wamid.out", false) },
			[]string{"sent", "read"}, store.OutboundSent, store.DeliveryRead},
		{"failed is terminal", func(r records) { r.MarkSent(ctx, "k", "wamid.out", false) },
			[]string{"delivered", "failed", "read"}, store.OutboundSent, store.DeliveryFailed},
		{"reconciles a send of unknown outcome", func(records) {}, []string{"sent"}, store.OutboundSent, store.DeliverySent},
		{"reconciles a record given up as failed", func(r records) { r.MarkFailed(ctx, "k", 0, "retries exhausted") },
			[]string{"delivered"}, store.OutboundSent, store.DeliveryDelivered},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r, _ := newRecords(t)
			if _, _, err := r.BeginSend(ctx, store.OutboundRecord{IdempotencyKey: "k"}); err != nil {
				t.Fatal(err)
			}
			tc.prepare(r)
			for _, st := range tc.statuses {
				if _, err := r.ApplyStatus(ctx, store.StatusUpdate{Key: "k", GraphMessageID: "wamid.out", Status: st}); err != nil {
					t.Fatal(err)
				}
			}
			rec, err := r.GetOutbound(ctx, "k")
			if err != nil {
				t.Fatal(err)
			}
			if rec.State != tc.wantState || rec.DeliveryStatus != tc.wantRank || rec.GraphMessageID != "wamid.out" {
				t.Errorf("record %s/%s/%s, want %s/%s", rec.State, rec.DeliveryStatus, rec.GraphMessageID, tc.wantState, tc.wantRank)
			}
		})
	}
	// Found by the Graph message id when the key is not echoed; unknown messages match nothing.
	r, _ := newRecords(t)
	r.BeginSend(ctx, store.OutboundRecord{IdempotencyKey: "k2"})
	r.MarkSent(ctx, "k2", "wamid.k2", false)
	if res, err := r.ApplyStatus(ctx, store.StatusUpdate{GraphMessageID: "wamid.k2", Status: "delivered"}); err != nil || !res.Matched || res.Key != "k2" {
		t.Errorf("by message id: %+v, %v", res, err)
	}
	if res, err := r.ApplyStatus(ctx, store.StatusUpdate{GraphMessageID: "wamid.other", Status: "delivered"}); err != nil || res.Matched {
		t.Errorf("unknown message: %+v, %v", res, err)
	}
}

func TestRecordStatusOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r, _ := newRecords(t)
	for i, want := range []bool{true, false} {
		fresh, err := r.RecordStatus(ctx, store.StatusRecord{Key: "wamid.x:read", GraphMessageID: "wamid.x", Status: "read"})
		if err != nil || fresh != want {
			t.Fatalf("record %d: fresh=%v err=%v, want %v", i+1, fresh, err, want)
		}
	}
}
