package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/wapipe/wapipe/pricing"
)

// BilledMessages holds one marker per message Meta's statuses priced (billed_messages/{keyed
// id of tenant and wamid}): a message's sent, delivered and read statuses all carry its pricing,
// and it is counted once, at the earliest of their days.
const BilledMessages = "billed_messages"

// The ledger's fields on a tenant's usage shards (usage/{tenant}_{month}/shards/{nn}), beside
// the call counts and tokens: per category of Meta message its count and amount, the model's
// audio tokens and amount, and per UTC day of the month the two amounts (the console's chart).
// Amounts are whole picodollars (pricing.Amount), so sums are exact.
const (
	ledgerMeta  = "meta"
	ledgerDays  = "days"
	ledgerLLM   = "llm_pico"
	ledgerAudio = "audio_tokens"
	ledgerOver  = "over_budget"
	// ledgerTotal is every amount of the shard, Meta's and the model's: what Spent sums.
	ledgerTotal = "pico"
)

// BilledMessage is one message a status priced.
type BilledMessage struct {
	TenantID string
	// MessageID is Meta's wamid.
	MessageID string
	// Category is the status's pricing.category; Market the recipient's (pricing.MarketOfPhone).
	Category, Market string
	// Amount is its price on the UTC day of At: zero when pricing.type says it is free.
	Amount pricing.Amount
	// At is the status's timestamp.
	At time.Time
	// OverBudget marks a send the tenant asked for itself (/v1) while over its budget.
	OverBudget bool
}

// billedDoc is a BilledMessages document: where the message was counted.
type billedDoc struct {
	TenantID string         `firestore:"tenant_id"`
	Period   string         `firestore:"period"`
	Day      string         `firestore:"day"`
	Category string         `firestore:"category"`
	Market   string         `firestore:"market"`
	Amount   pricing.Amount `firestore:"pico"`
	At       time.Time      `firestore:"at"`
	Over     bool           `firestore:"over_budget,omitempty"`
	ExpireAt time.Time      `firestore:"expire_at"`
}

// period and day of t, in UTC: "2026-11" and "27".
func ledgerPeriod(t time.Time) (string, string) {
	t = t.UTC()
	return t.Format("2006-01"), t.Format("02")
}

// RecordBilled counts message b once in its tenant's ledger, in the month and day of its status
// (UTC). A second status of the same message changes nothing, unless it is dated earlier than
// the one counted (webhooks arrive out of order): the message then moves to that status's day,
// and month, with its price there. It reports whether the ledger changed. One transaction: the
// message's marker and one shard of each month touched.
func (g *Guard) RecordBilled(ctx context.Context, b BilledMessage) (bool, error) {
	if b.TenantID == "" || b.MessageID == "" || b.Category == "" || b.At.IsZero() {
		return false, errors.New("record a billed message: tenant, message, category and time are required")
	}
	marker := g.fs.Collection(BilledMessages).Doc(g.db.keyer.ID("billed-message", b.TenantID, b.MessageID))
	period, day := ledgerPeriod(b.At)
	changed, err := runTx(ctx, g.fs, nil, func(ctx context.Context, tx *firestore.Transaction) (bool, error) {
		old, ok, err := getTx[billedDoc](tx, marker)
		if err != nil {
			return false, err
		}
		if ok && !b.At.Before(old.At) {
			return false, nil
		}
		if ok && old.Period == period && old.Day == day && old.Amount == b.Amount {
			// The same day and price: only the earliest time is kept.
			return true, tx.Update(marker, []firestore.Update{{Path: "at", Value: b.At}})
		}
		if ok {
			if err := tx.Set(g.nextShard(g.usageDoc(b.TenantID, old.Period)), billedFields(b.TenantID, old.Period, old.Day, old.Category, -1, -old.Amount, old.Over), firestore.MergeAll); err != nil {
				return false, err
			}
		}
		if err := tx.Set(g.nextShard(g.usageDoc(b.TenantID, period)), billedFields(b.TenantID, period, day, b.Category, 1, b.Amount, b.OverBudget), firestore.MergeAll); err != nil {
			return false, err
		}
		return true, tx.Set(marker, billedDoc{TenantID: b.TenantID, Period: period, Day: day, Category: b.Category, Market: b.Market,
			Amount: b.Amount, At: b.At, Over: b.OverBudget, ExpireAt: b.At.Add(2 * DefaultRetention)})
	})
	if err != nil {
		return false, fmt.Errorf("record billed message of %s: %w", b.TenantID, err)
	}
	return changed, nil
}

// billedFields are the increments of one message (n = 1) or its removal (n = -1).
func billedFields(tenantID, period, day, category string, n int64, amount pricing.Amount, over bool) map[string]any {
	fields := map[string]any{
		"tenant_id": tenantID, "period": period, ledgerTotal: firestore.Increment(int64(amount)),
		ledgerMeta: map[string]any{category: map[string]any{"messages": firestore.Increment(n), "pico": firestore.Increment(int64(amount))}},
		ledgerDays: map[string]any{day: map[string]any{"meta_pico": firestore.Increment(int64(amount))}},
	}
	if over {
		fields[ledgerOver] = map[string]any{"messages": firestore.Increment(n), "pico": firestore.Increment(int64(amount))}
	}
	return fields
}

// CategoryUse is one category of Meta messages in a month.
type CategoryUse struct {
	Messages int64
	Amount   pricing.Amount
}

// DayUse is what one UTC day of the month cost.
type DayUse struct{ Meta, LLM pricing.Amount }

