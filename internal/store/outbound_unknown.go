package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/api/iterator"
)

// A send whose outcome is unknown (a timeout, a gateway's 5xx without Meta's error body) stays
// sending until a status webhook settles it. Past the reconcile window the evidence decides:
// statuses arrived for later sends from the same number and none for this one means Meta never
// took it, and it is sent again (ResendUnknown); with no status flowing at all the wait is held on
// the record (HoldUnknown) up to a cap, and the sweep looks at it (HeldUnknown). So that the
// sweep can send it again without the task that made it, the record keeps its message
// (MarkUnknown's Stash), as the records of api sends always do.

// Stash is what a record needs to be sent again from itself alone (process_send): the Graph
// message, its recipient and the conversation whose window it goes in. It is written only on a
// record without a message of its own.
type Stash struct {
	Message        string
	MessageType    string
	To             string
	Recipient      string
	ConversationID string
}

func (s Stash) apply(rec *OutboundRecord) {
	if rec.Message != "" || s.Message == "" {
		return
	}
	rec.Message, rec.MessageType = s.Message, s.MessageType
	rec.To, rec.Recipient, rec.ConversationID = s.To, s.Recipient, s.ConversationID
}

// MarkUnknown records a send whose outcome is unknown, as MarkRetry(definite=false) does, and
// keeps its message on the record (stash) so it can be sent again from the record alone.
func (r *Outbound) MarkUnknown(ctx context.Context, key string, code int, msg string, stash Stash) error {
	_, err := r.update(ctx, key, func(rec *OutboundRecord, _ time.Time) bool {
		if rec.State != OutboundSending {
			return false
		}
		rec.LastErrorCode, rec.LastError = int64(code), msg
		stash.apply(rec)
		return true
	})
	return err
}

// MarkFailedStashed fails the record for good as MarkFailed does and keeps its message on it
// (stash): a send given up whose dead letter replays it from the record (process_send).
func (r *Outbound) MarkFailedStashed(ctx context.Context, key string, code int, reason, msg string, stash Stash) error {
	_, err := r.update(ctx, key, func(rec *OutboundRecord, _ time.Time) bool {
		if rec.State == OutboundSent {
			return false
		}
		rec.State, rec.LastErrorCode, rec.LastError, rec.FailureReason = OutboundFailed, int64(code), msg, reason
		rec.OutcomeHeld = false
		stash.apply(rec)
		return true
	})
	return err
}

// StatusSeenAfter reports whether a status webhook reached a record of phoneNumberID whose send
// began after since: the evidence that statuses flow for that number, so that a send begun at
// since with no status of its own past the reconcile window was never taken by Meta. One query,
// at most one document read (index outbound_status_evidence).
func (r *Outbound) StatusSeenAfter(ctx context.Context, phoneNumberID string, since time.Time) (bool, error) {
	q := r.fs.Collection(OutboundMessages).Where("phone_number_id", "==", phoneNumberID).
		Where("delivery_status", "in", []string{DeliverySent, DeliveryDelivered, DeliveryRead, DeliveryFailed}).
		Where("sending_since", ">", since).Select().Limit(1)
	it := q.Documents(ctx)
	defer it.Stop()
	_, err := it.Next()
	switch {
	case errors.Is(err, iterator.Done):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("look for statuses of later sends from %s: %w", phoneNumberID, err)
	}
	return true, nil
}

