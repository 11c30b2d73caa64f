package delivery

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/tasks"
)

// DefaultMaxUnknownWait is UNKNOWN_OUTCOME_MAX_WAIT's default: how long a send of unknown
// outcome is held on its record, with no status flowing for its number, before it is given up
// as a dead letter. Longer than any task's retries (about 1.3 h), long enough for a Meta outage.
const DefaultMaxUnknownWait = 24 * time.Hour

// Unknowns are the record operations of sends whose outcome is unknown, and of sends given up
// that dead-letter their own record; *store.Outbound implements it. Without them (tests of other
// things) an unknown outcome past the reconcile window is given up at once.
type Unknowns interface {
	MarkUnknown(ctx context.Context, key string, code int, msg string, stash store.Stash) error
	MarkFailedStashed(ctx context.Context, key string, code int, reason, msg string, stash store.Stash) error
	StatusSeenAfter(ctx context.Context, phoneNumberID string, since time.Time) (bool, error)
	ResendUnknown(ctx context.Context, key string, since time.Time, confirm time.Duration) (store.Decision, store.OutboundRecord, error)
	HoldUnknown(ctx context.Context, key string, until time.Time) (bool, error)
}

// DeadLetters keeps the dead letters of records (Policy.RecordDeadLetter); the store's dead
// letters implement it.
type DeadLetters interface {
	PutDeadLetter(ctx context.Context, d store.DeadLetter) (string, error)
}

// DefaultResendConfirm is how long a resend the evidence decided waits, the record writable,
// before it goes (store.Outbound.ResendUnknown), when Deliverer.ResendConfirm is zero.
const DefaultResendConfirm = 15 * time.Second

func (d *Deliverer) resendConfirm() time.Duration {
	if d.ResendConfirm <= 0 {
		return DefaultResendConfirm
	}
	return d.ResendConfirm
}

func (d *Deliverer) maxUnknownWait() time.Duration {
	if d.MaxUnknownWait <= 0 {
		return DefaultMaxUnknownWait
	}
	return d.MaxUnknownWait
}

// unknownOutcome decides about a send whose earlier send's outcome is still unknown past the
// reconcile window. Evidence that Meta never took it (statuses reached later sends from the
// same number) sends it again: ok is true and rec is the record sending anew. Without evidence
// the wait is held on the record until the cap, then the send is given up as a dead letter.
func (d *Deliverer) unknownOutcome(ctx context.Context, req Request, pol Policy, rec store.OutboundRecord) (store.OutboundRecord, Result, bool) {
	if d.Unknowns == nil {
		return rec, d.giveUp(ctx, req, pol, OutcomeUnknown, ReasonOutcomeUnknown, int(rec.LastErrorCode), ErrOutcomeUnknown), false
	}
	seen, err := d.Unknowns.StatusSeenAfter(ctx, rec.PhoneNumberID, rec.SendingSince)
	if err != nil {
		return rec, Result{Status: Retry, Err: err, Class: "temporary"}, false
	}
	if !seen {
		if !d.now().Before(rec.SendingSince.Add(d.maxUnknownWait())) {
			return rec, d.giveUp(ctx, req, pol, OutcomeUnknown, ReasonOutcomeUnknown, int(rec.LastErrorCode), ErrOutcomeUnknown), false
		}
		return rec, d.hold(ctx, req, pol, rec), false
	}
	dec, now, err := d.Unknowns.ResendUnknown(ctx, req.Key, rec.SendingSince, d.resendConfirm())
	switch {
	case err != nil:
		return rec, Result{Status: Retry, Err: err, Class: "temporary"}, false
	case dec == store.AlreadyDone:
		return now, Result{Status: Settled, Record: now}, false
	case dec != store.Send && req.LastAttempt && now.State == store.OutboundSending:
		// The resend is due later and no retry is left: the record holds the wait.
		return now, d.hold(ctx, req, pol, now), false
	case dec != store.Send && now.State == store.OutboundSent:
		// A status settled it meanwhile.
		return now, Result{Status: Settled, Record: now}, false
	case dec != store.Send:
		// The resend is due later (or another attempt resent it first, or a definite failure
		// made it pending): try later.
		return now, Result{Status: Retry, Reason: RetryAwaitingReconciliation}, false
	}
	logging.FromContext(ctx).WarnContext(ctx, "sending again: statuses reached later sends from this number and none reached this one",
		"event", "outbound_unknown_resent", "kind", req.Kind.String(), "sending_since", rec.SendingSince, "resends", now.UnknownResends)
	return now, Result{}, true
}

