// Package budget tells a tenant's people, and the operator, when its month's spending (Meta's
// messages and the model, the ledger's total) reaches 80 % and then 100 % of its budget
// (tenant file budget.monthly_usd; CONTRACT.md, Money): once per month and threshold, however
// many turns and statuses cross it at the same moment.
//
// The notice goes to the members with the tenant's alert roles through package notify, one
// record per (month, threshold, member), so a concurrent or repeated check queues it once; a
// marker per (tenant, month, threshold) then spares the next checks the work, and the check that
// writes it logs budget_threshold (WARNING at 80 %, ERROR at 100 %), the operator's alert.
// Budget notices are exempt from the budget: nothing checks a notification's price.
package budget

import (
	"context"
	"fmt"
	"time"

	"github.com/wapipe/wapipe/internal/i18n"
	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/tenant"
	"github.com/wapipe/wapipe/internal/turnstate"
	"github.com/wapipe/wapipe/pricing"
)

// Spending reads what a tenant spent in a month; *store.Guard implements it.
type Spending interface {
	Spent(ctx context.Context, tenantID, period string) (pricing.Amount, error)
}

// Exhausted reports whether tn's spending in the UTC month of at has reached its budget: the
// templates wapipe sends on its own then wait, and the business's own sends are marked over
// budget. A tenant without a budget never exhausts it.
func Exhausted(ctx context.Context, s Spending, tn *tenant.Tenant, at time.Time) (bool, error) {
	budget, ok := tn.Budget.Monthly()
	if !ok {
		return false, nil
	}
	spent, err := s.Spent(ctx, tn.ID, turnstate.Period(at))
	if err != nil {
		return false, fmt.Errorf("read the spending of tenant %s: %w", tn.ID, err)
	}
	return spent >= budget, nil
}

// Ledger reads the month's spending and keeps the thresholds told; *store.Guard implements it.
type Ledger interface {
	Spending
	BudgetAlerted(ctx context.Context, tenantID, period string, percent int) (bool, error)
	MarkBudgetAlerted(ctx context.Context, tenantID, period string, percent int, spent pricing.Amount) (bool, error)
}

// Tenants reads a tenant; the worker's tenant cache implements it.
type Tenants interface {
	Tenant(ctx context.Context, id string) (store.TenantRecord, error)
}

// Teller queues a notice to a tenant's alert roles, once per notice id; *notify.Notifier
// implements it.
type Teller interface {
	Tell(ctx context.Context, tn *tenant.Tenant, noticeID string, text func(lang string) string) error
}

// Watcher checks the thresholds after money is counted.
type Watcher struct {
	Ledger  Ledger
	Tenants Tenants
	Teller  Teller
}

// Thresholds are the percentages of the budget that are told, highest first.
var Thresholds = []int{100, 80}

// Check tells tenantID's alert roles of the highest threshold its spending in the month of at
// has reached and that was not told yet (a lower one not told is then moot). A tenant with no
// budget is never told.
func (w *Watcher) Check(ctx context.Context, tenantID string, at time.Time) error {
	rec, err := w.Tenants.Tenant(ctx, tenantID)
	if err != nil {
		return fmt.Errorf("read tenant %s: %w", tenantID, err)
	}
	budget, ok := rec.Tenant.Budget.Monthly()
	if !ok || budget <= 0 {
		return nil
	}
	period := turnstate.Period(at)
	spent, err := w.Ledger.Spent(ctx, tenantID, period)
	if err != nil {
		return err
	}
	for _, pct := range Thresholds {
		if spent < budget.Fraction(int64(pct), 100) {
			continue
		}
		done, err := w.Ledger.BudgetAlerted(ctx, tenantID, period, pct)
		if err != nil || done {
			return err
		}
		key := i18n.BudgetWarning
		if pct >= 100 {
			key = i18n.BudgetExhausted
		}
		tn := rec.Tenant
		notice := fmt.Sprintf("budget-%s-%d", period, pct)
		err = w.Teller.Tell(ctx, tn, notice, func(lang string) string {
			return i18n.Text(lang, key, "business", tn.Name, "spent", spent.Round(2), "budget", budget.Round(2))
		})
		if err != nil {
			return fmt.Errorf("tell the budget threshold of %s: %w", tenantID, err)
		}
		marked, err := w.Ledger.MarkBudgetAlerted(ctx, tenantID, period, pct, spent)
		if err != nil || !marked {
			return err
		}
		logger := logging.FromContext(ctx)
		level := logger.WarnContext
		if pct >= 100 {
			level = logger.ErrorContext
		}
		level(ctx, "tenant's spending reached a threshold of its monthly budget", "event", "budget_threshold", "tenant_id", tenantID,
			"percent", pct, "period", period, "spent_usd", spent.String(), "budget_usd", budget.String())
		return nil
	}
	return nil
}
