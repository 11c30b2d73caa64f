package store

import (
	"context"
	"fmt"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/wapipe/wapipe/internal/dedupe"
)

// Markers keeps the dedupe markers (inbound_events), one per inbound_event_id (see package
// dedupe).
type Markers struct {
	fs  *firestore.Client
	ttl time.Duration
	now func() time.Time
	ref func(string) string
}

// MarkerOptions configure Markers.
type MarkerOptions struct {
	// TTL sets expire_at = now + TTL on each marker (DEDUPE_TTL); dedupe.DefaultTTL when zero.
	TTL time.Duration
	// Now is time.Now when nil.
	Now func() time.Time
	// EventRef, when set, gives each new marker's event_ref (logging.Hasher.Ref), which
	// GetMarkerByRef finds.
	EventRef func(eventID string) string
}

// NewMarkers returns the marker store.
func NewMarkers(db *DB, opts MarkerOptions) *Markers {
	s := &Markers{fs: db.fs, ttl: opts.TTL, now: opts.Now, ref: opts.EventRef}
	if s.ttl == 0 {
		s.ttl = dedupe.DefaultTTL
	}
	if s.now == nil {
		s.now = time.Now
	}
	return s
}

func (s *Markers) doc(eventID string) *firestore.DocumentRef {
	return s.fs.Collection(InboundEvents).Doc(DocID(eventID))
}

// MarkIfNew is mark_if_new: one atomic create of the event's marker, with its expire_at. It
// reports true when this call created the marker, false when the event was marked before. It is
// the only write the webhook makes for an event.
func (s *Markers) MarkIfNew(ctx context.Context, eventID, correlationID string) (bool, error) {
	now := s.now()
	m := dedupe.Marker{
		EventID:       eventID,
		State:         dedupe.StateReceived,
		CorrelationID: correlationID,
		CreatedAt:     now,
		ExpireAt:      now.Add(s.ttl),
	}
	if s.ref != nil {
		m.EventRef = s.ref(eventID)
	}
	_, err := s.doc(eventID).Create(ctx, m)
	switch status.Code(err) {
	case codes.OK:
		return true, nil
	case codes.AlreadyExists:
		return false, nil
	default:
		return false, fmt.Errorf("create marker: %w", err)
	}
}

// Get reads one marker.
func (s *Markers) Get(ctx context.Context, eventID string) (dedupe.Marker, error) {
	return getDoc[dedupe.Marker](ctx, s.doc(eventID), "marker")
}

// Lookups by event_ref, the keyed ref of an inbound_event_id that log lines carry instead of the
// id (CONTRACT.md, Logs): an operator holding a log line finds the event with wapipe inspect.
// Each is an equality query on one field, which Firestore's automatic single-field index serves.

// GetMarkerByRef reads the marker whose event_ref is ref; ErrNotFound when none has it.
func (s *Markers) GetMarkerByRef(ctx context.Context, ref string) (dedupe.Marker, error) {
	return firstWhere[dedupe.Marker](ctx, s.fs.Collection(InboundEvents).Where("event_ref", "==", ref), "marker")
}
