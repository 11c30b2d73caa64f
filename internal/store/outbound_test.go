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
	own := store.StatusUpdate{Key: "k", GraphMessageID: "wamid.out", PhoneNumberID: "100", TenantID: "acme"}
	tests := []struct {
		name      string
		prepare   func(r records)
		update    func(u *store.StatusUpdate)
		statuses  []string
		wantState string
		wantRank  string
		wantWamid string
		mismatch  string
	}{
		{"out of order keeps the highest", func(r records) { r.MarkSent(ctx, "k", "wamid.out", false) }, nil,
			[]string{"read", "sent", "delivered"}, store.OutboundSent, store.DeliveryRead, "wamid.out", ""},
		{"read without delivered", func(r records) { r.MarkSent(ctx, "k", "wamid.out", false) }, nil,
			[]string{"sent", "read"}, store.OutboundSent, store.DeliveryRead, "wamid.out", ""},
		{"failed is terminal", func(r records) { r.MarkSent(ctx, "k", "wamid.out", false) }, nil,
			[]string{"delivered", "failed", "read"}, store.OutboundSent, store.DeliveryFailed, "wamid.out", ""},
		{"reconciles a send of unknown outcome", func(records) {}, nil, []string{"sent"}, store.OutboundSent, store.DeliverySent, "wamid.out", ""},
		{"never reopens a record given up as failed, but learns Meta has it", func(r records) { r.MarkFailed(ctx, "k", 0, "retries_exhausted", "retries exhausted") }, nil,
			[]string{"delivered"}, store.OutboundFailed, store.DeliveryDelivered, "wamid.out", ""},
		{"a failed record from another number learns nothing", func(r records) { r.MarkFailed(ctx, "k", 0, "retries_exhausted", "retries exhausted") },
			func(u *store.StatusUpdate) { u.PhoneNumberID = "999" },
			[]string{"delivered"}, store.OutboundFailed, "", "", store.MismatchNumber},
		{"never settles a pending record without its wamid", func(r records) { r.MarkRetry(ctx, "k", true, 130429, "throttled") }, nil,
			[]string{"sent", "read"}, store.OutboundPending, "", "", store.MismatchNotSent},
		{"another number changes nothing", func(r records) { r.MarkSent(ctx, "k", "wamid.out", false) },
			func(u *store.StatusUpdate) { u.PhoneNumberID = "999" },
			[]string{"failed"}, store.OutboundSent, "", "wamid.out", store.MismatchNumber},
		{"another number does not reconcile", func(records) {}, func(u *store.StatusUpdate) { u.PhoneNumberID = "999" },
			[]string{"sent"}, store.OutboundSending, "", "", store.MismatchNumber},
		{"a number routed to another tenant changes nothing", func(r records) { r.MarkSent(ctx, "k", "wamid.out", false) },
			func(u *store.StatusUpdate) { u.TenantID = "other" },
			[]string{"read"}, store.OutboundSent, "", "wamid.out", store.MismatchTenant},
		{"a shared number listing the record's tenant applies", func(r records) { r.MarkSent(ctx, "k", "wamid.out", false) },
			func(u *store.StatusUpdate) { u.TenantID, u.SharedWith = "aaa-first", []string{"aaa-first", "acme"} },
			[]string{"delivered"}, store.OutboundSent, store.DeliveryDelivered, "wamid.out", ""},
		{"a shared number not listing the record's tenant changes nothing", func(r records) { r.MarkSent(ctx, "k", "wamid.out", false) },
			func(u *store.StatusUpdate) { u.TenantID, u.SharedWith = "aaa-first", []string{"aaa-first", "other"} },
			[]string{"delivered"}, store.OutboundSent, "", "wamid.out", store.MismatchTenant},
		{"another message on a shared number changes nothing", func(r records) { r.MarkSent(ctx, "k", "wamid.out", false) },
			func(u *store.StatusUpdate) {
				u.GraphMessageID, u.SharedWith = "wamid.forged", []string{"acme", "other"}
			},
			[]string{"read"}, store.OutboundSent, "", "wamid.out", store.MismatchMessage},
		{"another message changes nothing", func(r records) { r.MarkSent(ctx, "k", "wamid.out", false) },
			func(u *store.StatusUpdate) { u.GraphMessageID = "wamid.forged" },
			[]string{"read"}, store.OutboundSent, "", "wamid.out", store.MismatchMessage},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r, _ := newRecords(t)
			if _, _, err := r.BeginSend(ctx, store.OutboundRecord{IdempotencyKey: "k", PhoneNumberID: "100", TenantID: "acme"}); err != nil {
				t.Fatal(err)
			}
			tc.prepare(r)
			for _, st := range tc.statuses {
				u := own
				u.Status = st
				if tc.update != nil {
					tc.update(&u)
				}
				res, err := r.ApplyStatus(ctx, u)
				if err != nil {
					t.Fatal(err)
				}
				if res.Mismatch != tc.mismatch || !res.Matched {
					t.Errorf("status %s: mismatch %q (matched %v), want %q", st, res.Mismatch, res.Matched, tc.mismatch)
				}
			}
			rec, err := r.GetOutbound(ctx, "k")
			if err != nil {
				t.Fatal(err)
			}
			if rec.State != tc.wantState || rec.DeliveryStatus != tc.wantRank || rec.GraphMessageID != tc.wantWamid {
				t.Errorf("record %s/%s/%s, want %s/%s/%s", rec.State, rec.DeliveryStatus, rec.GraphMessageID, tc.wantState, tc.wantRank, tc.wantWamid)
			}
		})
	}
	// Found by the Graph message id when the key is not echoed; unknown messages match nothing.
	r, _ := newRecords(t)
	r.BeginSend(ctx, store.OutboundRecord{IdempotencyKey: "k2", PhoneNumberID: "100"})
	r.MarkSent(ctx, "k2", "wamid.k2", false)
	if res, err := r.ApplyStatus(ctx, store.StatusUpdate{GraphMessageID: "wamid.k2", Status: "delivered", PhoneNumberID: "100"}); err != nil || !res.Matched || res.Key != "k2" || !res.Applied {
		t.Errorf("by message id: %+v, %v", res, err)
	}
	if res, err := r.ApplyStatus(ctx, store.StatusUpdate{GraphMessageID: "wamid.other", Status: "delivered", PhoneNumberID: "100"}); err != nil || res.Matched {
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

// TestReopenOnlyWhatMetaNeverAccepted: a replay reopens a record given up as failed, unless a
// status from its own number has since shown that Meta accepted the send (outcome unknown on the
// last attempt, delivered after all): that one stays failed, so the replay sends nothing.
func TestReopenOnlyWhatMetaNeverAccepted(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tc := range []struct {
		name      string
		status    bool
		wantState string
	}{
		{"failed, never accepted: reopened", false, store.OutboundPending},
		{"failed, then delivered: stays failed", true, store.OutboundFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r, _ := newRecords(t)
			if _, _, err := r.BeginSend(ctx, store.OutboundRecord{IdempotencyKey: "k", PhoneNumberID: "100", TenantID: "acme"}); err != nil {
				t.Fatal(err)
			}
			if err := r.MarkFailed(ctx, "k", 0, "outcome_unknown", "outcome unknown"); err != nil {
				t.Fatal(err)
			}
			if tc.status {
				res, err := r.ApplyStatus(ctx, store.StatusUpdate{Key: "k", GraphMessageID: "wamid.late", Status: store.DeliveryDelivered,
					PhoneNumberID: "100", TenantID: "acme"})
				if err != nil || !res.AcceptedAfterFailure {
					t.Fatalf("ApplyStatus = %+v, %v; want accepted after failure", res, err)
				}
			}
			if err := r.ReopenOutbound(ctx, "k"); err != nil {
				t.Fatal(err)
			}
			rec, err := r.GetOutbound(ctx, "k")
			if err != nil || rec.State != tc.wantState {
				t.Errorf("after reopen: %s, %v; want %s", rec.State, err, tc.wantState)
			}
		})
	}
}

