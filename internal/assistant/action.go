package assistant

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
	"time"

	"github.com/wapipe/wapipe/internal/graph"
	"github.com/wapipe/wapipe/internal/i18n"
)

// ActionRequest is the body of the action call (the contract's names). The worker runs it as
// its own task, signs the raw body and sends ActionID as the Idempotency-Key.
type ActionRequest struct {
	ActionID       string         `json:"action_id"`
	TenantID       string         `json:"tenant_id"`
	Intent         string         `json:"intent"`
	Data           map[string]any `json:"data"`
	From           ActionFrom     `json:"from"`
	ConversationID string         `json:"conversation_id"`
	// RequestedAt is the Input.Now of the turn that asked for the call (the confirmation for a
	// confirmed action), so a redone turn yields the same body.
	RequestedAt time.Time `json:"requested_at"`
}

// ActionFrom is who asked for an action: their phone when known, their business-scoped user id
// (BSUID) and username when known, their name and role.
type ActionFrom struct {
	WaID     string `json:"wa_id,omitempty"`
	UserID   string `json:"user_id,omitempty"`
	Username string `json:"username,omitempty"`
	// Name is the member's name, else the contact's WhatsApp profile name.
	Name string `json:"name"`
	// Role is the member's role, empty for a non-member (audience public).
	Role string `json:"role"`
}

// ActionID is the id of the action a message asks for: a hash of the tenant, the conversation
// and the inbound message that created the action (for a confirmed action, the message that
// created the pending action, not the confirmation). It is stable across redone turns, so the
// business sees one Idempotency-Key per request whatever wapipe retries.
func ActionID(tenantID, conversationID, messageID string) string {
	return "act_" + hashIDs("action", tenantID, conversationID, messageID)
}

// callID names one LLM call of a turn for Guard.ReserveCall: attempt 0 is the turn's call,
// attempt 1 its immediate retry after an invalid answer.
func callID(tenantID, conversationID, messageID string, attempt int) string {
	return "call_" + hashIDs("llm-call", tenantID, conversationID, messageID, strconv.Itoa(attempt))
}

// hashIDs hashes its parts, NUL-separated, to 32 hex characters (128 bits): ids from Meta hold
// phone numbers, and a hash neither leaks them nor depends on their length.
func hashIDs(kind string, parts ...string) string {
	sum := sha256.Sum256([]byte(kind + "\x00" + strings.Join(parts, "\x00")))
	return hex.EncodeToString(sum[:16])
}

// Texts of the action step: after a confirmation the user gets exactly one of them.

// ActionReply is the text sent after a 2xx answer: the business's reply, else the localized
// "done".
func ActionReply(lang, reply string) string {
	if strings.TrimSpace(reply) != "" {
		return graph.Clip(reply, MaxTextLen)
	}
	return i18n.Text(lang, i18n.Done)
}

// ActionRefusal is the text sent after a 4xx answer: the business's refusal, else the localized
// action error (a 4xx without a reply is the business's failure, not the user's).
func ActionRefusal(lang, reply string) string {
	if strings.TrimSpace(reply) != "" {
		return graph.Clip(reply, MaxTextLen)
	}
	return i18n.Text(lang, i18n.ActionError)
}

// ActionFailed is the text sent when the action failed on its last attempt.
func ActionFailed(lang string) string { return i18n.Text(lang, i18n.ActionError) }
