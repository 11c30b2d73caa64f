// Package store is wapipe's Firestore: the only code that imports the Firestore client. DB is the
// connection (Open, or OpenEmulator for the local stack and the CLI); on it, one store per
// collection and purpose, each with the methods its consumers use: Outbound (outbound_messages,
// the idempotency record of each reply, and the counts health reads), Statuses
// (message_statuses), Traces (inbound_traces), DeadLetterStore (dead_letters), Markers
// (inbound_events, the webhook's dedupe markers, by the rules of package dedupe), Payloads
// (payloads too large for a task), ConversationStore (conversations, their stored messages and
// inbox, and the lease that serialises their turns) and Guard (usage and sender_windows: the
// assistant's shared counters). Every document but the usage counters carries the expire_at
// field its collection's TTL policy deletes on, and keys Firestore could not take as ids are
// hashed (DocID).
package store
