// Package usage reports what a tenant's month cost, in the contract's shape (CONTRACT.md, Money):
// Meta's messages by category and the model's tokens, each with its exact amount in USD, the
// total, the budget and what remains. GET /v1/usage (the api), `wapipe tenants usage` and the
// console read the same Report, built from the ledger (store.Guard.Ledger).
package usage

import (
	"context"
	"fmt"
	"time"

	"github.com/wapipe/wapipe/internal/refusal"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/tenant"
)

// Ledgers reads a tenant's ledger of a month; *store.Guard implements it.
type Ledgers interface {
	Ledger(ctx context.Context, tenantID, period string) (store.Ledger, error)
}

// Tenants reads a tenant (its budget); *store.Tenants and the tenant caches implement it.
type Tenants interface {
	Tenant(ctx context.Context, id string) (store.TenantRecord, error)
}

// Report is a tenant's month, as GET /v1/usage answers it. Amounts are exact decimal strings;
// only Total is rounded, to the cent.
type Report struct {
	Month    string     `json:"month"`
	Currency string     `json:"currency"`
	Meta     MetaReport `json:"meta"`
	LLM      LLMReport  `json:"llm"`
	Total    string     `json:"total"`
	// Budget and Remaining are null when the tenant has no budget.
	Budget    *string `json:"budget"`
	Remaining *string `json:"remaining"`
	// OverBudget counts the tenant's own sends made while over budget (additive).
	OverBudget *CategoryReport `json:"over_budget,omitempty"`
	// Days is each UTC day's amounts, for the console's chart (additive).
	Days map[string]DayReport `json:"days,omitempty"`
}

// MetaReport is Meta's messages of the month.
type MetaReport struct {
	ByCategory map[string]CategoryReport `json:"by_category"`
	Amount     string                    `json:"amount"`
}

// CategoryReport is one category: how many messages and what they cost.
type CategoryReport struct {
	Messages int64  `json:"messages"`
	Amount   string `json:"amount"`
}

// LLMReport is the model's tokens of the month and what they cost.
type LLMReport struct {
	PromptTokens int64  `json:"prompt_tokens"`
	OutputTokens int64  `json:"output_tokens"`
	AudioTokens  int64  `json:"audio_tokens"`
	Amount       string `json:"amount"`
}

// DayReport is one day's amounts.
type DayReport struct {
	Meta string `json:"meta"`
	LLM  string `json:"llm"`
}

// Month reads a month parameter: "" is now's month; months are UTC. A month that is not
// YYYY-MM, or has not begun, is refused (400 invalid_request).
func Month(s string, now time.Time) (string, error) {
	now = now.UTC()
	if s == "" {
		return now.Format("2006-01"), nil
	}
	m, err := time.Parse("2006-01", s)
	if err != nil || m.Format("2006-01") != s {
		return "", refusal.New(refusal.InvalidRequest, "month must be YYYY-MM")
	}
	if m.After(now) {
		return "", refusal.New(refusal.InvalidRequest, "month "+s+" has not begun")
	}
	return s, nil
}

// Build is the report of ledger l under t's budget.
func Build(l store.Ledger, t *tenant.Tenant) Report {
	r := Report{Month: l.Period, Currency: "USD", Meta: MetaReport{ByCategory: map[string]CategoryReport{}}}
	for cat, c := range l.Meta {
		r.Meta.ByCategory[cat] = CategoryReport{Messages: c.Messages, Amount: c.Amount.String()}
	}
	r.Meta.Amount = l.MetaAmount().String()
	r.LLM = LLMReport{PromptTokens: l.PromptTokens, OutputTokens: l.OutputTokens, AudioTokens: l.AudioTokens, Amount: l.LLM.String()}
	total := l.Total()
	r.Total = total.Round(2)
	if budget, ok := t.Budget.Monthly(); ok {
		b, rem := budget.String(), (budget - total).String()
		r.Budget, r.Remaining = &b, &rem
	}
	if l.OverBudget.Messages != 0 {
		r.OverBudget = &CategoryReport{Messages: l.OverBudget.Messages, Amount: l.OverBudget.Amount.String()}
	}
	if len(l.Days) > 0 {
		r.Days = make(map[string]DayReport, len(l.Days))
		for d, u := range l.Days {
			r.Days[d] = DayReport{Meta: u.Meta.String(), LLM: u.LLM.String()}
		}
	}
	return r
}

// Reporter builds reports from the store.
type Reporter struct {
	Ledgers Ledgers
	Tenants Tenants
	Now     func() time.Time
}

// Report is tenant id's report of month ("" this month); a refusal for a bad month.
func (r Reporter) Report(ctx context.Context, id, month string) (Report, error) {
	now := time.Now
	if r.Now != nil {
		now = r.Now
	}
	m, err := Month(month, now())
	if err != nil {
		return Report{}, err
	}
	rec, err := r.Tenants.Tenant(ctx, id)
	if err != nil {
		return Report{}, fmt.Errorf("read tenant %s: %w", id, err)
	}
	l, err := r.Ledgers.Ledger(ctx, id, m)
	if err != nil {
		return Report{}, err
	}
	return Build(l, rec.Tenant), nil
}
