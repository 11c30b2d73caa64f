package tasks

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/wapipe/wapipe/internal/keyedid"
	"github.com/wapipe/wapipe/internal/whatsapp"
)

// Routes on the worker that tasks target.
const (
	ProcessInboundPath  = "/internal/process_inbound"
	ProcessOutboundPath = "/internal/process_outbound"
)

// Headers every task carries, and the ones Cloud Tasks adds on dispatch that the worker reads.
const (
	HeaderInternalToken   = "X-Internal-Token"
	HeaderCorrelationID   = "X-Correlation-ID"
	HeaderTaskName        = "X-CloudTasks-TaskName"
	HeaderQueueName       = "X-CloudTasks-QueueName"
	HeaderTaskRetryCount  = "X-CloudTasks-TaskRetryCount"
	HeaderTaskExecCount   = "X-CloudTasks-TaskExecutionCount"
	HeaderTaskETA         = "X-CloudTasks-TaskETA"
	HeaderPreviousResp    = "X-CloudTasks-TaskPreviousResponse"
	HeaderTaskRetryReason = "X-CloudTasks-TaskRetryReason"
)

// MaxTaskBodyBytes is what wapipe lets a task body grow to before the payload goes out of band.
// Cloud Tasks refuses tasks over 1 MB (the whole task, headers and name included), so this keeps
// a margin for the rest.
const MaxTaskBodyBytes = 900 * 1024

// Inbound is the body of a task on the inbound queue: one Meta webhook delivery. Exactly one of
// Payload and PayloadRef is set: a payload too large for a task is stored out of band, in chunks
// under the event's inbound_events document (internal/store, Payloads), and PayloadRef names it.
type Inbound struct {
	InboundEventID string          `json:"inbound_event_id"`
	CorrelationID  string          `json:"correlation_id"`
	ReceivedAt     time.Time       `json:"received_at"`
	Payload        json.RawMessage `json:"payload,omitempty"`
	PayloadRef     string          `json:"payload_ref,omitempty"`
}

// Outbound is the body of a task on the outbound queue: the reply to one inbound message.
type Outbound struct {
	IdempotencyKey string `json:"idempotency_key"`
	CorrelationID  string `json:"correlation_id"`
	InboundEventID string `json:"inbound_event_id"`
	PhoneNumberID  string `json:"phone_number_id"`
	// To is the sender's phone number, absent when Meta did not share it; UserID the sender's
	// business-scoped user id (BSUID). At least one is set (CONTRACT.md, Wave 4).
	To      string           `json:"to,omitempty"`
	UserID  string           `json:"user_id,omitempty"`
	Message whatsapp.Message `json:"message"`
	// ReceivedAt is when the webhook received the delivery, carried so the outbound record can
	// measure webhook-to-sent latency. Not in the contract's field list; additive.
	ReceivedAt time.Time `json:"received_at,omitzero"`
	// TenantID is the tenant that owns PhoneNumberID; "" is the single-tenant default (the
	// number no tenant owns, served with WHATSAPP_ACCESS_TOKEN). Additive (Wave 2).
	TenantID string `json:"tenant_id,omitempty"`
}

// InboundTaskID is the task id of the inbound task for an event. Cloud Tasks advises against
// sequential names (they hot-spot its index), and Meta's ids are not valid task ids, so the id is
// a hash; being deterministic, a second attempt to create it answers AlreadyExists.
func InboundTaskID(inboundEventID string) string {
	return hashID("inbound", inboundEventID) + "-in"
}

// OutboundTaskID is the task id of the outbound task answering an inbound message, derived from
// the message id alone, so the same message in two deliveries or two inbound tasks yields one
// task.
func OutboundTaskID(messageID string) string {
	return hashID("outbound", messageID) + "-out"
}

// ChosenTaskID is the task id of the outbound task of a message held until its sender chose a
// tenant on a shared number (package choice): not OutboundTaskID, whose name its first task
// took, and deterministic, so a retried release creates no second task.
func ChosenTaskID(messageID string) string {
	return hashID("chosen", messageID) + "-out"
}

// IdempotencyKey is the key of the outbound record (outbound_messages) for the reply to an
// inbound message. It also travels to Meta as biz_opaque_callback_data, so a status webhook can
// name the record it is about. It is keyed (keyedid.Keyer.ReplyKey): whoever else sees the
// wamid cannot compute it and echo it in a status of their own.
func IdempotencyKey(k *keyedid.Keyer, messageID string) string {
	return k.ReplyKey(messageID, 0)
}

// LegacyIdempotencyKey is the unkeyed key IdempotencyKey replaced: the records of replies sent
// before it keep it, and their statuses carry it.
func LegacyIdempotencyKey(messageID string) string {
	return idempotencyKeyPrefix + hashID("reply", messageID)
}

// LegacyReplyKey is the unkeyed key of reply index of a turn, before keys were keyed
// (keyedid.Keyer.ReplyKey): LegacyIdempotencyKey for the first, a hash for the others.
func LegacyReplyKey(messageID string, index int) string {
	if index == 0 {
		return LegacyIdempotencyKey(messageID)
	}
	sum := sha256.Sum256([]byte("reply\x00" + messageID + "\x00" + strconv.Itoa(index)))
	return idempotencyKeyPrefix + hex.EncodeToString(sum[:16])
}

const idempotencyKeyPrefix = "reply-"

// ReplayTaskID is the task id of the replay of a dead letter: deterministic, so replaying the same
// dead letter twice meets AlreadyExists instead of making a second task.
func ReplayTaskID(deadLetterID string) string {
	return hashID("replay", deadLetterID) + "-replay"
}

// IsIdempotencyKey reports whether s has the form IdempotencyKey gives, so a status webhook's
// biz_opaque_callback_data can be told apart from data another sender on the number set.
func IsIdempotencyKey(s string) bool {
	h, ok := strings.CutPrefix(s, idempotencyKeyPrefix)
	if !ok {
		h, ok = strings.CutPrefix(s, sendKeyPrefix) // tasks/send.go
	}
	if !ok || len(h) != 32 {
		return false
	}
	_, err := hex.DecodeString(h)
	return err == nil
}

func hashID(kind, id string) string {
	sum := sha256.Sum256([]byte(kind + "\x00" + id))
	return hex.EncodeToString(sum[:16])
}
