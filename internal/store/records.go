package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/api/iterator"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// StatusRecord is one delivery status as received (message_statuses), keyed by "<id>:<status>".
type StatusRecord struct {
	Key            string    `firestore:"key" json:"key"`
	GraphMessageID string    `firestore:"graph_message_id" json:"graph_message_id"`
	Status         string    `firestore:"status" json:"status"`
	Timestamp      string    `firestore:"timestamp,omitempty" json:"timestamp,omitempty"`
	PhoneNumberID  string    `firestore:"phone_number_id,omitempty" json:"phone_number_id,omitempty"`
	RecipientHash  string    `firestore:"recipient_hash,omitempty" json:"recipient_hash,omitempty"`
	IdempotencyKey string    `firestore:"idempotency_key,omitempty" json:"idempotency_key,omitempty"`
	ErrorCode      int64     `firestore:"error_code,omitempty" json:"error_code,omitempty"`
	ErrorTitle     string    `firestore:"error_title,omitempty" json:"error_title,omitempty"`
	InboundEventID string    `firestore:"inbound_event_id,omitempty" json:"inbound_event_id,omitempty"`
	CorrelationID  string    `firestore:"correlation_id,omitempty" json:"correlation_id,omitempty"`
	ReceivedAt     time.Time `firestore:"received_at" json:"received_at"`
	ExpireAt       time.Time `firestore:"expire_at" json:"expire_at"`
}

// RecordStatus stores a status once. It returns false when the same "<id>:<status>" was recorded
// before, so the caller skips it.
func (r *Records) RecordStatus(ctx context.Context, s StatusRecord) (bool, error) {
	now := r.now()
	s.ReceivedAt, s.ExpireAt = now, now.Add(r.retention)
	_, err := r.fs.Collection(MessageStatuses).Doc(DocID(s.Key)).Create(ctx, s)
	if status.Code(err) == codes.AlreadyExists {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("record status %s: %w", s.Status, err)
	}
	return true, nil
}

// StatusSeen reports whether a status ("<id>:<status>") was recorded already.
func (r *Records) StatusSeen(ctx context.Context, key string) (bool, error) {
	_, err := r.fs.Collection(MessageStatuses).Doc(DocID(key)).Get(ctx)
	switch status.Code(err) {
	case codes.OK:
		return true, nil
	case codes.NotFound:
		return false, nil
	default:
		return false, fmt.Errorf("read status: %w", err)
	}
}

// StatusesFor lists the statuses recorded for a Graph message id.
func (r *Records) StatusesFor(ctx context.Context, graphMessageID string) ([]StatusRecord, error) {
	docs, err := r.fs.Collection(MessageStatuses).Where("graph_message_id", "==", graphMessageID).Documents(ctx).GetAll()
	if err != nil {
		return nil, fmt.Errorf("list statuses: %w", err)
	}
	out := make([]StatusRecord, 0, len(docs))
	for _, d := range docs {
		var s StatusRecord
		if err := d.DataTo(&s); err != nil {
			return nil, fmt.Errorf("decode status: %w", err)
		}
		out = append(out, s)
	}
	return out, nil
}

// Trace is the record of one inbound event's processing (inbound_traces), keyed by the
// inbound_event_id; each attempt of its task updates it.
type Trace struct {
	InboundEventID string                 `firestore:"inbound_event_id" json:"inbound_event_id"`
	CorrelationID  string                 `firestore:"correlation_id" json:"correlation_id"`
	TaskName       string                 `firestore:"task_name" json:"task_name"`
	TraceID        string                 `firestore:"trace_id,omitempty" json:"trace_id,omitempty"`
	Attempt        int64                  `firestore:"attempt" json:"attempt"`
	State          string                 `firestore:"state" json:"state"`
	Messages       int64                  `firestore:"messages" json:"messages"`
	Statuses       int64                  `firestore:"statuses" json:"statuses"`
	Outbound       map[string]TraceTarget `firestore:"outbound" json:"outbound"`
	Error          string                 `firestore:"error,omitempty" json:"error,omitempty"`
	ReceivedAt     time.Time              `firestore:"received_at,omitempty" json:"received_at,omitempty"`
	StartedAt      time.Time              `firestore:"started_at" json:"started_at"`
	FinishedAt     time.Time              `firestore:"finished_at,omitempty" json:"finished_at,omitempty"`
	ExpireAt       time.Time              `firestore:"expire_at" json:"expire_at"`
}

// TraceTarget is the outcome of one outbound enqueue, keyed in Trace.Outbound by idempotency key.
type TraceTarget struct {
	MessageID string `firestore:"message_id" json:"message_id"`
	TaskName  string `firestore:"task_name" json:"task_name"`
	// Status is created, existed (the task was there already) or failed.
	Status string `firestore:"status" json:"status"`
	Error  string `firestore:"error,omitempty" json:"error,omitempty"`
}

// Trace states.
const (
	TraceStarted  = "started"
	TraceFinished = "finished"
	TraceRetrying = "retrying"
)

// StartTrace writes the trace as started for this attempt.
func (r *Records) StartTrace(ctx context.Context, t Trace) error {
	now := r.now()
	t.State, t.StartedAt, t.FinishedAt, t.ExpireAt = TraceStarted, now, time.Time{}, now.Add(r.retention)
	if _, err := r.fs.Collection(InboundTraces).Doc(DocID(t.InboundEventID)).Set(ctx, t); err != nil {
		return fmt.Errorf("start trace: %w", err)
	}
	return nil
}

