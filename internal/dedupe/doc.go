// Package dedupe is the webhook's mark_if_new: a marker per inbound_event_id in Firestore
// (inbound_events) that lets exactly one delivery of an event create its inbound task.
//
// A marker is created atomically in state "pending" with a short lease, and moves to "enqueued"
// once the task exists. Because the marker records whether the task was created, it never strands
// an event: if creating the task fails the marker is released ("failed") and Meta's redelivery
// goes through, and a marker left "pending" by an instance that died is taken over once its lease
// has run out. Two instances that both end up creating the task are kept to one task by its
// deterministic name.
//
// This package holds the rules: the marker, its states and what an existing marker means for a
// new delivery (Decide). store.Markers keeps the markers in Firestore and applies the rules.
package dedupe
