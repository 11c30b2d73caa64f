package store

import (
	"context"
	"fmt"
	"time"

	"cloud.google.com/go/firestore"
)

// Traces keeps the record of each inbound event's processing (inbound_traces).
type Traces struct {
	fs   *firestore.Client
	opts Options
}

// NewTraces returns the trace store.
func NewTraces(db *DB, opts Options) *Traces {
	return &Traces{fs: db.fs, opts: opts.withDefaults()}
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
	// Status is created, existed (the task was there already), failed, or unrouted (no tenant
	// owns the number and there is no default: no task).
	Status string `firestore:"status" json:"status"`
	Error  string `firestore:"error,omitempty" json:"error,omitempty"`
	// TenantID is the tenant the message was routed to; empty for the single-tenant default.
	TenantID string `firestore:"tenant_id,omitempty" json:"tenant_id,omitempty"`
}

// Trace states.
const (
	TraceStarted  = "started"
	TraceFinished = "finished"
	TraceRetrying = "retrying"
)

// StartTrace writes the trace as started for this attempt.
func (r *Traces) StartTrace(ctx context.Context, t Trace) error {
	now := r.opts.Now()
	t.State, t.StartedAt, t.FinishedAt, t.ExpireAt = TraceStarted, now, time.Time{}, now.Add(r.opts.Retention)
	if _, err := r.fs.Collection(InboundTraces).Doc(DocID(t.InboundEventID)).Set(ctx, t); err != nil {
		return fmt.Errorf("start trace: %w", err)
	}
	return nil
}

// FinishTrace records the attempt's outcome: finished, or retrying with the error.
func (r *Traces) FinishTrace(ctx context.Context, eventID, state string, outbound map[string]TraceTarget, errText string) error {
	if outbound == nil {
		outbound = map[string]TraceTarget{}
	}
	_, err := r.fs.Collection(InboundTraces).Doc(DocID(eventID)).Set(ctx, map[string]any{
		"state":       state,
		"outbound":    outbound,
		"error":       errText,
		"finished_at": r.opts.Now(),
	}, firestore.MergeAll)
	if err != nil {
		return fmt.Errorf("finish trace: %w", err)
	}
	return nil
}

// GetTrace reads an event's trace.
func (r *Traces) GetTrace(ctx context.Context, eventID string) (Trace, error) {
	return getDoc[Trace](ctx, r.fs.Collection(InboundTraces).Doc(DocID(eventID)), "trace")
}
