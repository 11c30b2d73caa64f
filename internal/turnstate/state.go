package turnstate

import (
	"maps"
	"slices"
	"time"

	"github.com/wapipe/wapipe/internal/tenant"
)

// MaxTurns is how many turns the State keeps, and so how much history the LLM sees.
const MaxTurns = 10

// PendingTTL is how long a pending action waits for its confirmation (the contract's 30 minutes).
const PendingTTL = 30 * time.Minute

// State is what a conversation carries from one turn to the next. The store saves it as it is
// (firestore and json tags: a stored document's field names, so they never change); nil pointers
// are stored as null, so writing a whole State also clears what the turn cleared.
type State struct {
	// Turns are the last MaxTurns turns, oldest first.
	Turns []Turn `firestore:"turns" json:"turns"`
	// Pending is the action waiting for the user's confirmation, if any.
	Pending *PendingAction `firestore:"pending_action" json:"pending_action"`
	// QuotaBlocked caches that the tenant's quota was used up, so later messages of the
	// conversation skip the quota check until the period rolls over or the quota is raised.
	QuotaBlocked *QuotaBlock `firestore:"quota_blocked" json:"quota_blocked"`
	// RateWindow counts the conversation's messages against limits.conversation.
	RateWindow *Window `firestore:"rate_window" json:"rate_window"`
	// Onboarding counts the replies to a non-member (see HitOnboarding).
	Onboarding *Window `firestore:"onboarding_window" json:"onboarding_window"`
	// Offered are the choices the last reply offered (the model's options, as buttons or a
	// list): the next message's tap is checked against them; any other message ends them.
	Offered []Option `firestore:"offered,omitempty" json:"offered,omitempty"`
}

// Option is one choice offered: the id its tap carries and what it said.
type Option struct {
	ID    string `firestore:"id" json:"id"`
	Title string `firestore:"title" json:"title"`
}

// The replies a non-member gets (the onboarding prompt, "invalid code") per window: 5 an hour,
// then silence, so a stranger cannot make a tenant's number answer without limit or try
// invite codes at speed.
const (
	OnboardingMax = 5
	OnboardingPer = time.Hour
)

// HitOnboarding counts message id of a non-member at now against OnboardingMax per
// OnboardingPer, and returns the state to save and whether the message may be answered (and
// an invite code tried). It is exact because a conversation's turns run one at a time, and
// counting a message again (a redone turn) gives the same answer. Over the limit there is no
// notice: silence.
func (s State) HitOnboarding(id string, now time.Time) (State, bool) {
	out := s.Clone()
	var w Window
	if s.Onboarding != nil {
		w = *s.Onboarding
	}
	w, d := w.Hit(id, now, tenant.Limit{Max: OnboardingMax, Per: OnboardingPer})
	out.Onboarding = &w
	return out, !d.Limited
}

// Turn is one inbound message and what the assistant answered right away.
type Turn struct {
	// MessageID is the inbound message's id (a wamid).
	MessageID string `firestore:"message_id" json:"message_id"`
	// At is the turn's assistant.Input.Now.
	At time.Time `firestore:"at" json:"at"`
	// User is the message's text (a text body, or the title of the button or list row tapped);
	// empty for other messages.
	User string `firestore:"user" json:"user"`
	// Reply is the text the turn sent (an interactive message's body), empty when it sent nothing.
	// An action's answer, sent later by the action step, is not here.
	Reply string `firestore:"reply" json:"reply"`
	// Intent is the intent the model chose, when the LLM was called.
	Intent string `firestore:"intent,omitempty" json:"intent,omitempty"`
	// Event is the assistant.Outcome's Event (or EventBusinessApp).
	Event string `firestore:"event" json:"event"`
}

