package store_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/turnstate"
)

// TestRecordTokens: the tokens of each call are added to the tenant's period once per call id
// (a redone recording adds nothing), concurrent calls all count, the call count is unchanged by
// them, and other tenants and periods are apart.
func TestRecordTokens(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	g := newGuard(t)
	const calls = 20
	var wg sync.WaitGroup
	errs := make(chan error, 2*calls)
	for i := range calls {
		id := fmt.Sprintf("call-%d", i)
		if _, err := g.ReserveCall(ctx, turnstate.CallReservation{TenantID: "acme", Period: "2026-11", CallID: id}); err != nil {
			t.Fatal(err)
		}
		for range 2 { // each recorded twice, concurrently: counted once
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs <- g.RecordTokens(ctx, turnstate.TokenUse{TenantID: "acme", Period: "2026-11", CallID: id, Prompt: 100, Output: 7})
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := g.RecordTokens(ctx, turnstate.TokenUse{TenantID: "other", Period: "2026-11", CallID: "x", Prompt: 5, Output: 5}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		tenant, period string
		want           store.TokenUsage
	}{
		{"acme", "2026-11", store.TokenUsage{Prompt: 100 * calls, Output: 7 * calls}},
		{"other", "2026-11", store.TokenUsage{Prompt: 5, Output: 5}},
		{"acme", "2026-12", store.TokenUsage{}},
	} {
		got, err := g.Tokens(ctx, tc.tenant, tc.period)
		if err != nil {
			t.Fatal(err)
		}
		if got != tc.want {
			t.Errorf("Tokens(%s, %s) = %+v, want %+v", tc.tenant, tc.period, got, tc.want)
		}
	}
	if n, err := g.Usage(ctx, "acme", "2026-11"); err != nil || n != calls {
		t.Errorf("Usage = %d (%v), want %d calls", n, err, calls)
	}
	if err := g.RecordTokens(ctx, turnstate.TokenUse{TenantID: "acme", Period: "2026-11"}); err == nil {
		t.Error("RecordTokens without a call id: no error")
	}
}
