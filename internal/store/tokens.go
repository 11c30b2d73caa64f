package store

import (
	"context"
	"errors"
	"fmt"

	"cloud.google.com/go/firestore"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/wapipe/wapipe/internal/turnstate"
	"github.com/wapipe/wapipe/pricing"
)

// TokenUsage is a tenant's LLM tokens in one quota period, as Vertex AI reported them.
type TokenUsage struct {
	// Prompt counts the requests' tokens, Output the answers' (thoughts included).
	Prompt, Output int64
}

// RecordTokens adds a call's tokens and their price to the tenant's usage of u.Period, on a usage
// shard beside the call counts (fields prompt_tokens, output_tokens, audio_tokens, llm_pico and
// the day's llm_pico: the ledger), and marks the call's marker
// (usage/{tenant}_{period}/calls/{call id}) so that a call id is counted once. One transaction:
// it reads the marker (the call's own document, so calls do not contend) and writes it and an
// increment of one shard.
func (g *Guard) RecordTokens(ctx context.Context, u turnstate.TokenUse) error {
	if u.TenantID == "" || u.Period == "" || u.CallID == "" {
		return errors.New("record tokens: tenant, period and call id are required")
	}
	ref := g.usageDoc(u.TenantID, u.Period)
	callRef := ref.Collection(UsageCalls).Doc(DocID(u.CallID))
	shard := g.nextShard(ref)
	now := g.opts.Now()
	err := g.fs.RunTransaction(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
		marker := map[string]any{"call_id": u.CallID, "tokens_recorded": true, "prompt_tokens": u.Prompt, "output_tokens": u.Output,
			ledgerAudio: u.Audio, ledgerLLM: int64(u.Amount)}
		snap, err := tx.Get(callRef)
		switch {
		case status.Code(err) == codes.NotFound:
			// ReserveCall writes the marker before the call; without one, keep it as long.
			marker["created_at"], marker[ExpireAtField] = now, now.Add(g.opts.Retention)
		case err != nil:
			return err
		default:
			if done, _ := snap.DataAt("tokens_recorded"); done == true {
				return nil
			}
		}
		if err := tx.Set(callRef, marker, firestore.MergeAll); err != nil {
			return err
		}
		fields := map[string]any{"tenant_id": u.TenantID, "period": u.Period, "updated_at": now,
			"prompt_tokens": firestore.Increment(u.Prompt), "output_tokens": firestore.Increment(u.Output),
			ledgerAudio: firestore.Increment(u.Audio), ledgerLLM: firestore.Increment(int64(u.Amount)),
			ledgerTotal: firestore.Increment(int64(u.Amount))}
		if !u.At.IsZero() {
			_, day := ledgerPeriod(u.At)
			fields[ledgerDays] = map[string]any{day: map[string]any{"llm_pico": firestore.Increment(int64(u.Amount))}}
		}
		if u.ContactID != "" && u.Amount != 0 {
			// The contact's own document: contacts do not contend on it.
			if err := tx.Set(g.senderSpendDoc(u.TenantID, u.ContactID, u.Period), map[string]any{"tenant_id": u.TenantID,
				"contact_id": u.ContactID, "period": u.Period, ledgerTotal: firestore.Increment(int64(u.Amount)), "updated_at": now,
				ExpireAtField: shareExpiry(u.Period, now.Add(g.opts.Retention))}, firestore.MergeAll); err != nil {
				return err
			}
		}
		return tx.Set(shard, fields, firestore.MergeAll)
	})
	if err != nil {
		return fmt.Errorf("record tokens of %s: %w", UsageID(u.TenantID, u.Period), err)
	}
	return nil
}

// senderSpendDoc is what one contact's turns spent on the model in period (sender_windows/{keyed
// id}), checked against its share of the budget.
func (g *Guard) senderSpendDoc(tenantID, contactID, period string) *firestore.DocumentRef {
	return g.fs.Collection(SenderWindows).Doc(g.db.keyer.ID("spend", tenantID, contactID, period))
}

// SenderSpent is what contactID's turns spent on the model in period (zero when nothing).
func (g *Guard) SenderSpent(ctx context.Context, tenantID, contactID, period string) (pricing.Amount, error) {
	snap, err := g.senderSpendDoc(tenantID, contactID, period).Get(ctx)
	if status.Code(err) == codes.NotFound {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read a contact's spending in %s: %w", UsageID(tenantID, period), err)
	}
	v, _ := snap.DataAt(ledgerTotal)
	n, err := aggregateInt(v)
	return pricing.Amount(n), err
}

// Tokens is a tenant's recorded LLM tokens in period (zero when none): the sums of its usage
// shards' prompt_tokens and output_tokens, one aggregation query.
func (g *Guard) Tokens(ctx context.Context, tenantID, period string) (TokenUsage, error) {
	ref := g.usageDoc(tenantID, period)
	res, err := ref.Collection(UsageShards).NewAggregationQuery().
		WithSum("prompt_tokens", "prompt").WithSum("output_tokens", "output").Get(ctx)
	if err != nil {
		return TokenUsage{}, fmt.Errorf("tokens of %s: %w", UsageID(tenantID, period), err)
	}
	var t TokenUsage
	if t.Prompt, err = aggregateInt(res["prompt"]); err != nil {
		return TokenUsage{}, fmt.Errorf("tokens of %s: %w", UsageID(tenantID, period), err)
	}
	if t.Output, err = aggregateInt(res["output"]); err != nil {
		return TokenUsage{}, fmt.Errorf("tokens of %s: %w", UsageID(tenantID, period), err)
	}
	return t, nil
}
