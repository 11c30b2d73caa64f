package delivery_test

import (
	"context"
	"testing"
	"time"

	"github.com/wapipe/wapipe/internal/delivery"
	"github.com/wapipe/wapipe/internal/store"
)

// TestNotificationWindow: a notification goes as text inside the member's window; outside it as
// its record's fallback (templates.notify), never as the tenant's reengage template; without a
// fallback it is skipped, before any send or after Meta's 131047.
func TestNotificationWindow(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		lastInbound time.Duration // before now
		metaCloses  bool          // Meta answers 131047 to the text
		fallback    bool
		status      delivery.Status
		state       string
		sendCalls   int
		template    string // the template sent, "" for the text
	}{
		{"inside the window: text", time.Hour, false, true, delivery.Sent, store.OutboundSent, 1, ""},
		{"outside: templates.notify", 25 * time.Hour, false, true, delivery.Sent, store.OutboundSent, 1, notifyTemplate},
		{"outside, no template: skipped", 25 * time.Hour, false, false, delivery.Skipped, store.OutboundSkipped, 0, ""},
		{"131047: templates.notify", time.Hour, true, true, delivery.Sent, store.OutboundSent, 2, notifyTemplate},
		{"131047, no template: skipped", time.Hour, true, false, delivery.Skipped, store.OutboundSkipped, 1, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, token, time.Time{})
			e.d.Windows = windows{last: e.clk.now().Add(-tc.lastInbound)}
			if tc.metaCloses {
				e.fake.CloseWindow(contact, true)
			}
			const key = "k-notification"
			rec := store.OutboundRecord{IdempotencyKey: key, Source: store.SourceNotification, TenantID: "acme",
				PhoneNumberID: number, To: contact, ConversationID: conversationID, Message: `{"type":"text","text":{"body":"New request from Marie: create_booking"}}`, MessageType: "text"}
			if tc.fallback {
				rec.Fallback = notifyFallback
			}
			ctx := context.Background()
			if _, _, err := e.sends.CreateSend(ctx, rec); err != nil {
				t.Fatal(err)
			}
			res := e.d.DeliverStored(ctx, delivery.Stored{Key: key, TenantID: "acme"})
			got, err := e.out.GetOutbound(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != tc.status || got.State != tc.state || e.sendCalls() != tc.sendCalls {
				t.Errorf("status %v, record %s, %d send calls; want %v, %s, %d (result %+v)",
					res.Status, got.State, e.sendCalls(), tc.status, tc.state, tc.sendCalls, res)
			}
			sends := e.fake.Sends()
			if tc.status != delivery.Sent {
				if len(sends) != 0 {
					t.Errorf("%d sends accepted, want none", len(sends))
				}
				return
			}
			if len(sends) != 1 {
				t.Fatalf("%d sends accepted, want 1", len(sends))
			}
			tpl, _ := sends[0].Body["template"].(map[string]any)
			switch {
			case tc.template == "" && sends[0].Body["type"] != "text":
				t.Errorf("sent %v, want the text", sends[0].Body)
			case tc.template != "" && (tpl == nil || tpl["name"] != tc.template):
				t.Errorf("sent %v, want the template %s (never the reengage template)", sends[0].Body, tc.template)
			}
			// A second delivery of the same record sends nothing more.
			if again := e.d.DeliverStored(ctx, delivery.Stored{Key: key, TenantID: "acme"}); again.Status != delivery.Settled || len(e.fake.Sends()) != 1 {
				t.Errorf("second delivery: %v and %d sends, want settled and 1", again.Status, len(e.fake.Sends()))
			}
		})
	}
}
