package dedupe

import "time"

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

	// EventRef is the event's keyed ref, the event_ref of its log lines (CONTRACT.md, Logs), so
	// wapipe inspect finds the event from a log line.
	EventRef string `firestore:"event_ref,omitempty" json:"event_ref,omitempty"`
}

// DefaultTTL is how long a marker lives when DEDUPE_TTL does not say.
const DefaultTTL = 168 * time.Hour

// Decide returns the outcome of a delivery that finds the marker cur at now, and false when the
// delivery may take the marker over (released, or its lease has run out).
func Decide(cur Marker, now time.Time) (Result, bool) {
	switch {
	case cur.State == StateEnqueued:
		return Result{Outcome: Duplicate, Attempt: cur.Attempt}, true
	case cur.State == StatePending && now.Before(cur.LeaseUntil):
		return Result{Outcome: InFlight, Attempt: cur.Attempt}, true
	default:
		return Result{}, false
	}
}
