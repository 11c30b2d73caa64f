// Package fanout turns one inbound delivery (a webhook POST Meta made) into work: each message
// becomes an outbound task on the queue of the tenant its business number routes to (or the
// single-tenant default's), each delivery status is applied once to the outbound record it is
// about, and the attempt leaves one trace. Every store call is bounded, so an unreachable
// Firestore fails the attempt in seconds.
package fanout