// Ledger is a tenant's money in one UTC month.
type Ledger struct {
	Period string
	// Meta is by category of priced message.
	Meta map[string]CategoryUse
	// OverBudget counts the sends made while over budget (the tenant's own /v1 sends).
	OverBudget CategoryUse
	// PromptTokens include AudioTokens.
	PromptTokens, AudioTokens, OutputTokens int64
	LLM                                     pricing.Amount
	// Days is by day of the month ("01"…"31").
	Days map[string]DayUse
}

// MetaAmount is the sum of the categories' amounts.
func (l Ledger) MetaAmount() pricing.Amount {
	var sum pricing.Amount
	for _, c := range l.Meta {
		sum += c.Amount
	}
	return sum
}

// Total is what the month cost, Meta and the model.
func (l Ledger) Total() pricing.Amount { return l.MetaAmount() + l.LLM }

// Ledger reads tenantID's ledger for period ("2026-11"): the sums of its usage shards.
func (g *Guard) Ledger(ctx context.Context, tenantID, period string) (Ledger, error) {
	l := Ledger{Period: period, Meta: map[string]CategoryUse{}, Days: map[string]DayUse{}}
	snaps, err := g.usageDoc(tenantID, period).Collection(UsageShards).Documents(ctx).GetAll()
	if err != nil {
		return Ledger{}, fmt.Errorf("read the ledger of %s: %w", UsageID(tenantID, period), err)
	}
	for _, sn := range snaps {
		var s ledgerShard
		if err := sn.DataTo(&s); err != nil {
			return Ledger{}, fmt.Errorf("decode the ledger of %s: %w", UsageID(tenantID, period), err)
		}
		for cat, u := range s.Meta {
			c := l.Meta[cat]
			c.Messages += u.Messages
			c.Amount += pricing.Amount(u.Pico)
			l.Meta[cat] = c
		}
		l.OverBudget.Messages += s.Over.Messages
		l.OverBudget.Amount += pricing.Amount(s.Over.Pico)
		l.PromptTokens += s.Prompt
		l.AudioTokens += s.Audio
		l.OutputTokens += s.Output
		l.LLM += pricing.Amount(s.LLM)
		for d, u := range s.Days {
			du := l.Days[d]
			du.Meta += pricing.Amount(u.Meta)
			du.LLM += pricing.Amount(u.LLM)
			l.Days[d] = du
		}
	}
	// What moved to another day, or another month, leaves zeros behind.
	for cat, c := range l.Meta {
		if c.Messages == 0 && c.Amount == 0 {
			delete(l.Meta, cat)
		}
	}
	for d, u := range l.Days {
		if u == (DayUse{}) {
			delete(l.Days, d)
		}
	}
	return l, nil
}

// Spent is what tenantID spent in period so far, Meta and the model: one aggregation query over
// the usage shards (the budget checks' read).
func (g *Guard) Spent(ctx context.Context, tenantID, period string) (pricing.Amount, error) {
	res, err := g.usageDoc(tenantID, period).Collection(UsageShards).NewAggregationQuery().WithSum(ledgerTotal, "spent").Get(ctx)
	if err != nil {
		return 0, fmt.Errorf("read the spending of %s: %w", UsageID(tenantID, period), err)
	}
	n, err := aggregateInt(res["spent"])
	if err != nil {
		return 0, fmt.Errorf("read the spending of %s: %w", UsageID(tenantID, period), err)
	}
	return pricing.Amount(n), nil
}

// ledgerShard is the ledger's part of a usage shard.
type ledgerShard struct {
	Meta map[string]struct {
		Messages int64 `firestore:"messages"`
		Pico     int64 `firestore:"pico"`
	} `firestore:"meta"`
	Over struct {
		Messages int64 `firestore:"messages"`
		Pico     int64 `firestore:"pico"`
	} `firestore:"over_budget"`
	Prompt int64 `firestore:"prompt_tokens"`
	Audio  int64 `firestore:"audio_tokens"`
	Output int64 `firestore:"output_tokens"`
	LLM    int64 `firestore:"llm_pico"`
	Days   map[string]struct {
		Meta int64 `firestore:"meta_pico"`
		LLM  int64 `firestore:"llm_pico"`
	} `firestore:"days"`
}

// BudgetAlerts holds one document per tenant, month and threshold whose notice went out
// (budget_alerts/{tenant}_{month}_{percent}), so that each is told once a month.
const BudgetAlerts = "budget_alerts"

func (g *Guard) budgetAlertDoc(tenantID, period string, percent int) *firestore.DocumentRef {
	return g.fs.Collection(BudgetAlerts).Doc(fmt.Sprintf("%s_%s_%d", tenantID, period, percent))
}

// BudgetAlerted reports whether tenantID's notice of percent of its budget in period went out.
func (g *Guard) BudgetAlerted(ctx context.Context, tenantID, period string, percent int) (bool, error) {
	_, err := g.budgetAlertDoc(tenantID, period, percent).Get(ctx)
	if status.Code(err) == codes.NotFound {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read the budget alert of %s: %w", UsageID(tenantID, period), err)
	}
	return true, nil
}

// MarkBudgetAlerted records that the notice went out, and reports whether this call recorded it
// (false: another did first). It is kept a year past the month.
func (g *Guard) MarkBudgetAlerted(ctx context.Context, tenantID, period string, percent int, spent pricing.Amount) (bool, error) {
	now := g.opts.Now()
	_, err := g.budgetAlertDoc(tenantID, period, percent).Create(ctx, map[string]any{"tenant_id": tenantID, "period": period,
		"percent": percent, "spent_pico": int64(spent), "alerted_at": now, ExpireAtField: now.AddDate(1, 1, 0)})
	if status.Code(err) == codes.AlreadyExists {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("mark the budget alert of %s: %w", UsageID(tenantID, period), err)
	}
	return true, nil
}
