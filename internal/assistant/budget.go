package assistant

import (
	"context"
	"fmt"
	"time"

	"github.com/wapipe/wapipe/internal/i18n"
	"github.com/wapipe/wapipe/internal/llm"
	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/internal/turnstate"
	"github.com/wapipe/wapipe/pricing"
)

// ReasonBudgetExceeded: the call's estimated price would take the tenant past its monthly
// budget (tenant file budget.monthly_usd); ReasonBudgetShare: the contact past its share of it
// (budget.per_sender_share). Both EventQuotaBlocked.
const (
	ReasonBudgetExceeded = "budget_exceeded"
	ReasonBudgetShare    = "budget_share"
)

// Spending reads what a tenant spent in a month, Meta's messages and the model together;
// *store.Guard implements it.
type Spending interface {
	Spent(ctx context.Context, tenantID, period string) (pricing.Amount, error)
	SenderSpent(ctx context.Context, tenantID, contactID, period string) (pricing.Amount, error)
}

// Watcher is told after a call's price is counted (the budget's thresholds); *budget.Watcher
// implements it.
type Watcher interface {
	Check(ctx context.Context, tenantID string, at time.Time) error
}

// WithPrices makes e price each call with c (the ledger's LLM amounts), check the tenant's
// budget with s before each call and tell w after it (w may be nil); without it calls are
// counted, not priced.
func (e *Engine) WithPrices(c *pricing.Card, s Spending, w Watcher) *Engine {
	e.prices, e.spending, e.watcher = c, s, w
	return e
}

// watch tells the watcher that t's tenant spent; a failure is logged (the next spending checks
// again).
func (e *Engine) watch(ctx context.Context, t *turn) {
	if e.watcher == nil {
		return
	}
	if err := e.watcher.Check(ctx, t.in.Tenant.ID, t.in.Now); err != nil {
		logging.FromContext(ctx).WarnContext(ctx, "budget thresholds not checked", "event", "budget_check_failed",
			"tenant_id", t.in.Tenant.ID, "error", err)
	}
}

// price is what est (or an answer's usage) of model costs on the day of at.
func (e *Engine) price(model string, at time.Time, prompt, audio, output int) pricing.Amount {
	if e.prices == nil {
		return 0
	}
	return e.prices.CallPrice(model, at, prompt, audio, output)
}

// withinBudget checks, before the call, that req's estimated price fits in what is left of the
// tenant's monthly budget. A request that does not (a long voice note near the month's end) is
// refused with the quota notice, before any model call, and costs nothing; an ordinary text
// turn that fits still goes. A store that cannot say what was spent makes the turn be redone,
// like the quota's reservation, and on the last attempt refuses (no call whose price is
// unchecked).
func (e *Engine) withinBudget(ctx context.Context, t *turn, req llm.Request) (bool, error) {
	budget, ok := t.in.Tenant.Budget.Monthly()
	if !ok || e.spending == nil {
		return true, nil
	}
	est := llm.EstimateTokens(req)
	cost := e.price(req.Model, t.in.Now, est.Prompt, est.Audio, est.Output)
	period := turnstate.Period(t.in.Now)
	spent, err := e.spending.Spent(ctx, t.in.Tenant.ID, period)
	var mine pricing.Amount
	share, shared := t.in.Tenant.Budget.SenderShare()
	if err == nil && shared && t.in.ContactID != "" {
		mine, err = e.spending.SenderSpent(ctx, t.in.Tenant.ID, t.in.ContactID, period)
	}
	switch {
	case err != nil && (ctx.Err() != nil || !t.in.LastAttempt):
		return false, fmt.Errorf("%w: budget: %w", ErrRetry, err)
	case err != nil:
		t.event, t.reason, t.cause = EventQuotaBlocked, ReasonQuotaCheckError, err
		t.replies.system(t.lang, i18n.Unavailable)
		return false, nil
	case spent+cost > budget:
		logging.FromContext(ctx).InfoContext(ctx, "LLM call refused: over the monthly budget", "event", "budget_blocked",
			"tenant_id", t.in.Tenant.ID, "estimate_usd", cost.String(), "spent_usd", spent.String(), "budget_usd", budget.String())
		t.event, t.reason = EventQuotaBlocked, ReasonBudgetExceeded
		t.replies.system(t.lang, i18n.QuotaExceeded)
		return false, nil
	case shared && mine+cost > share:
		// This contact's share is spent; the others are still served.
		t.event, t.reason = EventQuotaBlocked, ReasonBudgetShare
		t.replies.system(t.lang, i18n.QuotaExceeded)
		return false, nil
	}
	return true, nil
}