// ResendUnknown makes the send of unknown outcome that began at since a new send, in two steps.
// The first call only sets ResendDueAt, confirm from now, and answers AwaitReconcile: its write
// proves the record writable now, and a status that was held up behind the record (a lock left
// by a killed instance holds writers back while readers go on) has until then to land. A call at
// or after ResendDueAt resends: the record stays sending from now, its hold ends and
// UnknownResends counts it; the decision is Send. When the record moved on meanwhile (a status
// settled it, another attempt resent it first), nothing changes and the decision is what
// BeginSend would now say of it.
func (r *Outbound) ResendUnknown(ctx context.Context, key string, since time.Time, confirm time.Duration) (Decision, OutboundRecord, error) {
	var dec Decision
	rec, err := r.update(ctx, key, func(rec *OutboundRecord, now time.Time) bool {
		switch {
		case rec.State != OutboundSending || !rec.SendingSince.Equal(since):
			dec = r.decide(*rec, now)
			return false
		case rec.ResendDueAt.IsZero() || rec.ResendDueAt.Before(since):
			dec = AwaitReconcile
			rec.ResendDueAt = now.Add(confirm)
			return true
		case now.Before(rec.ResendDueAt):
			dec = AwaitReconcile
			return false
		}
		dec = Send
		rec.SendingSince, rec.OutcomeHeld, rec.HeldUntil, rec.ResendDueAt = now, false, time.Time{}, time.Time{}
		rec.Attempts++
		rec.UnknownResends++
		return true
	})
	if err != nil {
		return 0, rec, fmt.Errorf("resend %s: %w", key, err)
	}
	return dec, rec, nil
}

// decide is BeginSend's decision about an existing record that it would not send.
func (r *Outbound) decide(rec OutboundRecord, now time.Time) Decision {
	switch rec.State {
	case OutboundSending:
		if now.Sub(rec.SendingSince) < r.opts.ReconcileWindow {
			return AwaitReconcile
		}
		return OutcomeUnknown
	case OutboundPending:
		// A definite failure made it pending: the caller begins it again.
		return AwaitReconcile
	}
	return AlreadyDone
}

// HoldUnknown holds the wait for a send of unknown outcome on its record until until (the first
// hold's cap is kept), for the sweep to end. It reports whether the record is held: false when it
// is not sending any more (a status settled it).
func (r *Outbound) HoldUnknown(ctx context.Context, key string, until time.Time) (bool, error) {
	held := false
	_, err := r.update(ctx, key, func(rec *OutboundRecord, _ time.Time) bool {
		held = rec.State == OutboundSending
		if !held || (rec.OutcomeHeld && !rec.HeldUntil.IsZero()) {
			return false
		}
		rec.OutcomeHeld = true
		if rec.HeldUntil.IsZero() {
			rec.HeldUntil = until
		}
		return true
	})
	if err != nil {
		return false, fmt.Errorf("hold %s: %w", key, err)
	}
	return held, nil
}

// HeldUnknown lists at most limit records holding a wait for a send of unknown outcome, those
// held longest first. One equality filter and an order on held_until (index outbound_held).
func (r *Outbound) HeldUnknown(ctx context.Context, limit int) ([]OutboundRecord, error) {
	q := r.fs.Collection(OutboundMessages).Where("outcome_held", "==", true).OrderBy("held_until", firestore.Asc).Limit(limit)
	return queryAll[OutboundRecord](ctx, q, "held outbound records")
}

// StrandedSends lists at most limit records of each state that can be sent from themselves
// (they keep their message) and whose task may be gone: sending since before staleBefore and not
// held (a task killed on its last attempt, mid-send), or pending since before then (killed on its
// last attempt before it began, or never queued: the api's caller was told an error, and the
// Idempotency-Key it retries with finds the record sent). staleBefore must be past any live
// task's next attempt (the queue's longest backoff). Two queries, one equality and one range
// each (indexes outbound_state_since, outbound_updated_since).
func (r *Outbound) StrandedSends(ctx context.Context, staleBefore time.Time, limit int) ([]OutboundRecord, error) {
	sending, err := queryAll[OutboundRecord](ctx, r.fs.Collection(OutboundMessages).Where("state", "==", OutboundSending).
		Where("sending_since", "<", staleBefore).Limit(limit), "stranded sending records")
	if err != nil {
		return nil, err
	}
	pending, err := queryAll[OutboundRecord](ctx, r.fs.Collection(OutboundMessages).Where("state", "==", OutboundPending).
		Where("updated_at", "<", staleBefore).Limit(limit), "stranded pending records")
	if err != nil {
		return nil, err
	}
	var out []OutboundRecord
	for _, rec := range append(sending, pending...) {
		// A reply's record without a message is its conversation's to send (the inbox sweep).
		if rec.Message != "" && !rec.OutcomeHeld {
			out = append(out, rec)
		}
	}
	return out, nil
}