// PendingAction is an action waiting for the user's confirmation.
type PendingAction struct {
	// ActionID is the id the action call will carry: ActionID of the message that created it.
	ActionID string `firestore:"action_id" json:"action_id"`
	Intent   string `firestore:"intent" json:"intent"`
	// Data are the intent's known fields, as llm.Result.Data gives them.
	Data map[string]any `firestore:"data" json:"data"`
	// Summary is the text the user was asked to confirm.
	Summary string `firestore:"summary" json:"summary"`
	// MessageID is the inbound message that created it.
	MessageID string `firestore:"message_id" json:"message_id"`
	// PromptIndex is the assistant.Reply.Index, in that message's turn, of the message with the
	// buttons.
	PromptIndex int       `firestore:"prompt_index" json:"prompt_index"`
	CreatedAt   time.Time `firestore:"created_at" json:"created_at"`
	ExpiresAt   time.Time `firestore:"expires_at" json:"expires_at"`
}

// Expired reports whether the pending action can no longer be confirmed at now.
func (p *PendingAction) Expired(now time.Time) bool { return !now.Before(p.ExpiresAt) }

// QuotaBlock records that the tenant's quota, or the contact's share of it (Sender), was used
// up for a period.
type QuotaBlock struct {
	// Period is the quota period ("2026-11", see Period).
	Period string `firestore:"period" json:"period"`
	// Limit is the tenant's monthly quota (the contact's share when Sender) when the block was
	// found; a higher one lifts it.
	Limit int `firestore:"limit" json:"limit"`
	// Sender: the contact used its share (tenant.Quota.SenderShare); it got the quota notice
	// once and gets no other for the period.
	Sender bool `firestore:"sender" json:"sender"`
	// NotifiedAt is when the conversation last got the quota notice: while blocked, it gets
	// another one at most once per conversation rate-limit window.
	NotifiedAt time.Time `firestore:"notified_at" json:"notified_at"`
}

// Holds reports whether the block still applies in period with the tenant's current quota
// (limit, limited) and share (share, shareLimited).
func (b *QuotaBlock) Holds(period string, limit int, limited bool, share int, shareLimited bool) bool {
	if b.Period != period {
		return false
	}
	if b.Sender {
		return shareLimited && share <= b.Limit
	}
	return limited && limit <= b.Limit
}

// Clone returns a deep copy of s, so a turn never changes its input's state.
func (s State) Clone() State {
	out := State{Turns: slices.Clone(s.Turns), Offered: slices.Clone(s.Offered)}
	if s.Pending != nil {
		p := *s.Pending
		p.Data = maps.Clone(p.Data)
		out.Pending = &p
	}
	if s.QuotaBlocked != nil {
		q := *s.QuotaBlocked
		out.QuotaBlocked = &q
	}
	if s.RateWindow != nil {
		w := s.RateWindow.clone()
		out.RateWindow = &w
	}
	if s.Onboarding != nil {
		w := s.Onboarding.clone()
		out.Onboarding = &w
	}
	return out
}

// AddTurn appends t and keeps the last MaxTurns turns.
func (s *State) AddTurn(t Turn) {
	s.Turns = append(s.Turns, t)
	if n := len(s.Turns); n > MaxTurns {
		s.Turns = slices.Clone(s.Turns[n-MaxTurns:])
	}
}

// EventBusinessApp is the Event of a history turn that holds what the business sent from the
// WhatsApp Business app (smb_message_echoes): the model sees it as the business's own reply.
const EventBusinessApp = "business_app"

// WithBusinessMessage returns s with what the business sent from the WhatsApp Business app
// (message id, text, at) in the history, as a turn with no user text; once only per id.
func (s State) WithBusinessMessage(id, text string, at time.Time) State {
	out := s.Clone()
	for _, t := range out.Turns {
		if t.MessageID == id {
			return out
		}
	}
	out.AddTurn(Turn{MessageID: id, At: at, Reply: text, Event: EventBusinessApp})
	return out
}

// Revised returns the state after the contact deleted (revoke) or edited message id: the
// history's text of that message becomes text (empty for a revoke), so the model never sees
// deleted words again. It reports whether the pending action came from that message; the
// caller decides what that means (assistant's Turn drops it).
func (s State) Revised(id, text string) (State, bool) {
	out := s.Clone()
	for i := range out.Turns {
		if out.Turns[i].MessageID == id {
			out.Turns[i].User = text
		}
	}
	return out, id != "" && out.Pending != nil && out.Pending.MessageID == id
}
