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

// Markers keeps the dedupe markers (inbound_events), one per inbound_event_id, by the rules of
// package dedupe.
type Markers struct {
	fs    *firestore.Client
	ttl   time.Duration
	lease time.Duration
	now   func() time.Time
	ref   func(string) string
}

// MarkerOptions configure Markers.
type MarkerOptions struct {
	// TTL sets expire_at = now + TTL on each marker (DEDUPE_TTL); dedupe.DefaultTTL when zero.
	TTL time.Duration
	// Lease is dedupe.DefaultLease when zero.
	Lease time.Duration
	// Now is time.Now when nil; tests move it forward to age a lease.
	Now func() time.Time
	// EventRef, when set, gives each new marker's event_ref (logging.Hasher.Ref), which
	// MarkerByRef finds.
	EventRef func(eventID string) string
}

// NewMarkers returns the marker store.
func NewMarkers(db *DB, opts MarkerOptions) *Markers {
	s := &Markers{fs: db.fs, ttl: opts.TTL, lease: opts.Lease, now: opts.Now, ref: opts.EventRef}
	if s.lease == 0 {
		s.lease = dedupe.DefaultLease
	}
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

// Begin is mark_if_new: one atomic create of the marker; when the marker exists already, it says
// whether the event is done (Duplicate), owned by a live delivery (InFlight), or free to take over
// (Acquired with TakenOver).
func (s *Markers) Begin(ctx context.Context, eventID, correlationID string) (dedupe.Result, error) {
	now := s.now()
	m := dedupe.Marker{
		EventID:       eventID,
		State:         dedupe.StatePending,
		CorrelationID: correlationID,
		LeaseUntil:    now.Add(s.lease),
		Attempt:       1,
		CreatedAt:     now,
		UpdatedAt:     now,
		ExpireAt:      now.Add(s.ttl),
	}
	if s.ref != nil {
		m.EventRef = s.ref(eventID)
	}
	ref := s.doc(eventID)
	_, err := ref.Create(ctx, m)
	if err == nil {
		return dedupe.Result{Outcome: dedupe.Acquired, Attempt: 1}, nil
	}
	if status.Code(err) != codes.AlreadyExists {
		return dedupe.Result{}, fmt.Errorf("create marker: %w", err)
	}

	// The fast path reads without a transaction: most existing markers are finished duplicates.
	snap, err := ref.Get(ctx)
	if err != nil && status.Code(err) != codes.NotFound {
		return dedupe.Result{}, fmt.Errorf("read marker: %w", err)
	}
	if err == nil {
		var cur dedupe.Marker
		if err := snap.DataTo(&cur); err != nil {
			return dedupe.Result{}, fmt.Errorf("decode marker: %w", err)
		}
		if r, done := dedupe.Decide(cur, now); done {
			return r, nil
		}
	}

	// Take over in a transaction, so two deliveries cannot both take over the same stale marker.
	res, err := runTx(ctx, s.fs, nil, func(ctx context.Context, tx *firestore.Transaction) (dedupe.Result, error) {
		now := s.now()
		snap, err := tx.Get(ref)
		if status.Code(err) == codes.NotFound {
			// Deleted by TTL between our create and now: start afresh.
			return dedupe.Result{Outcome: dedupe.Acquired, Attempt: 1}, tx.Create(ref, m)
		}
		if err != nil {
			return dedupe.Result{}, err
		}
		var cur dedupe.Marker
		if err := snap.DataTo(&cur); err != nil {
			return dedupe.Result{}, err
		}
		if r, done := dedupe.Decide(cur, now); done {
			return r, nil
		}
		res := dedupe.Result{Outcome: dedupe.Acquired, TakenOver: true, Attempt: cur.Attempt + 1}
		return res, tx.Update(ref, []firestore.Update{
			{Path: "state", Value: dedupe.StatePending},
			{Path: "lease_until", Value: now.Add(s.lease)},
			{Path: "attempt", Value: cur.Attempt + 1},
			{Path: "correlation_id", Value: correlationID},
			{Path: "updated_at", Value: now},
		})
	})
	if err != nil {
		return dedupe.Result{}, fmt.Errorf("take over marker: %w", err)
	}
	return res, nil
}

// Complete records that the event's task exists, which makes every later delivery a Duplicate.
func (s *Markers) Complete(ctx context.Context, eventID, taskName string) error {
	_, err := s.doc(eventID).Update(ctx, []firestore.Update{
		{Path: "state", Value: dedupe.StateEnqueued},
		{Path: "task_name", Value: taskName},
		{Path: "updated_at", Value: s.now()},
	})
	if err != nil {
		return fmt.Errorf("complete marker: %w", err)
	}
	return nil
}

// Release gives the event up after its task could not be created, so Meta's redelivery is
// processed at once instead of waiting for the lease to run out.
func (s *Markers) Release(ctx context.Context, eventID string) error {
	_, err := s.doc(eventID).Update(ctx, []firestore.Update{
		{Path: "state", Value: dedupe.StateFailed},
		{Path: "lease_until", Value: time.Time{}},
		{Path: "updated_at", Value: s.now()},
	})
	if err != nil {
		return fmt.Errorf("release marker: %w", err)
	}
	return nil
}

// Get reads one marker.
func (s *Markers) Get(ctx context.Context, eventID string) (dedupe.Marker, error) {
	return getDoc[dedupe.Marker](ctx, s.doc(eventID), "marker")
}
