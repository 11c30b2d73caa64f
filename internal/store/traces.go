package store

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

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
// inbound_event_id; each attempt of its task writes it once, when the attempt is over.
type Trace struct {
	InboundEventID string `firestore:"inbound_event_id" json:"inbound_event_id"`
	CorrelationID  string `firestore:"correlation_id" json:"correlation_id"`
	TaskName       string `firestore:"task_name" json:"task_name"`
	TraceID        string `firestore:"trace_id,omitempty" json:"trace_id,omitempty"`
	Attempt        int64  `firestore:"attempt" json:"attempt"`
	State          string `firestore:"state" json:"state"`
	Messages       int64  `firestore:"messages" json:"messages"`
	Statuses       int64  `firestore:"statuses" json:"statuses"`
	// Outbound holds up to MaxTraceTargets enqueue outcomes (failures first); OutboundCounts
	// counts all of them by status and OutboundOmitted those left out, so a batch of thousands
	// of messages still fits in one document.
	Outbound        map[string]TraceTarget `firestore:"outbound" json:"outbound"`
	OutboundCounts  map[string]int64       `firestore:"outbound_counts,omitempty" json:"outbound_counts,omitempty"`
	OutboundOmitted int64                  `firestore:"outbound_omitted,omitempty" json:"outbound_omitted,omitempty"`
	Error           string                 `firestore:"error,omitempty" json:"error,omitempty"`
	ReceivedAt      time.Time              `firestore:"received_at,omitempty" json:"received_at,omitempty"`
	StartedAt       time.Time              `firestore:"started_at" json:"started_at"`
	FinishedAt      time.Time              `firestore:"finished_at,omitempty" json:"finished_at,omitempty"`
	ExpireAt        time.Time              `firestore:"expire_at" json:"expire_at"`

	// EventRef is the inbound_event_id's keyed ref (logging.Hasher.Ref), the event_ref of its log
	// lines, so wapipe inspect finds the event from a log line.
	EventRef string `firestore:"event_ref,omitempty" json:"event_ref,omitempty"`
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

// Trace states. A trace is written once an attempt is over (PutTrace); traces written by
// earlier versions may also be "started".
const (
	TraceStarted  = "started"
	TraceFinished = "finished"
	TraceRetrying = "retrying"
)

// PutTrace writes an attempt's trace, whole, in one write: its end (FinishedAt is now) with
// what it did, StartedAt as the caller set it (now when zero). One write per attempt instead of
// one at each end: a trace exists to explain an event afterwards, and an attempt that dies half
// way leaves its task to be retried, whose trace then tells. Outbound may hold any number of
// targets: the trace keeps counts of all and MaxTraceTargets of them; Error is cut short.
func (r *Traces) PutTrace(ctx context.Context, t Trace) error {
	now := r.opts.Now()
	if t.StartedAt.IsZero() {
		t.StartedAt = now
	}
	t.FinishedAt, t.ExpireAt = now, now.Add(r.opts.Retention)
	t.Outbound, t.OutboundCounts, t.OutboundOmitted = boundTargets(t.Outbound)
	t.Error = truncate(t.Error, maxTraceError)
	if _, err := r.fs.Collection(InboundTraces).Doc(DocID(t.InboundEventID)).Set(ctx, t); err != nil {
		return fmt.Errorf("write trace: %w", err)
	}
	return nil
}

// Bounds of a trace document. Firestore refuses a document over 1 MiB, and a trace that cannot
// be written fails its task on every attempt; with these caps a trace stays under about 300 KiB
// whatever the batch (a delivery holds up to some 4,600 messages).
const (
	// MaxTraceTargets is how many enqueue outcomes a trace keeps one by one.
	MaxTraceTargets = 200
	// maxTraceTargetError and maxTraceError cap the error texts, which quote one error per
	// failed enqueue.
	maxTraceTargetError = 256
	maxTraceError       = 8 << 10
)

// GetTrace reads an event's trace.
func (r *Traces) GetTrace(ctx context.Context, eventID string) (Trace, error) {
	return getDoc[Trace](ctx, r.fs.Collection(InboundTraces).Doc(DocID(eventID)), "trace")
}

// boundTargets keeps up to MaxTraceTargets targets, failures first, then in key order (so a
// retried attempt keeps the same ones), with each error cut short; counts are of all targets by
// status.
func boundTargets(all map[string]TraceTarget) (kept map[string]TraceTarget, counts map[string]int64, omitted int64) {
	keys := make([]string, 0, len(all))
	counts = map[string]int64{}
	for k, t := range all {
		keys = append(keys, k)
		counts[t.Status]++
	}
	failedFirst := func(k string) int {
		if all[k].Status == "failed" {
			return 0
		}
		return 1
	}
	slices.SortFunc(keys, func(a, b string) int {
		return cmp.Or(cmp.Compare(failedFirst(a), failedFirst(b)), strings.Compare(a, b))
	})
	kept = make(map[string]TraceTarget, min(len(keys), MaxTraceTargets))
	for _, k := range keys[:min(len(keys), MaxTraceTargets)] {
		t := all[k]
		t.Error = truncate(t.Error, maxTraceTargetError)
		kept[k] = t
	}
	return kept, counts, int64(len(keys) - len(kept))
}

// truncate cuts s to at most n bytes, on a rune boundary, marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const mark = "…[truncated]"
	cut := n - len(mark)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + mark
}

// GetTraceByRef reads the trace whose event_ref is ref; ErrNotFound when none has it.
func (r *Traces) GetTraceByRef(ctx context.Context, ref string) (Trace, error) {
	return firstWhere[Trace](ctx, r.fs.Collection(InboundTraces).Where("event_ref", "==", ref), "trace")
}
