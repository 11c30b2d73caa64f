package store_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/testenv"
)

// TestTransactionRetryResetsState forces a retry of ApplyStatus's transaction: its first attempt
// finds a send of unknown outcome (which a status reconciles), then aborts; before the second,
// the send path records the reply as sent, clearing last_error. The second attempt must decide
// on what it reads: no reconciliation reported, and no stale last_error written back.
func TestTransactionRetryResetsState(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, _ := testenv.Store(t)
	clk := &clock{now: time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)}
	opts := store.Options{Now: clk.Now}
	plain := store.NewOutbound(db, opts)
	if _, _, err := plain.BeginSend(ctx, store.OutboundRecord{IdempotencyKey: "k", PhoneNumberID: "100"}); err != nil {
		t.Fatal(err)
	}
	// A send of unknown outcome: the record stays sending, with the error.
	if err := plain.MarkRetry(ctx, "k", false, 0, "timeout"); err != nil {
		t.Fatal(err)
	}

	var attempts, aborted atomic.Int32
	hooked := store.NewOutbound(db, store.WithTxHooks(opts,
		func(n int) {
			attempts.Store(int32(n))
			if n == 2 {
				if _, err := plain.MarkSent(ctx, "k", "wamid.sent", false); err != nil {
					t.Errorf("concurrent MarkSent: %v", err)
				}
			}
		},
		func(n int) error {
			if n == 1 {
				aborted.Add(1)
				return status.Error(codes.Aborted, "forced retry")
			}
			return nil
		}))

	res, err := hooked.ApplyStatus(ctx, store.StatusUpdate{Key: "k", GraphMessageID: "wamid.sent", Status: store.DeliveryDelivered, PhoneNumberID: "100"})
	if err != nil {
		t.Fatal(err)
	}
	if attempts.Load() != 2 || aborted.Load() != 1 {
		t.Fatalf("%d attempts, %d aborted: the retry was not forced", attempts.Load(), aborted.Load())
	}
	want := store.ApplyResult{Key: "k", Matched: true, Applied: true, Reconciled: false}
	if diff := cmp.Diff(want, res); diff != "" {
		t.Errorf("ApplyStatus result (-want, +got):\n%s", diff)
	}
	rec, err := plain.GetOutbound(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	got := [4]any{rec.State, rec.LastError, rec.Reconciled, rec.DeliveryStatus}
	if diff := cmp.Diff([4]any{store.OutboundSent, "", false, store.DeliveryDelivered}, got); diff != "" {
		t.Errorf("record state, last_error, reconciled, delivery_status (-want, +got):\n%s", diff)
	}
}

// TestBeginSendRetried forces a retry of BeginSend: the first attempt creates the record, aborts,
// and by the second attempt another delivery has already sent the reply. The decision is the
// second attempt's: already done, not send.
func TestBeginSendRetried(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, _ := testenv.Store(t)
	opts := store.Options{}
	plain := store.NewOutbound(db, opts)
	hooked := store.NewOutbound(db, store.WithTxHooks(opts,
		func(n int) {
			if n == 2 {
				if _, _, err := plain.BeginSend(ctx, store.OutboundRecord{IdempotencyKey: "k"}); err != nil {
					t.Errorf("concurrent BeginSend: %v", err)
				}
				if _, err := plain.MarkSent(ctx, "k", "wamid.sent", false); err != nil {
					t.Errorf("concurrent MarkSent: %v", err)
				}
			}
		},
		func(n int) error {
			if n == 1 {
				return status.Error(codes.Aborted, "forced retry")
			}
			return nil
		}))
	dec, rec, err := hooked.BeginSend(ctx, store.OutboundRecord{IdempotencyKey: "k"})
	if err != nil {
		t.Fatal(err)
	}
	if dec != store.AlreadyDone || rec.State != store.OutboundSent || rec.GraphMessageID != "wamid.sent" {
		t.Errorf("decision %v on %s/%s, want already done on the sent record", dec, rec.State, rec.GraphMessageID)
	}
}
