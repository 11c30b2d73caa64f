package store

import (
	"context"
	"errors"
	"fmt"

	"cloud.google.com/go/firestore"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/wapipe/wapipe/internal/turnstate"
)

// TokenUsage is a tenant's LLM tokens in one quota period, as Vertex AI reported them.
type TokenUsage struct {
	// Prompt counts the requests' tokens, Output the answers' (thoughts included).
	Prompt, Output int64
}

// RecordTokens adds a call's tokens to the tenant's usage of u.Period, on a usage shard beside
// the call counts (fields prompt_tokens and output_tokens), and marks the call's marker
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
		marker := map[string]any{"call_id": u.CallID, "tokens_recorded": true, "prompt_tokens": u.Prompt, "output_tokens": u.Output}
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
		return tx.Set(shard, map[string]any{"tenant_id": u.TenantID, "period": u.Period, "updated_at": now,
			"prompt_tokens": firestore.Increment(u.Prompt), "output_tokens": firestore.Increment(u.Output)}, firestore.MergeAll)
	})
	if err != nil {
		return fmt.Errorf("record tokens of %s: %w", UsageID(u.TenantID, u.Period), err)
	}
	return nil
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
