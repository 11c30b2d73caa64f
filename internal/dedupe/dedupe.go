// Package dedupe is the webhook's mark_if_new: a marker per inbound_event_id in Firestore
// (inbound_events) that lets exactly one delivery of an event create its inbound task.
//
// A marker is created atomically in state "pending" with a short lease, and moves to "enqueued"
// once the task exists. Because the marker records whether the task was created, it never strands
// an event: if creating the task fails the marker is released ("failed") and Meta's redelivery
// goes through, and a marker left "pending" by an instance that died is taken over once its lease
// has run out. Two instances that both end up creating the task are kept to one task by its
// deterministic name.
package dedupe

import (
	"context"
	"errors"
	"fmt"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/wapipe/wapipe/internal/store"
)

// Marker states.
const (
	StatePending  = "pending"
	StateEnqueued = "enqueued"
	StateFailed   = "failed"
)

// Outcome is what Begin decided for one delivery.
type Outcome int

const (
	// Acquired: this delivery owns the event and must create its task, then Complete or Release.
	Acquired Outcome = iota + 1
	// Duplicate: the event's task already exists; answer 200 and create nothing.
	Duplicate
	// InFlight: another delivery owns the event and its lease is still running.
	InFlight
)

func (o Outcome) String() string {
	switch o {
	case Acquired:
		return "acquired"
	case Duplicate:
		return "duplicate"
	case InFlight:
		return "in_flight"
	default:
		return "unknown"
	}
}

// Result is Begin's answer.
type Result struct {
	Outcome Outcome
	// TakenOver is true when Acquired took over a stale or released marker.
	TakenOver bool
	// Attempt counts the deliveries that have owned the event, this one included.
	Attempt int64
}

// DefaultLease is how long a delivery owns an event before another may take it over. It is well
// above the webhook's own time budget (a Firestore write and a CreateTask) and well below Meta's
// redelivery interval, so a crashed instance delays an event by one redelivery at most.
const DefaultLease = 30 * time.Second

// Store keeps the markers.
type Store struct {
	fs    *firestore.Client
	ttl   time.Duration
	lease time.Duration
	now   func() time.Time
}

// Options configure a Store.
type Options struct {
	// TTL sets expire_at = now + TTL on each marker (DEDUPE_TTL).
	TTL time.Duration
	// Lease is DefaultLease when zero.
	Lease time.Duration
	// Now is time.Now when nil; tests move it forward to age a lease.
	Now func() time.Time
}

// New returns a Store on the given Firestore client.
func New(fs *firestore.Client, opts Options) *Store {
	s := &Store{fs: fs, ttl: opts.TTL, lease: opts.Lease, now: opts.Now}
	if s.lease == 0 {
		s.lease = DefaultLease
	}
	if s.ttl == 0 {
		s.ttl = 168 * time.Hour
	}
	if s.now == nil {
		s.now = time.Now
	}
	return s
}

// Marker is one event's dedupe record.
type Marker struct {
	EventID       string    `firestore:"inbound_event_id" json:"inbound_event_id"`
	State         string    `firestore:"state" json:"state"`
	CorrelationID string    `firestore:"correlation_id" json:"correlation_id"`
	LeaseUntil    time.Time `firestore:"lease_until" json:"lease_until"`
	Attempt       int64     `firestore:"attempt" json:"attempt"`
	TaskName      string    `firestore:"task_name,omitempty" json:"task_name,omitempty"`
	CreatedAt     time.Time `firestore:"created_at" json:"created_at"`
	UpdatedAt     time.Time `firestore:"updated_at" json:"updated_at"`
	ExpireAt      time.Time `firestore:"expire_at" json:"expire_at"`
}

func (s *Store) doc(eventID string) *firestore.DocumentRef {
	return s.fs.Collection(store.InboundEvents).Doc(store.DocID(eventID))
}