// hold holds the wait for a send of unknown outcome on its record, for the sweep (HeldSweep) to
// end; the task ends. The record keeps the message (stash) so that the sweep can have it sent
// again from the record alone.
func (d *Deliverer) hold(ctx context.Context, req Request, pol Policy, rec store.OutboundRecord) Result {
	if d.Unknowns == nil {
		// Nothing can hold the wait: give it up, as before records could.
		return d.giveUp(ctx, req, pol, OutcomeUnknown, ReasonOutcomeUnknown, int(rec.LastErrorCode), ErrOutcomeUnknown)
	}
	if rec.Message == "" {
		// The earlier attempt died before it could keep the message: keep it now.
		if err := d.Unknowns.MarkUnknown(ctx, req.Key, int(rec.LastErrorCode), rec.LastError, d.stashOf(ctx, req, nil)); err != nil {
			return Result{Status: Retry, Err: err, Class: "temporary"}
		}
	}
	until := rec.SendingSince.Add(d.maxUnknownWait())
	held, err := d.Unknowns.HoldUnknown(ctx, req.Key, until)
	if err != nil {
		return Result{Status: Retry, Err: err, Class: "temporary"}
	}
	if !held {
		// A status settled it meanwhile: a retry reads what it says; with no retry left, the
		// record says it now (a reply's task would otherwise end as a dead letter for a reply
		// that went out).
		if req.LastAttempt && d.Sends != nil {
			if now, err := d.Sends.GetSend(ctx, req.Key); err == nil && now.State == store.OutboundSent {
				return Result{Status: Settled, Record: now}
			}
		}
		return Result{Status: Retry, Reason: RetryAwaitingReconciliation}
	}
	logging.FromContext(ctx).WarnContext(ctx, "outcome unknown and no status flowing for this number: the wait is held on the record",
		"event", "outbound_outcome_held", "kind", req.Kind.String(), "sending_since", rec.SendingSince, "held_until", until)
	return Result{Status: Held, Reason: ReasonOutcomeUnknown}
}

// giveUp ends a send unsent for good with status and reason: the record is failed and, by the
// policy, dead-letters itself (RecordDeadLetter: the task ends normally) or has the task kept
// as its dead letter (Result.DeadLetter).
func (d *Deliverer) giveUp(ctx context.Context, req Request, pol Policy, status Status, reason string, code int, cause error) Result {
	res := Result{Status: status, Reason: reason, Code: code, Err: cause, Class: reason}
	if !pol.RecordDeadLetter || d.Unknowns == nil || d.DeadLetters == nil {
		if err := d.Records.MarkFailed(ctx, req.Key, code, reason, cause.Error()); err != nil {
			// Without the failed record a retry would try again; let it.
			return Result{Status: Retry, Err: err, Code: code, Class: "temporary"}
		}
		res.DeadLetter = true
		d.logGivenUp(ctx, req, res, "")
		return res
	}
	if err := d.Unknowns.MarkFailedStashed(ctx, req.Key, code, reason, cause.Error(), d.stashOf(ctx, req, nil)); err != nil {
		return Result{Status: Retry, Err: err, Code: code, Class: "temporary"}
	}
	id, err := d.DeadLetters.PutDeadLetter(ctx, recordDeadLetter(req, code, reason, cause))
	if err != nil {
		// The record is failed but no dead letter says so: retry, which dead-letters it again
		// (a replay reopens a failed record).
		return Result{Status: Retry, Err: fmt.Errorf("dead-letter the record: %w", err), Class: "temporary"}
	}
	res.DeadLetterID = id
	d.logGivenUp(ctx, req, res, id)
	return res
}

func (d *Deliverer) logGivenUp(ctx context.Context, req Request, res Result, deadLetterID string) {
	logger := logging.FromContext(ctx)
	if deadLetterID == "" {
		logger.ErrorContext(ctx, "not sent, for good: the task is kept as a dead letter", "event", "outbound_failed",
			"kind", req.Kind.String(), "reason", res.Reason, "meta_error_code", res.Code, "error", res.Err)
		return
	}
	// dead_lettered is the event the dead-letter alert counts (terraform/monitoring.tf).
	logger.ErrorContext(ctx, "not sent, for good: the record is kept as a dead letter (wapipe replay sends it from the record)",
		"event", "dead_lettered", "dead_letter_id", deadLetterID, "kind", req.Kind.String(), "reason", res.Reason,
		"meta_error_code", res.Code, "error", res.Err)
}

// recordDeadLetter is the dead letter of req's own record: a process_send task that sends it
// from the record, on the queue of its tenant (the outbound queue for the single-tenant
// default). Its id is the record's, so giving the same record up twice keeps one.
func recordDeadLetter(req Request, code int, reason string, cause error) store.DeadLetter {
	task := tasks.SendTask(req.Key, req.CorrelationID, req.TenantID, 0)
	return store.DeadLetter{
		ID: store.DocID("record/" + req.Key), Queue: task.Queue, Path: task.Path, Body: string(task.Body),
		LastError: cause.Error(), LastErrorCode: int64(code), Reason: reason, CorrelationID: req.CorrelationID,
		InboundEventID: req.InboundEventID, IdempotencyKey: req.Key,
	}
}

// stashOf is what the record of req keeps to be sent from itself: out when known, else req's
// reply (composed when it has a composer and no reply). A send from its record (a Compose of its
// own record's message) needs none: the record has it.
func (d *Deliverer) stashOf(ctx context.Context, req Request, out *wire) store.Stash {
	if out == nil {
		reply := req.Reply
		if req.Compose != nil && reply.IsZero() {
			var err error
			if reply, err = req.Compose(ctx); err != nil {
				return store.Stash{}
			}
		}
		if reply.IsZero() {
			return store.Stash{}
		}
		o := wire{reply: reply}
		if reply.Quote {
			o.replyTo = req.InboundMessageID
		}
		out = &o
	}
	m := out.message()
	raw, err := json.Marshal(m)
	if err != nil {
		return store.Stash{}
	}
	return store.Stash{Message: string(raw), MessageType: m.Type, To: req.To, Recipient: req.Recipient, ConversationID: req.ConversationID}
}