// TestFailureReason: a failed record keeps its reason as a code beside the detail, and a send
// that goes out after a replay clears both.
func TestFailureReason(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r, _ := newRecords(t)
	if _, _, err := r.BeginSend(ctx, store.OutboundRecord{IdempotencyKey: "reply-r"}); err != nil {
		t.Fatal(err)
	}
	if err := r.MarkFailed(ctx, "reply-r", 131047, "outside_customer_service_window", "no message in 24 hours"); err != nil {
		t.Fatal(err)
	}
	rec, err := r.GetOutbound(ctx, "reply-r")
	if err != nil || rec.State != store.OutboundFailed || rec.FailureReason != "outside_customer_service_window" ||
		rec.LastError != "no message in 24 hours" || rec.LastErrorCode != 131047 {
		t.Fatalf("failed record %+v (%v)", rec, err)
	}
	if err := r.ReopenOutbound(ctx, "reply-r"); err != nil {
		t.Fatal(err)
	}
	if dec, _, err := r.BeginSend(ctx, store.OutboundRecord{IdempotencyKey: "reply-r"}); err != nil || dec != store.Send {
		t.Fatalf("begin after reopen: %v %v", dec, err)
	}
	rec, err = r.MarkSent(ctx, "reply-r", "wamid.x", false)
	if err != nil || rec.FailureReason != "" || rec.LastError != "" || rec.LastErrorCode != 0 {
		t.Fatalf("sent record %+v (%v), want no failure left", rec, err)
	}
}

