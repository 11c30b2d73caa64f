// Package dedupe is the webhook's mark_if_new: a marker per inbound_event_id in Firestore
// (inbound_events), created once with one atomic create, that tells the first delivery of an
// event from a redelivery.
//
// The marker does not record whether the event's inbound task was created: the task's name,
// derived from the inbound_event_id, does. A delivery that creates the marker creates the task; a
// delivery that finds the marker creates the task again by the same name, and Cloud Tasks'
// AlreadyExists says it was queued already. So a new event costs one Firestore create and one
// CreateTask and nothing after, and an instance that died between marker and task, or a task that
// could not be created, heals on Meta's redelivery with no lease, no takeover and no wait.
//
// This package holds the marker; store.Markers keeps it in Firestore.
package dedupe