// FinishTrace records the attempt's outcome: finished, or retrying with the error.
func (r *Records) FinishTrace(ctx context.Context, eventID, state string, outbound map[string]TraceTarget, errText string) error {
	if outbound == nil {
		outbound = map[string]TraceTarget{}
	}
	_, err := r.fs.Collection(InboundTraces).Doc(DocID(eventID)).Set(ctx, map[string]any{
		"state":       state,
		"outbound":    outbound,
		"error":       errText,
		"finished_at": r.now(),
	}, firestore.MergeAll)
	if err != nil {
		return fmt.Errorf("finish trace: %w", err)
	}
	return nil
}

// GetTrace reads an event's trace.
func (r *Records) GetTrace(ctx context.Context, eventID string) (Trace, error) {
	return getDoc[Trace](ctx, r.fs.Collection(InboundTraces).Doc(DocID(eventID)), "trace")
}

// DeadLetter is a task that failed on its last attempt (dead_letters), kept with its body so it
// can be replayed. Cloud Tasks has no dead-letter queue of its own.
type DeadLetter struct {
	ID             string    `firestore:"id" json:"id"`
	Queue          string    `firestore:"queue" json:"queue"`
	TaskName       string    `firestore:"task_name" json:"task_name"`
	Path           string    `firestore:"path" json:"path"`
	Body           string    `firestore:"body" json:"body"`
	LastError      string    `firestore:"last_error" json:"last_error"`
	LastErrorCode  int64     `firestore:"last_error_code,omitempty" json:"last_error_code,omitempty"`
	RetryCount     int64     `firestore:"retry_count" json:"retry_count"`
	CorrelationID  string    `firestore:"correlation_id,omitempty" json:"correlation_id,omitempty"`
	InboundEventID string    `firestore:"inbound_event_id,omitempty" json:"inbound_event_id,omitempty"`
	IdempotencyKey string    `firestore:"idempotency_key,omitempty" json:"idempotency_key,omitempty"`
	Replayed       bool      `firestore:"replayed" json:"replayed"`
	ReplayedAt     time.Time `firestore:"replayed_at,omitempty" json:"replayed_at,omitempty"`
	CreatedAt      time.Time `firestore:"created_at" json:"created_at"`
	ExpireAt       time.Time `firestore:"expire_at" json:"expire_at"`
}

// PutDeadLetter writes a dead letter; its id is derived from the task name, so the same task
// dead-lettered twice is one document.
func (r *Records) PutDeadLetter(ctx context.Context, d DeadLetter) (string, error) {
	now := r.now()
	if d.ID == "" {
		d.ID = DocID(d.Queue + "/" + d.TaskName + "/" + d.IdempotencyKey + d.InboundEventID)
	}
	d.CreatedAt, d.ExpireAt = now, now.Add(r.retention)
	if _, err := r.fs.Collection(DeadLetters).Doc(d.ID).Set(ctx, d); err != nil {
		return "", fmt.Errorf("write dead letter: %w", err)
	}
	return d.ID, nil
}

// ListDeadLetters returns dead letters in no particular order, optionally only those not yet
// replayed.
func (r *Records) ListDeadLetters(ctx context.Context, onlyPending bool, limit int) ([]DeadLetter, error) {
	q := r.fs.Collection(DeadLetters).Query
	if onlyPending {
		q = q.Where("replayed", "==", false)
	}
	if limit > 0 {
		q = q.Limit(limit)
	}
	it := q.Documents(ctx)
	defer it.Stop()
	var out []DeadLetter
	for {
		snap, err := it.Next()
		if errors.Is(err, iterator.Done) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("list dead letters: %w", err)
		}
		var d DeadLetter
		if err := snap.DataTo(&d); err != nil {
			return nil, fmt.Errorf("decode dead letter: %w", err)
		}
		out = append(out, d)
	}
}

// MarkReplayed flags a dead letter as replayed.
func (r *Records) MarkReplayed(ctx context.Context, id string) error {
	_, err := r.fs.Collection(DeadLetters).Doc(id).Update(ctx, []firestore.Update{
		{Path: "replayed", Value: true},
		{Path: "replayed_at", Value: r.now()},
	})
	if err != nil {
		return fmt.Errorf("mark dead letter %s replayed: %w", id, err)
	}
	return nil
}

// DeadLettersFor lists the dead letters of one inbound event or one reply (by idempotency key).
func (r *Records) DeadLettersFor(ctx context.Context, inboundEventID, idempotencyKey string) ([]DeadLetter, error) {
	var out []DeadLetter
	seen := map[string]bool{}
	for _, q := range []struct{ field, value string }{{"inbound_event_id", inboundEventID}, {"idempotency_key", idempotencyKey}} {
		if q.value == "" {
			continue
		}
		docs, err := r.fs.Collection(DeadLetters).Where(q.field, "==", q.value).Documents(ctx).GetAll()
		if err != nil {
			return nil, fmt.Errorf("list dead letters: %w", err)
		}
		for _, d := range docs {
			if seen[d.Ref.ID] {
				continue
			}
			seen[d.Ref.ID] = true
			var dl DeadLetter
			if err := d.DataTo(&dl); err != nil {
				return nil, fmt.Errorf("decode dead letter: %w", err)
			}
			out = append(out, dl)
		}
	}
	return out, nil
}

// GetDeadLetter reads one dead letter by id.
func (r *Records) GetDeadLetter(ctx context.Context, id string) (DeadLetter, error) {
	return getDoc[DeadLetter](ctx, r.fs.Collection(DeadLetters).Doc(id), "dead letter")
}
