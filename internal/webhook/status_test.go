package webhook_test

import (
	"context"
	"testing"

	"github.com/wapipe/wapipe/internal/webhook"
	"github.com/wapipe/wapipe/internal/whatsapp"
	"github.com/wapipe/wapipe/tasks"
)

// TestStatusDeliveryNotMarked: a delivery of statuses only costs no Firestore write at the
// webhook (each status is deduplicated downstream); its task's name makes a redelivery a
// duplicate, and a store outage does not refuse it, even failing closed.
func TestStatusDeliveryNotMarked(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{webhook.FailClosed, webhook.FailOpen} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			hs := newHarness(t, mode)
			hs.markers.MarkFn = func(context.Context, string) (bool, error) { return false, errDown }
			body := whatsapp.SampleStatus(whatsapp.SampleOptions{MessageID: "wamid.out"}, "delivered")
			hs.want(hs.post(body, nil), 200, map[string]string{"status": "accepted"}, "webhook_accepted")
			hs.want(hs.post(body, nil), 200, map[string]string{"status": "duplicate"}, "duplicate_dropped")
			if n := hs.markers.Calls(); n != 0 {
				t.Errorf("%d mark_if_new calls for a status delivery, want none", n)
			}
			if got := hs.queue.Tasks(); len(got) != 1 || got[0].ID != tasks.InboundTaskID("wamid.out:delivered") {
				t.Errorf("tasks = %+v, want the event's one", got)
			}
		})
	}
}

// TestMessageWithStatusesMarked: a delivery holding a message is marked, whatever else it holds.
func TestMessageWithStatusesMarked(t *testing.T) {
	t.Parallel()
	hs := newHarness(t, "")
	hs.want(hs.post(payloadOfSize(2<<10), nil), 200, map[string]string{"status": "accepted"}, "webhook_accepted")
	if n := hs.markers.Calls(); n != 1 {
		t.Errorf("%d mark_if_new calls, want 1", n)
	}
}
