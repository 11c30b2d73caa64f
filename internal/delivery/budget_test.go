package delivery_test

import (
	"context"
	"testing"
	"time"

	"github.com/wapipe/wapipe/internal/delivery"
	"github.com/wapipe/wapipe/internal/outgoing"
	"github.com/wapipe/wapipe/pricing"
)

// spent is a tenant's month's spending, as the ledger says it.
type spent pricing.Amount

func (s spent) Spent(context.Context, string, string) (pricing.Amount, error) {
	return pricing.Amount(s), nil
}

// TestReengageWaitsPastTheBudget: a reply outside the window, which would go as the tenant's
// reengage template (charged by Meta), is skipped with budget_exhausted while the month is past
// the tenant's budget, and sent as the template while it is not.
func TestReengageWaitsPastTheBudget(t *testing.T) {
	t.Parallel()
	file := "id: acme\nname: Acme\nlanguage: en\naudience: public\nbudget: {monthly_usd: \"1.00\"}\n" +
		"phone_numbers:\n  - {phone_number_id: \"" + number + "\", waba_id: \"900\"}\n" +
		"templates:\n  reengage: {name: hello_again, language: en}\n"
	for _, tc := range []struct {
		name  string
		spent pricing.Amount
		want  delivery.Status
	}{
		{"within the budget", 500_000_000_000, delivery.Sent},
		{"past the budget", 1_000_000_000_000, delivery.Skipped},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			d, fake := templateDeliverer(t, file, namedWindow{last: time.Now().Add(-30 * time.Hour)})
			d.Spending = spent(tc.spent)
			res := d.Deliver(ctx, delivery.Request{Kind: delivery.ConversationReply, Key: "k-1", TenantID: "acme",
				PhoneNumberID: number, To: contact, ConversationID: conversationID, LastInbound: time.Now().Add(-30 * time.Hour),
				Reply: outgoing.Message{Text: "hello"}})
			if res.Status != tc.want || (tc.want == delivery.Skipped) != (res.Reason == delivery.ReasonBudgetExhausted) {
				t.Fatalf("Deliver: %+v, want %v", res, tc.want)
			}
			if n := len(fake.Sends()); (n == 1) != (tc.want == delivery.Sent) {
				t.Errorf("%d sends, want the template only within the budget", n)
			}
		})
	}
}
