// Package notify tells a tenant's members of the actions other members ran: after an intent's
// action succeeds, each member with one of the intent's `notify` roles (the member who asked
// excepted) gets one localized notification naming the intent, the sender and the confirmed
// data. It goes through the one send path: an outbox record and its process_send task, whose
// delivery policy (delivery.Notification) decides at send time: text inside the member's
// 24-hour window, the tenant's templates.notify outside it, else skipped and logged. Each
// notification's record key is derived from the action and the member, keyed with a server
// secret, so a retried or redelivered action task queues nothing twice.
package notify
