package assistant_test

import (
	"context"
	"testing"
	"time"

	"github.com/wapipe/wapipe/internal/assistant"
	"github.com/wapipe/wapipe/internal/assistant/assistanttest"
	"github.com/wapipe/wapipe/internal/tenant"
	"github.com/wapipe/wapipe/internal/turnstate"
	"github.com/wapipe/wapipe/pricing"
)

// spending is what the tenant and each contact spent this month, as the ledger would say.
type spending struct {
	tenant   pricing.Amount
	contacts map[string]pricing.Amount
}

func (s *spending) Spent(context.Context, string, string) (pricing.Amount, error) {
	return s.tenant, nil
}

func (s *spending) SenderSpent(_ context.Context, _, contactID, _ string) (pricing.Amount, error) {
	return s.contacts[contactID], nil
}

// TestBudgetBeforeTheCall: with budget.monthly_usd 1.00 and per_sender_share 0.1, a turn whose
// estimated price fits is sent to the model; one that would take the month past the budget, or
// its contact past its share (0.10), is answered with the quota notice and makes no call, while
// another contact is still served.
func TestBudgetBeforeTheCall(t *testing.T) {
	t.Parallel()
	card, err := pricing.Load()
	if err != nil {
		t.Fatal(err)
	}
	share := 0.1
	tn := newTenant(t, func(t *tenant.Tenant) {
		t.Budget = tenant.Budget{MonthlyUSD: "1.00", PerSenderShare: &share}
		t.Assistant.Model = "gemini-2.5-flash"
	})
	other := "33699999999"
	cases := []struct {
		name         string
		tenant, mine pricing.Amount
		from         string
		wantReason   string
		wantCalls    int
	}{
		{"within the budget", 0, 0, ownerID, "", 1},
		{"the month all but spent", 999_000_000_000, 0, ownerID, assistant.ReasonBudgetExceeded, 0},
		{"the contact's share spent", 500_000_000_000, 99_900_000_000, ownerID, assistant.ReasonBudgetShare, 0},
		{"another contact, same month", 500_000_000_000, 0, other, "", 1},
	}
	for _, c := range cases {
		x := assistanttest.NewExtractor()
		x.Default = always(generalResult("Halo!"))
		s := &spending{tenant: c.tenant, contacts: map[string]pricing.Amount{contactOf(ownerID): c.mine}}
		e := assistant.New(x, assistanttest.NewGuard()).WithPrices(card, s, nil)
		out := run(t, e, input(tn, textMsg("m-1", c.from, "Bus 03 AC mati"), time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC), turnstate.State{}))
		if out.Reason != c.wantReason || x.Calls() != c.wantCalls {
			t.Errorf("%s: reason %q, %d calls; want %q, %d", c.name, out.Reason, x.Calls(), c.wantReason, c.wantCalls)
		}
		if c.wantReason != "" && (out.Event != assistant.EventQuotaBlocked || len(out.Replies) != 1) {
			t.Errorf("%s: event %q with %d replies, want the quota notice", c.name, out.Event, len(out.Replies))
		}
	}
}
