package tasks

import (
	"encoding/json"
	"time"

	"github.com/wapipe/wapipe/internal/keyedid"
)

// ProcessActionPath is the worker route that runs one action call of a tenant's assistant. Its
// tasks go to the tenant's send queue (TenantQueueID), so a slow business endpoint slows only its
// own tenant, with that queue's retries and backoff. Additive to the contract's routes.
const ProcessActionPath = "/internal/process_action"

// Action is the body of an action task: the call a confirmed (or unconfirmed) intent asks for,
// and where its one answer to the user goes.
type Action struct {
	ActionID       string `json:"action_id"`
	TenantID       string `json:"tenant_id"`
	ConversationID string `json:"conversation_id"`
	PhoneNumberID  string `json:"phone_number_id"`
	// ContactID is the contact who asked (ct_…); To its phone when known, UserID its BSUID and
	// ParentUserID its parent BSUID when known (personal data: never log them in clear). The
	// answer goes to the contact as it is known when it is sent.
	ContactID    string `json:"contact_id,omitempty"`
	To           string `json:"to,omitempty"`
	UserID       string `json:"user_id,omitempty"`
	ParentUserID string `json:"parent_user_id,omitempty"`
	// MessageID is the inbound message whose turn asked for the call (a confirmation).
	MessageID      string    `json:"message_id"`
	InboundEventID string    `json:"inbound_event_id,omitempty"`
	CorrelationID  string    `json:"correlation_id,omitempty"`
	ReceivedAt     time.Time `json:"received_at,omitzero"`
	// Request is the action call's body as the turn recorded it (the contract's fields), kept
	// raw so every attempt signs the same bytes.
	Request json.RawMessage `json:"request"`
}

// ActionTaskID is the task id of an action's task: deterministic, so a redone turn that enqueues
// the action again meets AlreadyExists.
func ActionTaskID(actionID string) string { return hashID("action", actionID) + "-act" }

// ActionReplyKey is the idempotency key of the one message that tells the user an action's
// result. It has IdempotencyKey's form, so status webhooks find its record, and is keyed like it.
func ActionReplyKey(k *keyedid.Keyer, actionID string) string {
	return k.ActionReplyKey(actionID)
}

// LegacyActionReplyKey is the unkeyed key ActionReplyKey replaced: an action whose answer was
// sent under it before the upgrade is found by it (package actionrun).
func LegacyActionReplyKey(actionID string) string {
	return idempotencyKeyPrefix + hashID("action-reply", actionID)
}
