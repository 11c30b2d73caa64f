package responder

import (
	"context"

	"github.com/wapipe/wapipe/internal/i18n"
	"github.com/wapipe/wapipe/internal/outgoing"
	"github.com/wapipe/wapipe/internal/tenant"
	"github.com/wapipe/wapipe/internal/whatsapp"
)

// Turn is one inbound message to a tenant that is served: from a member, or from anyone when the
// tenant's audience is public. Membership and onboarding are settled before a Turn exists.
type Turn struct {
	// Tenant owns the business number the message reached.
	Tenant *tenant.Tenant
	// Member is the sender as the tenant knows them; the zero Member (no role) for a
	// non-member of a public tenant.
	Member tenant.Member
	// Message is the inbound message.
	Message whatsapp.Message
}

// Language is the language to answer the turn in: the member's, else the tenant's.
func (t Turn) Language() string { return t.Tenant.EffectiveLanguage(t.Member) }

// TenantResponder turns a served message of a tenant into the reply to send.
type TenantResponder interface {
	RespondTo(ctx context.Context, t Turn) (outgoing.Message, error)
}

// TenantAck is the TenantResponder of assistant mode ack: every message gets the tenant's
// acknowledgement. Until the LLM assistant is wired, mode llm gets it too.
type TenantAck struct{}

// RespondTo acknowledges the turn: ack_text exactly when the tenant set one, else the i18n
// acknowledgement in the member's language, else the tenant's. A system notice or a removed
// reaction gets no reply.
func (TenantAck) RespondTo(_ context.Context, t Turn) (outgoing.Message, error) {
	if Ignorable(t.Message) {
		return outgoing.Message{}, nil
	}
	text := t.Tenant.Assistant.AckText
	if text == "" {
		text = i18n.Text(t.Language(), i18n.Ack)
	}
	return outgoing.Message{Text: text, Quote: true}, nil
}

// Ignorable reports whether m asks for no answer at all: a system notice (a number change) or
// a removed reaction is not the customer talking to the business.
func Ignorable(m whatsapp.Message) bool {
	switch m.Type {
	case "system", "revoke", "edit":
		// A number change, a deleted or an edited message are recorded (package events); an edit
		// that corrects a pending action is the assistant's, in its conversation.
		return true
	case "interactive":
		// A call permission answer or a Flow wapipe did not send: recorded, nothing to say.
		return m.Reply != nil && (m.Reply.Kind == whatsapp.InteractiveCallPermission || m.Reply.Kind == "nfm_reply")
	case "reaction":
		return m.Reaction == nil || m.Reaction.Emoji == ""
	}
	return false
}
