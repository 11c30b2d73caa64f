package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"cloud.google.com/go/firestore"
	"github.com/wapipe/wapipe/internal/logging"
	"google.golang.org/api/iterator"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Outbound record states. A record is pending when nothing is being sent for it (new, or after a
// send that Meta definitely refused with a retryable error), sending while a send is in progress
// or its outcome is unknown, and sent or failed for good. skipped is a reply the Responder chose
// not to send.
const (
	OutboundPending = "pending"
	OutboundSending = "sending"
	OutboundSent    = "sent"
	OutboundFailed  = "failed"
	OutboundSkipped = "skipped"
)

// Delivery statuses Meta reports for a sent message, in rank order. failed is terminal.
const (
	DeliverySent      = "sent"
	DeliveryDelivered = "delivered"
	DeliveryRead      = "read"
	DeliveryFailed    = "failed"
)

// DeliveryRank orders delivery statuses; an update with a rank not above the record's is ignored,
// so statuses arriving out of order never move a record back. failed outranks everything.
func DeliveryRank(s string) int {
	switch s {
	case DeliverySent:
		return 1
	case DeliveryDelivered:
		return 2
	case DeliveryRead:
		return 3
	case DeliveryFailed:
		return 100
	default:
		return 0
	}
}

// OutboundRecord is the idempotency record of one reply (outbound_messages), keyed by the
// outbound task's idempotency_key.
type OutboundRecord struct {
	IdempotencyKey string `firestore:"idempotency_key" json:"idempotency_key"`
	State          string `firestore:"state" json:"state"`
	InboundEventID string `firestore:"inbound_event_id" json:"inbound_event_id"`
	MessageID      string `firestore:"inbound_message_id" json:"inbound_message_id"`
	CorrelationID  string `firestore:"correlation_id" json:"correlation_id"`
	PhoneNumberID  string `firestore:"phone_number_id" json:"phone_number_id"`
	// TenantID is the tenant the reply is sent for; empty for the single-tenant default.
	TenantID       string    `firestore:"tenant_id,omitempty" json:"tenant_id,omitempty"`
	ToHash         string    `firestore:"to_hash" json:"to_hash"`
	GraphMessageID string    `firestore:"graph_message_id,omitempty" json:"graph_message_id,omitempty"`
	Attempts       int64     `firestore:"attempts" json:"attempts"`
	SendingSince   time.Time `firestore:"sending_since,omitempty" json:"sending_since,omitempty"`
	LastErrorCode  int64     `firestore:"last_error_code,omitempty" json:"last_error_code,omitempty"`
	LastError      string    `firestore:"last_error,omitempty" json:"last_error,omitempty"`
	// FailureReason is why a failed record failed, as a code (outside_customer_service_window,
	// no_token, outcome_unknown…; package delivery names them); LastError is the detail, for
	// operators only. Records failed before it existed have none.
	FailureReason  string    `firestore:"failure_reason,omitempty" json:"failure_reason,omitempty"`
	Reconciled     bool      `firestore:"reconciled,omitempty" json:"reconciled,omitempty"`
	ReadMarked     bool      `firestore:"read_marked,omitempty" json:"read_marked,omitempty"`
	DeliveryStatus string    `firestore:"delivery_status,omitempty" json:"delivery_status,omitempty"`
	DeliveryError  int64     `firestore:"delivery_error_code,omitempty" json:"delivery_error_code,omitempty"`
	ReceivedAt     time.Time `firestore:"received_at,omitempty" json:"received_at,omitempty"`
	CreatedAt      time.Time `firestore:"created_at" json:"created_at"`
	UpdatedAt      time.Time `firestore:"updated_at" json:"updated_at"`
	SentAt         time.Time `firestore:"sent_at,omitempty" json:"sent_at,omitempty"`
	LatencyMS      int64     `firestore:"latency_ms,omitempty" json:"latency_ms,omitempty"`
	// LatencyBucket indexes LatencyBounds, so health can compute percentiles with count
	// aggregations instead of reading every record.
	LatencyBucket int64     `firestore:"latency_bucket" json:"latency_bucket"`
	ExpireAt      time.Time `firestore:"expire_at" json:"expire_at"`

	// The fields below (store/sends.go) are set on sends made through the api service and on
	// parked sends: everything needed to send again without the task that made the record.
	// Source is SourceAPI for the api's sends, empty for replies.
	Source       string `firestore:"source,omitempty" json:"source,omitempty"`
	APIMessageID string `firestore:"api_message_id,omitempty" json:"api_message_id,omitempty"`
	// RequestHash tells an Idempotency-Key replay (same hash) from a reuse with another body.
	RequestHash string `firestore:"request_hash,omitempty" json:"-"`
	// To (the contact's number), Recipient (its BSUID, when the send goes by it) and Message
	// (the graph.Message JSON) are never shown. ConversationID is the contact's conversation on
	// the number, whose last message opens the 24-hour window.
	To             string    `firestore:"to,omitempty" json:"-"`
	Recipient      string    `firestore:"recipient,omitempty" json:"-"`
	ConversationID string    `firestore:"conversation_id,omitempty" json:"-"`
	Message        string    `firestore:"message,omitempty" json:"-"`
	MessageType    string    `firestore:"message_type,omitempty" json:"message_type,omitempty"`
	ParkedAt       time.Time `firestore:"parked_at,omitempty" json:"parked_at,omitempty"`
	ReleaseGen     int64     `firestore:"release_gen,omitempty" json:"release_gen,omitempty"`
	ReleasePending bool      `firestore:"release_pending,omitempty" json:"release_pending,omitempty"`

	// Fallback (a graph.Message JSON, a template) replaces Message when the contact's 24-hour
	// window is closed: a notification's templates.notify with its parameters filled (package
	// notify). Never shown.
	Fallback string `firestore:"fallback,omitempty" json:"-"`

	// OutcomeHeld: the record's send has an unknown outcome and no evidence yet says whether Meta
	// took it; the wait is held here (not on task retries) until HeldUntil, and the sweep looks
	// at it every minute (outbound_unknown.go). UnknownResends counts the sends made again once
	// the evidence said Meta never took the earlier one.
	OutcomeHeld    bool      `firestore:"outcome_held,omitempty" json:"outcome_held,omitempty"`
	HeldUntil      time.Time `firestore:"held_until,omitempty" json:"held_until,omitempty"`
	UnknownResends int64     `firestore:"unknown_resends,omitempty" json:"unknown_resends,omitempty"`
	// ResendDueAt is when a resend the evidence decided may go (ResendUnknown): the evidence
	// must still hold then, the record having been writable meanwhile.
	ResendDueAt time.Time `firestore:"resend_due_at,omitempty" json:"resend_due_at,omitempty"`
}

// ErrNotFound is returned when a record does not exist.
var ErrNotFound = errors.New("record not found")

// Decision is what BeginSend decided.
type Decision int

const (
	// Send: the record is now sending; send the reply.
	Send Decision = iota + 1
	// AlreadyDone: the record is sent, failed or skipped; do nothing.
	AlreadyDone
	// AwaitReconcile: an earlier send's outcome is unknown; wait for the status webhook.
	AwaitReconcile
	// OutcomeUnknown: an earlier send's outcome is still unknown after the reconcile window (no
	// status webhook came). Sending again could answer twice: the caller gives the reply up as a
	// dead letter for an operator to replay.
	OutcomeUnknown
)

// Outbound keeps the idempotency records of replies (outbound_messages).
type Outbound struct {
	fs   *firestore.Client
	opts Options
}

// DefaultReconcileWindow is how long a send of unknown outcome holds off a resend. Its status
// webhook must make it through the webhook and the inbound queue's backoff first; the outbound
// queue's retries span over an hour, so waiting this long costs a reply little.
const DefaultReconcileWindow = 15 * time.Minute

// NewOutbound returns the outbound record store.
func NewOutbound(db *DB, opts Options) *Outbound {
	return &Outbound{fs: db.fs, opts: opts.withDefaults()}
}

func (r *Outbound) outboundDoc(key string) *firestore.DocumentRef {
	return r.fs.Collection(OutboundMessages).Doc(DocID(key))
}

// BeginSend moves the record for seed.IdempotencyKey to sending, creating it if need be, unless it
// is done or an earlier send may have reached Meta (sending: AwaitReconcile inside the reconcile
// window, OutcomeUnknown after it). It returns the record as it now stands.
func (r *Outbound) BeginSend(ctx context.Context, seed OutboundRecord) (Decision, OutboundRecord, error) {
	ref := r.outboundDoc(seed.IdempotencyKey)
	if dec, rec, ok := r.beginRead(ctx, ref); ok {
		return dec, rec, nil
	}
	type begun struct {
		dec Decision
		rec OutboundRecord
	}
	b, err := runTx(ctx, r.fs, r.opts.txHooks, func(ctx context.Context, tx *firestore.Transaction) (begun, error) {
		now := r.opts.Now()
		rec, ok, err := getTx[OutboundRecord](tx, ref)
		if err != nil {
			return begun{}, err
		}
		if !ok {
			rec := seed
			rec.State, rec.Attempts, rec.SendingSince = OutboundSending, 1, now
			rec.CreatedAt, rec.UpdatedAt, rec.ExpireAt = now, now, now.Add(r.opts.Retention)
			return begun{Send, rec}, tx.Create(ref, rec)
		}
		switch rec.State {
		case OutboundSent, OutboundFailed, OutboundSkipped:
			return begun{AlreadyDone, rec}, nil
		case OutboundParked:
			// Only a release (store/sends.go) sends a parked record again.
			return begun{AlreadyDone, rec}, nil
		case OutboundSending:
			if now.Sub(rec.SendingSince) < r.opts.ReconcileWindow {
				return begun{AwaitReconcile, rec}, nil
			}
			return begun{OutcomeUnknown, rec}, nil
		}
		rec.State, rec.SendingSince, rec.UpdatedAt = OutboundSending, now, now
		rec.Attempts++
		return begun{Send, rec}, tx.Set(ref, rec)
	})
	if err != nil {
		return 0, OutboundRecord{}, fmt.Errorf("begin send %s: %w", seed.IdempotencyKey, err)
	}
	return b.dec, b.rec, nil
}

// beginRead decides without a transaction what needs no write: a record that is settled, or
// whose send of unknown outcome is still inside the reconcile window. A task waiting for a status
// comes back every few seconds; reading in a transaction each time would contend with the status
// webhook's own update of the record, and could starve it for as long as the wait lasts. A stale
// answer is harmless: a settled record stays settled (only a replay reopens it, before its task
// exists), and "still waiting" only asks for a later attempt. ok is false when the transaction
// must decide.
func (r *Outbound) beginRead(ctx context.Context, ref *firestore.DocumentRef) (Decision, OutboundRecord, bool) {
	snap, err := ref.Get(ctx)
	if err != nil {
		return 0, OutboundRecord{}, false
	}
	var rec OutboundRecord
	if err := snap.DataTo(&rec); err != nil {
		return 0, OutboundRecord{}, false
	}
	switch rec.State {
	case OutboundSent, OutboundFailed, OutboundSkipped, OutboundParked:
		return AlreadyDone, rec, true
	case OutboundSending:
		if r.opts.Now().Sub(rec.SendingSince) < r.opts.ReconcileWindow {
			return AwaitReconcile, rec, true
		}
	}
	return 0, rec, false
}

// MarkSent records Meta's acceptance of the reply, and whether the inbound message was marked as
// read beside it (one write, so the two never contend for the record). It does not overwrite a
// record a status webhook already reconciled.
func (r *Outbound) MarkSent(ctx context.Context, key, graphMessageID string, readMarked bool) (OutboundRecord, error) {
	return r.update(ctx, key, func(rec *OutboundRecord, now time.Time) bool {
		if rec.State == OutboundSent {
			if readMarked && !rec.ReadMarked {
				rec.ReadMarked = true
				return true
			}
			return false
		}
		rec.ReadMarked = rec.ReadMarked || readMarked
		rec.State, rec.GraphMessageID, rec.SentAt = OutboundSent, graphMessageID, now
		rec.OutcomeHeld = false
		rec.LastError, rec.LastErrorCode, rec.FailureReason = "", 0, ""
		rec.setLatency(now)
		return true
	})
}

// MarkSkipped records that no reply is sent for this message.
func (r *Outbound) MarkSkipped(ctx context.Context, key string) error {
	_, err := r.update(ctx, key, func(rec *OutboundRecord, _ time.Time) bool {
		rec.State = OutboundSkipped
		return true
	})
	return err
}

// MarkFailed records a permanent failure (or retries exhausted): Meta's code, the reason as a
// code and the detail msg.
func (r *Outbound) MarkFailed(ctx context.Context, key string, code int, reason, msg string) error {
	_, err := r.update(ctx, key, func(rec *OutboundRecord, _ time.Time) bool {
		if rec.State == OutboundSent {
			return false
		}
		rec.State, rec.LastErrorCode, rec.LastError, rec.FailureReason = OutboundFailed, int64(code), msg, reason
		rec.OutcomeHeld = false
		return true
	})
	return err
}

// MarkRetry records a send that will be retried. definite says Meta answered with an error, so
// nothing was sent and the retry may send at once; otherwise the outcome is unknown and the
// record stays sending until the reconcile window passes.
func (r *Outbound) MarkRetry(ctx context.Context, key string, definite bool, code int, msg string) error {
	_, err := r.update(ctx, key, func(rec *OutboundRecord, _ time.Time) bool {
		if rec.State != OutboundSending {
			return false
		}
		if definite {
			rec.State = OutboundPending
		}
		rec.LastErrorCode, rec.LastError = int64(code), msg
		return true
	})
	return err
}

// ReopenOutbound makes a failed record pending again, so that a replayed dead letter may send.
// A sent record is never reopened: that reply reached Meta already; nor is a failed one whose
// wamid a status made known (ApplyResult.AcceptedAfterFailure): Meta has that one too.
func (r *Outbound) ReopenOutbound(ctx context.Context, key string) error {
	_, err := r.update(ctx, key, func(rec *OutboundRecord, _ time.Time) bool {
		if !rec.Reopenable() {
			return false
		}
		rec.State = OutboundPending
		return true
	})
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	return err
}

// Reopenable reports whether a replay may send the record again: it failed, and Meta never
// accepted it (no wamid known).
func (rec OutboundRecord) Reopenable() bool {
	return rec.State == OutboundFailed && rec.GraphMessageID == ""
}

// update applies f to the record in a transaction and writes it when f reports a change. f may
// run more than once (once per transaction attempt), each time on a record read afresh.
func (r *Outbound) update(ctx context.Context, key string, f func(*OutboundRecord, time.Time) bool) (OutboundRecord, error) {
	out, err := updateTx(ctx, r.fs, r.opts.txHooks, r.outboundDoc(key), func(rec *OutboundRecord) (bool, error) {
		now := r.opts.Now()
		if !f(rec, now) {
			return false, nil
		}
		rec.UpdatedAt = now
		return true, nil
	})
	if status.Code(err) == codes.NotFound {
		err = ErrNotFound
	}
	if err != nil {
		return OutboundRecord{}, fmt.Errorf("update outbound record %s: %w", key, err)
	}
	return out, nil
}

// GetOutbound reads one record.
func (r *Outbound) GetOutbound(ctx context.Context, key string) (OutboundRecord, error) {
	return getDoc[OutboundRecord](ctx, r.outboundDoc(key), "outbound record "+key)
}

// StatusUpdate is one delivery status to apply to an outbound record.
type StatusUpdate struct {
	// Key is the idempotency key echoed in biz_opaque_callback_data, when present.
	Key string
	// GraphMessageID is the wamid of the sent message.
	GraphMessageID string
	Status         string
	ErrorCode      int
	// RecipientPhone, RecipientUserID and RecipientParentUserID are the person the status is
	// about (recipient_id, recipient_user_id, recipient_parent_user_id), compared with the
	// record's when it knows no wamid (MismatchRecipient).
	RecipientPhone, RecipientUserID, RecipientParentUserID string
	// RecipientHashes are the same, keyed as a record's to_hash is (logging.Hasher Phone and
	// User).
	RecipientHashes []string
	// PhoneNumberID is the status's metadata.phone_number_id: the number Meta says sent the
	// message. TenantID is the tenant that number routes to ("" for the single-tenant default).
	PhoneNumberID string
	TenantID      string
	// SharedWith are the tenants of the status's number when it is shared: a record of any of
	// them may be settled by it (each sent with its own token, on the same number).
	SharedWith []string
}

// Reasons a status is refused (ApplyResult.Mismatch).
const (
	// MismatchNumber: the status came from another number than the one that sent the record.
	MismatchNumber = "phone_number_id"
	// MismatchTenant: the status's number is not the record's tenant's.
	MismatchTenant = "tenant"
	// MismatchMessage: the record knows its wamid and the status is about another message.
	MismatchMessage = "graph_message_id"
	// MismatchNotSent: the record is pending (or parked, skipped): nothing was sent for it, so a
	// status about another wamid cannot settle it.
	MismatchNotSent = "not_sent"
	// MismatchRecipient: the record knows no wamid of its own (its send's answer never came) and
	// the status is about another person than the record's. On a shared number another sender
	// may echo a record's key (biz_opaque_callback_data) in a send of its own: without its wamid
	// the record is settled by a status only when that status names the record's own recipient.
	MismatchRecipient = "recipient"
)

// ApplyResult says what ApplyStatus did.
type ApplyResult struct {
	// Matched is false when no record is about this message (not sent by wapipe).
	Matched bool
	// Applied is false when the rank guard kept the record as it was.
	Applied bool
	// Reconciled is true when the status proved that a send of unknown outcome reached Meta.
	Reconciled bool
	// AcceptedAfterFailure is true when the status proved that Meta accepted a send the record
	// had given up as failed (its outcome unknown on the last attempt): the record stays failed
	// but now knows its wamid, so no replay sends it again.
	AcceptedAfterFailure bool
	// Mismatch, when set, says why the status may not change the record it names (one of the
	// Mismatch constants): nothing was changed.
	Mismatch string
	Key      string
	// TenantID is the tenant of the record the status may change ("" when none matched, or the
	// single-tenant default's): on a shared number, the tenant that sent.
	TenantID string
	// Source is who made the record (SourceAPI: the business's own /v1 send).
	Source string
}

// statusMismatch returns why u may not change rec, or "" when it may. The echoed key alone
// proves nothing: another tenant can send a message of its own with any callback data, so the
// status must come from the number that sent the record (and that number must be the record's
// tenant's), and must be about the record's message when the record knows it.
func statusMismatch(rec OutboundRecord, u StatusUpdate) string {
	switch {
	case rec.PhoneNumberID == "" || rec.PhoneNumberID != u.PhoneNumberID:
		return MismatchNumber
	case rec.TenantID != "" && rec.TenantID != u.TenantID && !slices.Contains(u.SharedWith, rec.TenantID):
		return MismatchTenant
	case rec.GraphMessageID != "" && rec.GraphMessageID != u.GraphMessageID:
		return MismatchMessage
	case rec.GraphMessageID == "" && !sameRecipient(rec, u):
		return MismatchRecipient
	}
	switch rec.State {
	case OutboundSent, OutboundSending, OutboundFailed:
		// A failed record is never reopened by a status (ApplyStatus keeps it failed); one from
		// its own number only tells it that Meta has the message.
		return ""
	}
	// pending, parked, skipped: nothing in flight. Only the record's own wamid (checked above)
	// may settle it.
	if rec.GraphMessageID == "" {
		return MismatchNotSent
	}
	return ""
}

// sameRecipient reports whether status u names the record's recipient: by the keyed hash every
// record keeps (to_hash), else by its stashed phone (digits compared, as Meta writes
// recipient_id without "+" or spaces) or business-scoped user id. A record that knows none of
// them (made before to_hash), or a status that names nobody (Meta's always name someone), cannot
// tell, and is settled as before.
func sameRecipient(rec OutboundRecord, u StatusUpdate) bool {
	switch {
	case len(u.RecipientHashes) == 0 && u.RecipientPhone == "" && u.RecipientUserID == "" && u.RecipientParentUserID == "":
		return true
	case rec.ToHash != "" && slices.Contains(u.RecipientHashes, rec.ToHash):
		return true
	case logging.NormalizePhone(rec.To) != "" && logging.NormalizePhone(rec.To) == logging.NormalizePhone(u.RecipientPhone):
		return true
	case rec.Recipient != "" && (rec.Recipient == u.RecipientUserID || rec.Recipient == u.RecipientParentUserID):
		return true
	}
	return rec.ToHash == "" && rec.To == "" && rec.Recipient == ""
}

// ApplyStatus applies a delivery status to the record it is about, found by the echoed key or
// else by the Graph message id, when the status may change it (statusMismatch): otherwise the
// record is left as it is and the result says why. The rank guard keeps the highest status; a
// status for a send of unknown outcome proves Meta accepted the send, which reconciles the record
// to sent.
func (r *Outbound) ApplyStatus(ctx context.Context, u StatusUpdate) (ApplyResult, error) {
	key := u.Key
	if key == "" {
		q := r.fs.Collection(OutboundMessages).Where("graph_message_id", "==", u.GraphMessageID).Limit(1)
		it := q.Documents(ctx)
		snap, err := it.Next()
		it.Stop()
		if errors.Is(err, iterator.Done) {
			return ApplyResult{}, nil
		}
		if err != nil {
			return ApplyResult{}, fmt.Errorf("find outbound record by message id: %w", err)
		}
		k, err := snap.DataAt("idempotency_key")
		if err != nil {
			return ApplyResult{}, fmt.Errorf("find outbound record by message id: %w", err)
		}
		key, _ = k.(string)
	}
	var res ApplyResult
	_, err := r.update(ctx, key, func(rec *OutboundRecord, now time.Time) bool {
		// f runs once per transaction attempt: what an aborted attempt found must not survive.
		res = ApplyResult{Key: key, Matched: true, Mismatch: statusMismatch(*rec, u)}
		if res.Mismatch != "" {
			return false
		}
		res.TenantID, res.Source = rec.TenantID, rec.Source
		changed := false
		switch {
		case rec.State == OutboundFailed:
			// A status never reopens a failed record. But a send given up with its outcome
			// unknown may have reached Meta after all: the record keeps the wamid, and a replay
			// of its dead letter then finds it accepted (ReopenOutbound) and sends nothing.
			if rec.GraphMessageID == "" {
				rec.GraphMessageID = u.GraphMessageID
				res.AcceptedAfterFailure, changed = true, true
			}
		case rec.State != OutboundSent:
			// A status from the record's own number proves Meta accepted a send of unknown
			// outcome (sending), or names the record's own wamid.
			rec.State, rec.GraphMessageID, rec.SentAt, rec.Reconciled = OutboundSent, u.GraphMessageID, now, true
			rec.OutcomeHeld = false
			rec.setLatency(now)
			res.Reconciled, changed = true, true
		}
		if rec.DeliveryStatus != DeliveryFailed && DeliveryRank(u.Status) > DeliveryRank(rec.DeliveryStatus) {
			rec.DeliveryStatus = u.Status
			if u.Status == DeliveryFailed {
				rec.DeliveryError = int64(u.ErrorCode)
			}
			res.Applied, changed = true, true
		}
		return changed
	})
	if errors.Is(err, ErrNotFound) {
		return ApplyResult{Key: key}, nil
	}
	if err != nil {
		return ApplyResult{}, err
	}
	return res, nil
}

// LatencyBounds are the upper bounds, in milliseconds, of the webhook-to-sent latency buckets; the
// last bucket (index len(LatencyBounds)) holds everything slower.
var LatencyBounds = []int64{100, 250, 500, 1000, 2000, 5000, 10000, 30000, 60000, 300000}

// LatencyBucket returns the bucket of a latency.
func LatencyBucket(ms int64) int64 {
	for i, b := range LatencyBounds {
		if ms <= b {
			return int64(i)
		}
	}
	return int64(len(LatencyBounds))
}

func (rec *OutboundRecord) setLatency(now time.Time) {
	if rec.ReceivedAt.IsZero() {
		rec.LatencyBucket = -1
		return
	}
	rec.LatencyMS = now.Sub(rec.ReceivedAt).Milliseconds()
	rec.LatencyBucket = LatencyBucket(rec.LatencyMS)
}

// CountOutboundByState counts the records in a state (OutboundPending, …).
func (r *Outbound) CountOutboundByState(ctx context.Context, state string) (int64, error) {
	n, err := count(ctx, r.fs.Collection(OutboundMessages).Where("state", "==", state))
	if err != nil {
		return 0, fmt.Errorf("count %s outbound records: %w", state, err)
	}
	return n, nil
}

// CountSentSince counts the replies sent at or after since.
func (r *Outbound) CountSentSince(ctx context.Context, since time.Time) (int64, error) {
	n, err := count(ctx, r.fs.Collection(OutboundMessages).Where("state", "==", OutboundSent).Where("sent_at", ">=", since))
	if err != nil {
		return 0, fmt.Errorf("count sent since %s: %w", since.Format(time.RFC3339), err)
	}
	return n, nil
}

// CountFailedSince counts the records that failed for good at or after since.
func (r *Outbound) CountFailedSince(ctx context.Context, since time.Time) (int64, error) {
	n, err := count(ctx, r.fs.Collection(OutboundMessages).Where("state", "==", OutboundFailed).Where("updated_at", ">=", since))
	if err != nil {
		return 0, fmt.Errorf("count failed since %s: %w", since.Format(time.RFC3339), err)
	}
	return n, nil
}

// CountSentInLatencyBucket counts the replies sent at or after since whose webhook-to-sent
// latency fell in bucket (an index of LatencyBounds, or len(LatencyBounds) for the slowest).
func (r *Outbound) CountSentInLatencyBucket(ctx context.Context, bucket int, since time.Time) (int64, error) {
	n, err := count(ctx, r.fs.Collection(OutboundMessages).Where("state", "==", OutboundSent).
		Where("latency_bucket", "==", bucket).Where("sent_at", ">=", since))
	if err != nil {
		return 0, fmt.Errorf("count latency bucket %d: %w", bucket, err)
	}
	return n, nil
}

// GetOutbounds reads the records of keys in one batch; keys without a record are absent from the
// map. One read per key.
func (r *Outbound) GetOutbounds(ctx context.Context, keys []string) (map[string]OutboundRecord, error) {
	out := map[string]OutboundRecord{}
	if len(keys) == 0 {
		return out, nil
	}
	refs := make([]*firestore.DocumentRef, len(keys))
	for i, k := range keys {
		refs[i] = r.outboundDoc(k)
	}
	snaps, err := r.fs.GetAll(ctx, refs)
	if err != nil {
		return nil, fmt.Errorf("read outbound records: %w", err)
	}
	recs, err := decodeAll[OutboundRecord](snaps)
	if err != nil {
		return nil, fmt.Errorf("decode outbound record: %w", err)
	}
	for i, rec := range recs {
		if rec != nil {
			out[keys[i]] = *rec
		}
	}
	return out, nil
}

// SentPoint is one reply sent: when, and its webhook-to-sent latency (-1 when unknown).
type SentPoint struct {
	SentAt    time.Time
	LatencyMS int64
}

// SentSince returns the replies sent at or after since, oldest first, at most limit of them:
// only their send time and latency are read (a projection), for the console's chart.
func (r *Outbound) SentSince(ctx context.Context, since time.Time, limit int) ([]SentPoint, error) {
	q := r.fs.Collection(OutboundMessages).Where("state", "==", OutboundSent).Where("sent_at", ">=", since).
		OrderBy("sent_at", firestore.Asc).Select("sent_at", "latency_ms", "latency_bucket").Limit(limit)
	type point struct {
		SentAt        time.Time `firestore:"sent_at"`
		LatencyMS     int64     `firestore:"latency_ms"`
		LatencyBucket int64     `firestore:"latency_bucket"`
	}
	ps, err := queryAll[point](ctx, q, "sent records")
	if err != nil {
		return nil, err
	}
	out := make([]SentPoint, len(ps))
	for i, p := range ps {
		out[i] = SentPoint{SentAt: p.SentAt, LatencyMS: p.LatencyMS}
		if p.LatencyBucket < 0 {
			out[i].LatencyMS = -1
		}
	}
	return out, nil
}

// ListOutboundForEvent returns the outbound records of the replies to one webhook delivery (by
// their inbound_event_id), at most limit of them: besides the reply keyed by a message's id they
// include a conversation turn's further replies and an action's result, which `wapipe inspect`
// shows. One equality filter, served by Firestore's automatic single-field index.
func (r *Outbound) ListOutboundForEvent(ctx context.Context, inboundEventID string, limit int) ([]OutboundRecord, error) {
	return queryAll[OutboundRecord](ctx, r.fs.Collection(OutboundMessages).Where("inbound_event_id", "==", inboundEventID).Limit(limit),
		"outbound records of an event")
}
