package actioncall

import (
	"encoding/json"
	"fmt"
	"time"
)

// Request is the body of an action call, with the contract's JSON names.
//
// The body must be the same on every attempt of one action (a business may reject a reused
// Idempotency-Key with a different body), so RequestedAt is when the action was requested
// (stored with it), not when the call is sent.
type Request struct {
	ActionID string `json:"action_id"`
	TenantID string `json:"tenant_id"`
	// Intent is the tenant intent's name.
	Intent string `json:"intent"`
	// Data is the intent's fields; nil is sent as {}.
	Data map[string]any `json:"data"`
	// From is the member who asked.
	From           From   `json:"from"`
	ConversationID string `json:"conversation_id"`
	// RequestedAt is sent in RFC 3339, UTC, whole seconds.
	RequestedAt time.Time `json:"requested_at"`
}

// From is the member on whose behalf an action runs.
type From struct {
	// WaID is the member's phone when known; UserID their business-scoped user id (BSUID) and
	// Username their WhatsApp username when known (CONTRACT.md, Wave 4).
	WaID     string `json:"wa_id,omitempty"`
	UserID   string `json:"user_id,omitempty"`
	Username string `json:"username,omitempty"`
	Name     string `json:"name"`
	Role     string `json:"role"`
}

// wireRequest is Request as sent: data never null, requested_at in one fixed format that
// every business's parser accepts (no fractional seconds, "Z").
type wireRequest struct {
	ActionID       string         `json:"action_id"`
	TenantID       string         `json:"tenant_id"`
	Intent         string         `json:"intent"`
	Data           map[string]any `json:"data"`
	From           From           `json:"from"`
	ConversationID string         `json:"conversation_id"`
	RequestedAt    string         `json:"requested_at"`
}

// MarshalJSON encodes r as the contract's body, as encoding/json does (map keys sorted, <, >
// and & escaped as \u003c…), so one Request always gives the same bytes, and json.Marshal(r)
// gives the same bytes as r.MarshalJSON().
func (r Request) MarshalJSON() ([]byte, error) {
	w := wireRequest{
		ActionID: r.ActionID, TenantID: r.TenantID, Intent: r.Intent, Data: r.Data,
		From: r.From, ConversationID: r.ConversationID,
		RequestedAt: r.RequestedAt.UTC().Format(time.RFC3339),
	}
	if w.Data == nil {
		w.Data = map[string]any{}
	}
	b, err := json.Marshal(w)
	if err != nil {
		return nil, fmt.Errorf("encode action request: %w", err)
	}
	return b, nil
}

// UnmarshalJSON decodes the contract's body (numbers in Data become float64), so a business
// written in Go, or the fake, can read it.
func (r *Request) UnmarshalJSON(b []byte) error {
	var w wireRequest
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	var at time.Time
	if w.RequestedAt != "" {
		t, err := time.Parse(time.RFC3339, w.RequestedAt)
		if err != nil {
			return fmt.Errorf("requested_at: %w", err)
		}
		at = t
	}
	*r = Request{
		ActionID: w.ActionID, TenantID: w.TenantID, Intent: w.Intent, Data: w.Data,
		From: w.From, ConversationID: w.ConversationID, RequestedAt: at,
	}
	return nil
}

// validate reports what makes r unsendable, or "".
func (r Request) validate() string {
	switch {
	case r.ActionID == "":
		return "action_id is empty"
	case len(r.ActionID) > maxActionIDLen || !isVisibleASCII(r.ActionID):
		// It travels as the Idempotency-Key header.
		return fmt.Sprintf("action_id must be 1 to %d visible ASCII characters", maxActionIDLen)
	case r.TenantID == "":
		return "tenant_id is empty"
	case r.Intent == "":
		return "intent is empty"
	case r.RequestedAt.IsZero():
		return "requested_at is zero"
	}
	return ""
}

// maxActionIDLen bounds the Idempotency-Key: 255 is what common idempotency stores accept.
const maxActionIDLen = 255

func isVisibleASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e {
			return false
		}
	}
	return true
}
