package assistant

import (
	"context"
	"slices"
	"time"

	"github.com/wapipe/wapipe/internal/tenant"
)

// Guard holds the counters that turns of different conversations share: the sender rate limit
// and the monthly LLM quota. The worker implements it on Firestore (one transaction each); both
// methods must be exact under concurrency (the quota within a documented margin, see
// ReserveCall) and idempotent per message or call id, so a redone turn gets the answer the
// first attempt got and is not counted twice.
type Guard interface {
	// HitSender counts message h.MessageID of h.Sender against the tenant's sender limit and
	// says whether it is over. An implementation keeps one Window per (tenant, sender) and
	// applies Window.Hit in a transaction.
	HitSender(ctx context.Context, h SenderHit) (RateDecision, error)
	// ReserveCall counts one LLM call against the tenant's usage of c.Period, and against the
	// contact's share of it, before it is made: when the tenant's quota is limited and its
	// usage has reached it, or the contact's share is limited and the contact's usage has
	// reached it, it grants nothing and counts nothing; otherwise it adds one to both and
	// grants. A call id already granted is granted again without counting, so a redone turn
	// does not pay twice. Usage is counted even when the quota is unlimited (for `wapipe
	// tenants show`).
	//
	// Reserving before the call, rather than recording after it, is what keeps the quota
	// exact: 100 concurrent turns with 50 calls left must make exactly 50 calls. The contact's
	// share is exact; the tenant's quota may be exact only for its last calls (store.Guard
	// spreads the others over shards, and documents its margin), so that a busy tenant's
	// calls do not all write one document.
	ReserveCall(ctx context.Context, c CallReservation) (CallDecision, error)
	// RecordTokens adds the tokens of a call ReserveCall granted to the tenant's usage of
	// u.Period, beside its call count (`wapipe tenants show`, the console), once per call id.
	RecordTokens(ctx context.Context, u TokenUse) error
}

// TokenUse is the token usage Vertex AI reported for one LLM call.
type TokenUse struct {
	TenantID string
	// Period and CallID are the call's reservation's.
	Period string
	CallID string
	// Prompt counts the request's tokens (media included), Output the answer's (the model's
	// thoughts included: they are billed as output).
	Prompt, Output int
}

// CallDecision is ReserveCall's answer. The zero value refuses.
type CallDecision struct {
	Granted bool
	// SenderShare says a refusal is the contact's: it used its share while the tenant's quota
	// has room, so other contacts are still served.
	SenderShare bool
}

// SenderHit is one message counted against a sender limit.
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
	// Period is the quota period, Period(Input.Now).
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
