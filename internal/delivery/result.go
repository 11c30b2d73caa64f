package delivery

import (
	"errors"
	"time"

	"github.com/wapipe/wapipe/internal/store"
)

// Status is how a delivery ended.
type Status int

const (
	// Sent: Meta accepted the message (Result.MessageID).
	Sent Status = iota + 1
	// Settled: an earlier attempt already sent, failed or skipped it (Result.Record).
	Settled
	// Skipped: there was nothing to send (the responder had no reply); the record says skipped.
	Skipped
	// Refused: Meta refused it for good, or the closed window did; the record is failed with
	// Result.Reason and Meta's Result.Code.
	Refused
	// Unsendable: nobody can send it until an operator acts (tenant gone, no token, a token that
	// cannot be opened, a stored message that is not a Graph message); the record is failed.
	Unsendable
	// Parked: the tenant needs a new access token; a new token releases the send.
	Parked
	// Retry: a later attempt may send it (Result.Err, Result.RetryAfter).
	Retry
	// OutcomeUnknown: an earlier send may have reached Meta, no status webhook said so and no
	// evidence said it did not, until the cap (Deliverer.MaxUnknownWait): the record is failed (a
	// late status still settles it to sent) rather than sent twice, and dead-lettered.
	OutcomeUnknown
	// Invalid: the task names no record of its tenant; nothing was changed.
	Invalid
	// Held: an earlier send's outcome is unknown past the reconcile window and nothing says yet
	// whether Meta took it: the wait is held on the record, which the sweep ends (HeldSweep), not
	// on the task, which ends.
	Held
)

// Reason codes stored in an outbound record's failure_reason (store.OutboundRecord.FailureReason)
// and shown by the api.
const (
	ReasonRefused          = "whatsapp_permanent_error"
	ReasonOutsideWindow    = "outside_customer_service_window"
	ReasonNoToken          = "no_token"
	ReasonTenantNotFound   = "tenant_not_found"
	ReasonTokenUnreadable  = "token_unreadable"
	ReasonMalformedMessage = "malformed_message"
	ReasonOutcomeUnknown   = "outcome_unknown"
	ReasonRetriesExhausted = "retries_exhausted"
	// ReasonOptedOut: Meta's 131050, the contact stopped marketing messages from the business: a
	// deliberate refusal, not a dead letter.
	ReasonOptedOut = "contact_opted_out"
	// ReasonBudgetExhausted: a template wapipe would send on its own (the reengage template, a
	// notification's) while the tenant's month is past its budget: skipped, a record state.
	ReasonBudgetExhausted = "budget_exhausted"
)

// CodeOptedOut is Meta's 131050: the contact chose to stop receiving marketing messages.
const CodeOptedOut = 131050

// Retry reasons (Result.Reason of a Retry without an error): no failure, only a later attempt.
const (
	RetryAwaitingReconciliation = "awaiting_reconciliation"
	RetryTenantReauthorized     = "tenant_reauthorized"
)

// ErrOutcomeUnknown is the failure of a send whose earlier send's outcome stayed unknown.
var ErrOutcomeUnknown = errors.New("outcome_unknown: an earlier send may have reached Meta and no status webhook reconciled it")

// Result is what a delivery did.
type Result struct {
	Status Status
	// MessageID is Meta's message id of a Sent message.
	MessageID string
	// Record is the record of a Settled send.
	Record store.OutboundRecord
	// Reason is the recorded reason code (Refused, Unsendable, OutcomeUnknown), or a Retry's
	// reason when there is no error.
	Reason string
	// Code is Meta's error code, 0 when none.
	Code int
	// DeadLetter: the task is to be kept as a dead letter: the send ended unsent (Refused,
	// Unsendable, OutcomeUnknown, Retry on the last attempt) and the policy dead-letters the task,
	// not the record (Policy.RecordDeadLetter).
	DeadLetter bool
	// DeadLetterID is the dead letter of the record itself, written by the deliverer when the
	// policy dead-letters the record: the task ends normally.
	DeadLetterID string
	// Err is the cause of a Refused, Unsendable, Invalid or Retry result.
	Err error
	// RetryAfter is when Meta asked to be called again, 0 when it did not say.
	RetryAfter time.Duration
	// Class names the failure in logs and dead letters (graph.Class, or the reason).
	Class string
}
