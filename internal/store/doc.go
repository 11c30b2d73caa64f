// Package store is wapipe's Firestore: the only code that imports the Firestore client. DB is the
// connection (Open, or OpenEmulator for the local stack and the CLI); on it, one store per
// collection and purpose, each with the methods its consumers use: Outbound (outbound_messages,
// the idempotency record of each reply, and the counts health reads), Statuses
// (message_statuses), Traces (inbound_traces), DeadLetterStore (dead_letters), Markers
// (inbound_events, the webhook's dedupe markers: mark_if_new, markers.go), Payloads
// (payloads too large for a task), Tenants (tenants, the phone_numbers routing index with the
// tenants of a shared number and, under it, the tenant each contact chose there by invite code,
// and each tenant's invites and the members who joined by invite; one part per concern:
// TenantFiles, Memberships, Invites, TenantAuth, TenantAccounts), ConversationStore (conversations,
// their stored messages and inbox, and the lease that serialises their turns) and Guard (usage
// and sender_windows: the assistant's shared counters). Every document of an expiring collection
// (Collections) carries the expire_at field its TTL policy deletes on; tenants and the usage
// counters (with their shards) do not expire (DurableCollections). Keys Firestore could not take as ids are hashed
// (DocID). Transactions read through the helpers of tx.go (readTx, getTx, updateTx…), into new
// values on every attempt, so nothing an aborted attempt read is written back or returned.
// WindowOpen is the one test of a contact's 24-hour customer service window, on the
// last_inbound_at a conversation keeps.
package store
