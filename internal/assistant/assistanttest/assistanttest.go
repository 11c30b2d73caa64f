// Package assistanttest provides in-memory fakes of the assistant's dependencies for unit
// tests: a Guard that counts exactly like the Firestore one must (and can fail on demand), and
// a scripted Extractor that records its requests. Not for production: the counts live in one
// process's memory.
package assistanttest

import (
	"context"
	"errors"
	"sync"

	"github.com/wapipe/wapipe/internal/llm"
	"github.com/wapipe/wapipe/internal/turnstate"
)

// Guard is an in-memory assistant.Guard: one Window per (tenant, sender) and a usage count per
// (tenant, period) and per (tenant, sender, period), with the idempotency the interface asks for. Safe for concurrent use.
type Guard struct {
	mu         sync.Mutex
	windows    map[[2]string]turnstate.Window
	usage      map[[2]string]int
	granted    map[string]bool
	senderErr  error
	quotaErr   error
	senderHits int
	quotaCalls int
	// tokens are the recorded prompt and output tokens by tenant and period; tokensOf the call
	// ids recorded.
	tokens   map[[2]string][2]int
	tokensOf map[string]bool
}

// NewGuard returns a guard with no counts.
func NewGuard() *Guard {
	return &Guard{windows: map[[2]string]turnstate.Window{}, usage: map[[2]string]int{}, granted: map[string]bool{},
		tokens: map[[2]string][2]int{}, tokensOf: map[string]bool{}}
}

// HitSender counts h with turnstate.Window.Hit, or returns the error set by FailSender.
func (g *Guard) HitSender(_ context.Context, h turnstate.SenderHit) (turnstate.RateDecision, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.senderHits++
	if g.senderErr != nil {
		return turnstate.RateDecision{}, g.senderErr
	}
	k := [2]string{h.TenantID, h.Sender}
	w, d := g.windows[k].Hit(h.MessageID, h.At, h.Limit)
	g.windows[k] = w
	return d, nil
}

// ReserveCall grants and counts a call while the tenant's usage is under its limit and the
// contact's under its share, or returns the error set by FailQuota.
func (g *Guard) ReserveCall(_ context.Context, c turnstate.CallReservation) (turnstate.CallDecision, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.quotaCalls++
	if g.quotaErr != nil {
		return turnstate.CallDecision{}, g.quotaErr
	}
	if c.CallID == "" {
		return turnstate.CallDecision{}, errors.New("assistanttest: empty call id")
	}
	if g.granted[c.CallID] {
		return turnstate.CallDecision{Granted: true}, nil
	}
	k := [2]string{c.TenantID, c.Period}
	if c.Limited && g.usage[k] >= c.Limit {
		return turnstate.CallDecision{}, nil
	}
	sk := [2]string{c.TenantID + "\x00" + c.Sender, c.Period}
	if c.SenderLimited && g.usage[sk] >= c.SenderLimit {
		return turnstate.CallDecision{SenderShare: true}, nil
	}
	g.usage[k]++
	g.usage[sk]++
	g.granted[c.CallID] = true
	return turnstate.CallDecision{Granted: true}, nil
}

// RecordTokens adds a call's tokens to the tenant's period, once per call id.
func (g *Guard) RecordTokens(_ context.Context, u turnstate.TokenUse) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.tokensOf[u.CallID] {
		return nil
	}
	g.tokensOf[u.CallID] = true
	k := [2]string{u.TenantID, u.Period}
	t := g.tokens[k]
	g.tokens[k] = [2]int{t[0] + u.Prompt, t[1] + u.Output}
	return nil
}

// Tokens are a tenant's recorded prompt and output tokens in a period.
func (g *Guard) Tokens(tenantID, period string) (prompt, output int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	t := g.tokens[[2]string{tenantID, period}]
	return t[0], t[1]
}

// SenderUsage is a contact's counted calls in a period.
func (g *Guard) SenderUsage(tenantID, sender, period string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.usage[[2]string{tenantID + "\x00" + sender, period}]
}

// FailSender makes HitSender fail with err from now on; nil heals it.
func (g *Guard) FailSender(err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.senderErr = err
}

// FailQuota makes ReserveCall fail with err from now on; nil heals it.
func (g *Guard) FailQuota(err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.quotaErr = err
}

// SetUsage sets a tenant's usage of a period, as if calls had been made.
func (g *Guard) SetUsage(tenantID, period string, n int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.usage[[2]string{tenantID, period}] = n
}

// SetSenderUsage sets a contact's usage of a period, as if calls had been made.
func (g *Guard) SetSenderUsage(tenantID, sender, period string, n int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.usage[[2]string{tenantID + "\x00" + sender, period}] = n
}

// Usage is a tenant's counted calls in a period.
func (g *Guard) Usage(tenantID, period string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.usage[[2]string{tenantID, period}]
}

// QuotaChecks counts the ReserveCall calls, failed ones included.
func (g *Guard) QuotaChecks() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.quotaCalls
}

// SenderHits counts the HitSender calls, failed ones included.
func (g *Guard) SenderHits() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.senderHits
}

// Step is one scripted Extract answer.
type Step struct {
	Result llm.Result
	Err    error
}

// Extractor answers Extract from a script, in order, and records the requests. When the script
// is used up it answers Default, or an llm.ErrPermanent error when Default is nil. Safe for
// concurrent use.
type Extractor struct {
	// Default, when set, answers the calls after the script.
	Default func(llm.Request) (llm.Result, error)

	mu       sync.Mutex
	script   []Step
	requests []llm.Request
}

// NewExtractor returns an extractor that answers steps in order.
func NewExtractor(steps ...Step) *Extractor { return &Extractor{script: steps} }

// Push appends steps to the script.
func (x *Extractor) Push(steps ...Step) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.script = append(x.script, steps...)
}

// Extract records req and answers the next step.
func (x *Extractor) Extract(_ context.Context, req llm.Request) (llm.Result, error) {
	x.mu.Lock()
	x.requests = append(x.requests, req)
	if len(x.script) > 0 {
		s := x.script[0]
		x.script = x.script[1:]
		x.mu.Unlock()
		return s.Result, s.Err
	}
	def := x.Default
	x.mu.Unlock()
	if def != nil {
		return def(req)
	}
	return llm.Result{}, &llm.Error{Kind: llm.ErrPermanent, Reason: "assistanttest: no scripted answer"}
}

// Requests returns the recorded requests, oldest first.
func (x *Extractor) Requests() []llm.Request {
	x.mu.Lock()
	defer x.mu.Unlock()
	return append([]llm.Request(nil), x.requests...)
}

// Calls counts the recorded requests.
func (x *Extractor) Calls() int {
	x.mu.Lock()
	defer x.mu.Unlock()
	return len(x.requests)
}