// TestStatusEchoingAKeySettlesOnlyItsRecipient is the red team's settle attack: on a shared number
// another sender echoes a record's key (biz_opaque_callback_data) in a send of its own, to someone
// else, while the record's own send has no answer yet (no wamid). Such a status names another
// recipient than the record's: it settles nothing (recipient mismatch) and the record stays
// sending; a status about the record's own recipient reconciles it as before.
func TestStatusEchoingAKeySettlesOnlyItsRecipient(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r, _ := newRecords(t)
	if _, _, err := r.BeginSend(ctx, store.OutboundRecord{IdempotencyKey: "k", PhoneNumberID: "100", TenantID: "acme", ToHash: "ph_own"}); err != nil {
		t.Fatal(err)
	}
	forged := store.StatusUpdate{Key: "k", GraphMessageID: "wamid.forged", Status: "sent", PhoneNumberID: "100", TenantID: "acme",
		RecipientPhone: "6289999", RecipientHashes: []string{"ph_other"}}
	if res, err := r.ApplyStatus(ctx, forged); err != nil || res.Mismatch != store.MismatchRecipient || res.Reconciled {
		t.Fatalf("a status echoing the key for another recipient: %+v, %v; want a recipient mismatch", res, err)
	}
	if rec, err := r.GetOutbound(ctx, "k"); err != nil || rec.State != store.OutboundSending || rec.GraphMessageID != "" {
		t.Fatalf("record after the forged status: %+v, %v; want still sending, no wamid", rec, err)
	}
	own := forged
	own.GraphMessageID, own.RecipientHashes = "wamid.own", []string{"ph_own"}
	if res, err := r.ApplyStatus(ctx, own); err != nil || res.Mismatch != "" || !res.Reconciled {
		t.Fatalf("the record's own status: %+v, %v; want reconciled", res, err)
	}
	if rec, err := r.GetOutbound(ctx, "k"); err != nil || rec.State != store.OutboundSent || rec.GraphMessageID != "wamid.own" {
		t.Errorf("record after its own status: %+v, %v; want sent with its wamid", rec, err)
	}
}