// Begin is mark_if_new: one atomic create of the marker; when the marker exists already, it says
// whether the event is done (Duplicate), owned by a live delivery (InFlight), or free to take over
// (Acquired with TakenOver).
func (s *Store) Begin(ctx context.Context, eventID, correlationID string) (Result, error) {
	now := s.now()
	m := Marker{
		EventID:       eventID,
		State:         StatePending,
		CorrelationID: correlationID,
		LeaseUntil:    now.Add(s.lease),
		Attempt:       1,
		CreatedAt:     now,
		UpdatedAt:     now,
		ExpireAt:      now.Add(s.ttl),
	}
	ref := s.doc(eventID)
	_, err := ref.Create(ctx, m)
	if err == nil {
		return Result{Outcome: Acquired, Attempt: 1}, nil
	}
	if status.Code(err) != codes.AlreadyExists {
		return Result{}, fmt.Errorf("create marker: %w", err)
	}

	// The fast path reads without a transaction: most existing markers are finished duplicates.
	snap, err := ref.Get(ctx)
	if err != nil && status.Code(err) != codes.NotFound {
		return Result{}, fmt.Errorf("read marker: %w", err)
	}
	if err == nil {
		var cur Marker
		if err := snap.DataTo(&cur); err != nil {
			return Result{}, fmt.Errorf("decode marker: %w", err)
		}
		if r, done := s.decide(cur, now); done {
			return r, nil
		}
	}

	// Take over in a transaction, so two deliveries cannot both take over the same stale marker.
	var res Result
	err = s.fs.RunTransaction(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
		now := s.now()
		snap, err := tx.Get(ref)
		if status.Code(err) == codes.NotFound {
			// Deleted by TTL between our create and now: start afresh.
			res = Result{Outcome: Acquired, Attempt: 1}
			return tx.Create(ref, m)
		}
		if err != nil {
			return err
		}
		var cur Marker
		if err := snap.DataTo(&cur); err != nil {
			return err
		}
		if r, done := s.decide(cur, now); done {
			res = r
			return nil
		}
		res = Result{Outcome: Acquired, TakenOver: true, Attempt: cur.Attempt + 1}
		return tx.Update(ref, []firestore.Update{
			{Path: "state", Value: StatePending},
			{Path: "lease_until", Value: now.Add(s.lease)},
			{Path: "attempt", Value: cur.Attempt + 1},
			{Path: "correlation_id", Value: correlationID},
			{Path: "updated_at", Value: now},
		})
	})
	if err != nil {
		return Result{}, fmt.Errorf("take over marker: %w", err)
	}
	return res, nil
}

// decide returns the outcome for an existing marker unless it may be taken over.
func (s *Store) decide(cur Marker, now time.Time) (Result, bool) {
	switch {
	case cur.State == StateEnqueued:
		return Result{Outcome: Duplicate, Attempt: cur.Attempt}, true
	case cur.State == StatePending && now.Before(cur.LeaseUntil):
		return Result{Outcome: InFlight, Attempt: cur.Attempt}, true
	default:
		return Result{}, false
	}
}

// Complete records that the event's task exists, which makes every later delivery a Duplicate.
func (s *Store) Complete(ctx context.Context, eventID, taskName string) error {
	_, err := s.doc(eventID).Update(ctx, []firestore.Update{
		{Path: "state", Value: StateEnqueued},
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
func (s *Store) Release(ctx context.Context, eventID string) error {
	_, err := s.doc(eventID).Update(ctx, []firestore.Update{
		{Path: "state", Value: StateFailed},
		{Path: "lease_until", Value: time.Time{}},
		{Path: "updated_at", Value: s.now()},
	})
	if err != nil {
		return fmt.Errorf("release marker: %w", err)
	}
	return nil
}

// ErrNotFound is returned by Get for an event with no marker.
var ErrNotFound = errors.New("marker not found")

// Get reads one marker.
func (s *Store) Get(ctx context.Context, eventID string) (Marker, error) {
	snap, err := s.doc(eventID).Get(ctx)
	if status.Code(err) == codes.NotFound {
		return Marker{}, ErrNotFound
	}
	if err != nil {
		return Marker{}, fmt.Errorf("read marker: %w", err)
	}
	var m Marker
	if err := snap.DataTo(&m); err != nil {
		return Marker{}, fmt.Errorf("decode marker: %w", err)
	}
	return m, nil
}
