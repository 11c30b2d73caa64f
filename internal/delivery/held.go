package delivery

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/sweep"
	"github.com/wapipe/wapipe/internal/taskqueue"
	"github.com/wapipe/wapipe/tasks"
)

// HeldRecords lists the records holding a wait for an unknown outcome and those whose task may
// be gone, and reads the evidence; *store.Outbound implements it.
type HeldRecords interface {
	HeldUnknown(ctx context.Context, limit int) ([]store.OutboundRecord, error)
	StrandedSends(ctx context.Context, staleBefore time.Time, limit int) ([]store.OutboundRecord, error)
	StatusSeenAfter(ctx context.Context, phoneNumberID string, since time.Time) (bool, error)
}

// Enqueuer creates tasks; *taskqueue.Client implements it.
type Enqueuer interface {
	Enqueue(ctx context.Context, t taskqueue.Task) (taskqueue.Result, error)
}

// HeldSweep is the sweep's job that ends the waits held on records (Deliverer.hold) and sends
// the records whose task is gone. A held record whose evidence now says Meta never took its
// send, or whose cap has passed, gets a process_send task that sends it from the record
// (resent) or gives it up as a dead letter; the others wait for the next sweep, and a late
// status settles them without any task. A record that keeps its message but has sat sending or
// pending longer than any live task would leave it (its task was killed on its last attempt)
// gets a process_send task too, which sends it, holds it, or gives it up, as its own task would
// have.
type HeldSweep struct {
	Records HeldRecords
	Tasks   Enqueuer
	// ReconcileWindow is the store's (RECONCILE_WINDOW): a record held on a task's last attempt
	// inside it is left until it passes. store.DefaultReconcileWindow when zero.
	ReconcileWindow time.Duration
	// StaleAfter is how long a record sits sending or pending before its task counts as gone:
	// longer than the send queues' longest backoff. 30 minutes when zero.
	StaleAfter time.Duration
	// Limit bounds the records of each kind looked at per sweep; 200 when zero.
	Limit int
}

// Name names the job in the sweep's log line.
func (h *HeldSweep) Name() string { return "held_and_stranded_sends" }

// Sweep looks at the held and stranded records once (sweep.Job): Found is how many it read,
// Done how many got a task.
func (h *HeldSweep) Sweep(ctx context.Context, now time.Time) (sweep.Result, error) {
	done := 0
	limit, window, stale := h.Limit, h.ReconcileWindow, h.StaleAfter
	if limit <= 0 {
		limit = 200
	}
	if window <= 0 {
		window = store.DefaultReconcileWindow
	}
	if stale <= 0 {
		stale = 30 * time.Minute
	}
	held, err := h.Records.HeldUnknown(ctx, limit)
	if err != nil {
		return sweep.Result{}, err
	}
	stranded, err := h.Records.StrandedSends(ctx, now.Add(-stale), limit)
	if err != nil {
		return sweep.Result{}, err
	}
	var errs []error
	count := func(ok bool, err error) {
		if err != nil {
			errs = append(errs, err)
		} else if ok {
			done++
		}
	}
	for _, rec := range held {
		ok, err := h.due(ctx, rec, now, window)
		if err == nil && ok {
			// Named from the send and its scheduled resend: the task that scheduled it (and held
			// it again on its last attempt) does not reserve the name of the one that resends.
			stamp := rec.SendingSince
			if rec.ResendDueAt.After(stamp) {
				stamp = rec.ResendDueAt
			}
			ok, err = h.enqueue(ctx, rec, "held", stamp)
		}
		count(ok, err)
	}
	for _, rec := range stranded {
		since := rec.SendingSince
		if rec.State == store.OutboundPending {
			since = rec.UpdatedAt
		}
		count(h.enqueue(ctx, rec, "stranded", since))
	}
	return sweep.Result{Found: len(held) + len(stranded), Done: done}, errors.Join(errs...)
}

// due reports whether rec's held wait ends now: its cap passed, or the reconcile window (and a
// resend already scheduled, store.Outbound.ResendUnknown) passed and the evidence says Meta never
// took the send.
func (h *HeldSweep) due(ctx context.Context, rec store.OutboundRecord, now time.Time, window time.Duration) (bool, error) {
	switch {
	case rec.State != store.OutboundSending:
		return false, nil
	case !rec.HeldUntil.IsZero() && !now.Before(rec.HeldUntil):
		return true, nil
	case now.Sub(rec.SendingSince) < window, now.Before(rec.ResendDueAt):
		return false, nil
	}
	return h.Records.StatusSeenAfter(ctx, rec.PhoneNumberID, rec.SendingSince)
}

// enqueue creates the process_send task of rec on its tenant's send queue (the outbound queue for
// the single-tenant default), named from the record, why and since, so that sweeps repeated make
// one task. It reports whether the task is new.
func (h *HeldSweep) enqueue(ctx context.Context, rec store.OutboundRecord, why string, since time.Time) (bool, error) {
	task := tasks.SendTask(rec.IdempotencyKey, rec.CorrelationID, rec.TenantID, 0)
	task.ID = tasks.SweptSendTaskID(rec.IdempotencyKey, why, since)
	res, err := h.Tasks.Enqueue(ctx, taskqueue.FromSpec(task))
	if err != nil {
		return false, fmt.Errorf("enqueue the send of a %s record: %w", why, err)
	}
	if !res.Existed {
		logging.FromContext(ctx).InfoContext(ctx, "sending a record from itself: "+why, "event", "outbound_swept",
			"why", why, "idempotency_key", rec.IdempotencyKey, "tenant_id", rec.TenantID, "state", rec.State)
	}
	return !res.Existed, nil
}
