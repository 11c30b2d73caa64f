package dedupe

import "time"

// StateReceived is the state of every marker this version writes: the event was received once.
// Markers written by earlier versions may hold pending, enqueued or failed; they mean the same.
const StateReceived = "received"

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

// DefaultTTL is how long a marker lives when DEDUPE_TTL does not say.
const DefaultTTL = 168 * time.Hour
