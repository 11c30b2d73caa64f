package store

import "time"

// CustomerServiceWindow is how long after a contact's last message (its conversation's
// LastInboundAt) free-form messages may be sent to them; outside it only templates go out (Meta
// answers 131047 otherwise).
const CustomerServiceWindow = 24 * time.Hour

// WindowOpen reports whether the customer service window of a contact whose last message has
// Meta's time lastInbound (zero: never) is open at now. It is the one test of the window: the
// outbox's when it accepts a send, delivery's when it sends one.
func WindowOpen(lastInbound, now time.Time) bool {
	return !lastInbound.IsZero() && now.Sub(lastInbound) < CustomerServiceWindow
}
