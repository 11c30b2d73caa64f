package store

import (
	"crypto/sha256"
	"encoding/hex"
	"time"
)

// Firestore collections of the contract whose documents expire. Every document in them has an
// expire_at timestamp that a TTL policy (terraform/firestore.tf) deletes on. The tenants'
// collections (tenants.go) do not expire, except their invites.
const (
	InboundEvents    = "inbound_events"
	InboundTraces    = "inbound_traces"
	OutboundMessages = "outbound_messages"
	MessageStatuses  = "message_statuses"
	DeadLetters      = "dead_letters"
	Conversations    = "conversations"
	// SenderWindows holds the per-contact counters: one turnstate.Window per (tenant, sender),
	// the sender rate limit, and one count per (tenant, sender, quota period), the contact's
	// share of the monthly LLM quota.
	SenderWindows = "sender_windows"
	// Usage holds one LLM call counter per (tenant, quota period); it does not expire.
	Usage = "usage"
)

// ConversationMessages is the subcollection of a conversation's stored messages (its inbox).
const ConversationMessages = "messages"

// UsageCalls is the subcollection, under a usage counter, of the markers of the calls it counted,
// so a call is counted once however often its turn is redone.
const UsageCalls = "calls"

// UsageShards is the subcollection, under a usage counter, of the shards that take most of its
// calls, so a busy tenant's calls do not all write one document; they do not expire.
const UsageShards = "shards"

// PayloadChunks is the subcollection, under an inbound_events document, that holds a payload too
// large for one task (Cloud Tasks caps a task at 1 MB, Firestore a document at 1 MiB). It has its
// own TTL policy, as TTL policies apply per collection group.
const PayloadChunks = "payload_chunks"

// Collections lists every collection group with a TTL policy. Usage counters are not in it: a
// tenant's monthly usage is kept (tenants do not expire either); their call markers are.
func Collections() []string {
	return []string{InboundEvents, InboundTraces, OutboundMessages, MessageStatuses, DeadLetters, PayloadChunks, TenantInvites,
		Conversations, ConversationMessages, SenderWindows, UsageCalls, Actions, ConnectStates, HeldMessages, ChoiceQuestions, BilledMessages, BudgetAlerts}
}

// DurableCollections lists the collection groups whose documents never expire: the tenants,
// their routing index, the members who joined by invite, the tenants' contacts and their
// aliases (deleted with their tenant), the monthly usage counters and their shards, the API keys
// (revoked, not deleted), the console's audit entries, the contacts' marketing preferences, what
// the template webhooks said, and the data migrations' markers.
func DurableCollections() []string {
	return []string{TenantsCollection, PhoneNumbers, TenantMembers, TenantContacts, ContactAliases, Usage, UsageShards, APIKeysCollection,
		AuditCollection, ContactPreferences, TemplatesCollection, Migrations}
}

// ExpireAtField is the TTL field of every document.
const ExpireAtField = "expire_at"

// DefaultRetention is how long records other than the dedupe markers are kept.
const DefaultRetention = 30 * 24 * time.Hour

// DocID turns a key that may hold characters Firestore forbids in ids (Meta's wamids are base64
// and may contain "/") into a fixed-length id.
func DocID(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}
