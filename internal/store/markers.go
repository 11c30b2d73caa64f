package store

import (
	"context"
	"fmt"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Markers is the webhook's mark_if_new: a dedupe marker per inbound_event_id (inbound_events),
// created once with one atomic create, that tells the first delivery of an event from a
// redelivery.
//
// The marker does not record whether the event's inbound task was created: the task's name,
// derived from the inbound_event_id, does. A delivery that creates the marker creates the task; a
// delivery that finds the marker creates the task again by the same name, and Cloud Tasks'
// AlreadyExists says it was queued already. So a new event costs one Firestore create and one
// CreateTask and nothing after, and an instance that died between marker and task, or a task that
// could not be created, heals on Meta's redelivery with no lease, no takeover and no wait.
type Markers struct {
	fs  *firestore.Client
	ttl time.Duration
	now func() time.Time
	ref func(string) string
}

// MarkerReceived is the state of every marker this version writes: the event was received once.
// Markers written by earlier versions may hold pending, enqueued or failed; they mean the same.
const MarkerReceived = "received"

// Marker is one event's dedupe record.
type Marker struct {
	EventID       string    `firestore:"inbound_event_id" json:"inbound_event_id"`
	State         string    `firestore:"state" json:"state"`
	CorrelationID string    `firestore:"correlation_id" json:"correlation_id"`
	CreatedAt     time.Time `firestore:"created_at" json:"created_at"`
	ExpireAt      time.Time `firestore:"expire_at" json:"expire_at"`

	// EventRef is the event's keyed ref, the event_ref of its log lines (CONTRACT.md, Logs), so
	// wapipe inspect finds the event from a log line.
	EventRef string `firestore:"event_ref,omitempty" json:"event_ref,omitempty"`
}

// DefaultMarkerTTL is how long a marker lives when DEDUPE_TTL does not say.
const DefaultMarkerTTL = 168 * time.Hour

// MarkerOptions configure Markers.
type MarkerOptions struct {
	// TTL sets expire_at = now + TTL on each marker (DEDUPE_TTL); DefaultMarkerTTL when zero.
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
		s.ttl = DefaultMarkerTTL
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
	m := Marker{
		EventID:       eventID,
		State:         MarkerReceived,
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
func (s *Markers) Get(ctx context.Context, eventID string) (Marker, error) {
	return getDoc[Marker](ctx, s.doc(eventID), "marker")
}

// Lookups by event_ref, the keyed ref of an inbound_event_id that log lines carry instead of the
// id (CONTRACT.md, Logs): an operator holding a log line finds the event with wapipe inspect.
// Each is an equality query on one field, which Firestore's automatic single-field index serves.

// GetMarkerByRef reads the marker whose event_ref is ref; ErrNotFound when none has it.
func (s *Markers) GetMarkerByRef(ctx context.Context, ref string) (Marker, error) {
	return firstWhere[Marker](ctx, s.fs.Collection(InboundEvents).Where("event_ref", "==", ref), "marker")
}
