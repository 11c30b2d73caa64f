package store

import (
	"context"
	"fmt"

	"cloud.google.com/go/firestore"

	"github.com/wapipe/wapipe/internal/dedupe"
)

// Lookups by event_ref, the keyed ref of an inbound_event_id that log lines carry instead of the
// id (CONTRACT.md, Logs): an operator holding a log line finds the event with wapipe inspect.
// Each is an equality query on one field, which Firestore's automatic single-field index serves.

// MarkerByRef reads the marker whose event_ref is ref; ErrNotFound when none has it.
func (s *Markers) MarkerByRef(ctx context.Context, ref string) (dedupe.Marker, error) {
	return firstWhere[dedupe.Marker](ctx, s.fs.Collection(InboundEvents).Where("event_ref", "==", ref), "marker")
}

// TraceByRef reads the trace whose event_ref is ref; ErrNotFound when none has it.
func (r *Traces) TraceByRef(ctx context.Context, ref string) (Trace, error) {
	return firstWhere[Trace](ctx, r.fs.Collection(InboundTraces).Where("event_ref", "==", ref), "trace")
}

// firstWhere reads the first document q finds.
func firstWhere[T any](ctx context.Context, q firestore.Query, what string) (T, error) {
	var v T
	docs, err := q.Limit(1).Documents(ctx).GetAll()
	if err != nil {
		return v, fmt.Errorf("query %s by event_ref: %w", what, err)
	}
	if len(docs) == 0 {
		return v, ErrNotFound
	}
	if err := docs[0].DataTo(&v); err != nil {
		return v, fmt.Errorf("decode %s: %w", what, err)
	}
	return v, nil
}
