package turnstate

import (
	"slices"
	"time"

	"github.com/wapipe/wapipe/internal/tenant"
	"github.com/wapipe/wapipe/pricing"
)

// TokenUse is the token usage Vertex AI reported for one LLM call (assistant.Guard.RecordTokens).
type TokenUse struct {
	TenantID string
	// Period and CallID are the call's reservation's.
	Period string
	CallID string
	// Prompt counts the request's tokens (media included), Output the answer's (the model's
	// thoughts included: they are billed as output); Audio the part of Prompt that is audio
	// (priced apart).
	Prompt, Output, Audio int
	// ContactID is the contact whose turn made the call: its spending counts against its share
	// of the budget ("" for none).
	ContactID string
	// Amount is the call's price (pricing.Card.TokenPrice of each kind); At when it was made
	// (the ledger's day).
	Amount pricing.Amount
	At     time.Time
}

// CallDecision is assistant.Guard.ReserveCall's answer. The zero value refuses.
type CallDecision struct {
	Granted bool
	// SenderShare says a refusal is the contact's: it used its share while the tenant's quota
	// has room, so other contacts are still served.
	SenderShare bool
}

// SenderHit is one message counted against a sender limit (assistant.Guard.HitSender).
type SenderHit struct {
	TenantID string
	// Sender is the contact's id (ct_…). LegacySender is its phone, under which its window was
	// kept before contacts: read until the migration has run (never logged).
	Sender       string
	LegacySender string
	MessageID    string
	At           time.Time
	Limit        tenant.Limit
}

// RateDecision is a rate limit's answer for one message.
type RateDecision struct {
	// Limited: the message is over the limit; no LLM call.
	Limited bool
	// First: the message is the first over the limit in its window, so it gets the notice.
	First bool
}

// CallReservation asks for one LLM call.
type CallReservation struct {
	TenantID string
	// Period is the quota period, Period(assistant.Input.Now).
	Period string
	// CallID is unique per call and stable across redone turns.
	CallID string
	// Limit is the monthly quota when Limited; without Limited the quota is unlimited.
	Limit   int
	Limited bool
	// Sender is the contact's id (ct_…); its usage of the period is capped at SenderLimit when
	// SenderLimited (tenant.Quota.SenderShare). LegacySender is its phone, under which its share
	// was kept before contacts.
	Sender        string
	LegacySender  string
	SenderLimit   int
	SenderLimited bool
}

// Period is the quota period of t: its UTC year and month, "2026-11".
func Period(t time.Time) string { return t.UTC().Format("2006-01") }

// maxRecent bounds Window.Recent: enough to recognise a message counted shortly before, small
// enough to keep the counter document small whatever the limit.
const maxRecent = 32

// Window counts messages against a tenant.Limit: a window opens with the first message after
// the previous one ended and lasts Limit.Per; its first Limit.Max messages pass, the next one is
// the first over the limit (it gets the notice), later ones are silently over. Unlike fixed
// windows aligned on the clock, a burst cannot pass twice the limit by straddling a boundary.
//
// Store it as it is. Recent remembers the last message ids counted in the window, so counting
// one of them again (a redone turn) changes nothing and gives the same decision.
type Window struct {
	Start  time.Time `firestore:"start" json:"start"`
	Count  int       `firestore:"count" json:"count"`
	Recent []string  `firestore:"recent" json:"recent"`
}

// Hit counts message id at time at against l and returns the updated window and the decision.
// A message dated before the window's start (clocks of two instances) counts in the current
// window. A limit with no Max or Per limits nothing and counts nothing.
func (w Window) Hit(id string, at time.Time, l tenant.Limit) (Window, RateDecision) {
	if l.Max <= 0 || l.Per <= 0 {
		return w.clone(), RateDecision{}
	}
	if w.Start.IsZero() || !at.Before(w.Start.Add(l.Per)) {
		w = Window{Start: at}
	}
	if i := slices.Index(w.Recent, id); i >= 0 {
		ordinal := w.Count - len(w.Recent) + i + 1
		return w.clone(), decide(ordinal, l.Max)
	}
	out := Window{Start: w.Start, Count: w.Count + 1, Recent: append(slices.Clone(w.Recent), id)}
	if n := len(out.Recent); n > maxRecent {
		out.Recent = out.Recent[n-maxRecent:]
	}
	return out, decide(out.Count, l.Max)
}

func decide(ordinal, limit int) RateDecision {
	return RateDecision{Limited: ordinal > limit, First: ordinal == limit+1}
}

func (w Window) clone() Window {
	w.Recent = slices.Clone(w.Recent)
	return w
}
