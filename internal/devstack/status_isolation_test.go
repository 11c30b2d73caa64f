package devstack_test

import (
	"context"
	"fmt"
	"regexp"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/testenv"
	"github.com/wapipe/wapipe/internal/whatsapp"
)

const (
	isoNumberA = "300000000000001"
	isoNumberB = "300000000000002"
)

func isoTenant(id, number string) []byte {
	return []byte(fmt.Sprintf("id: %s\nname: %s\nlanguage: en\naudience: public\nphone_numbers:\n  - {phone_number_id: %q, waba_id: \"400000000000001\"}\n", id, id, number))
}

// TestStatusFromAnotherTenantEndToEnd runs the red-team's attack (issue 21, item 2) through the
// real services: tenant A sends through the api (POST /v1/messages with an Idempotency-Key);
// tenant B's number then reports statuses whose biz_opaque_callback_data is A's record key, as a
// message B sent itself would. The signed webhooks go through the webhook, the Cloud Tasks
// emulator and the worker; A's record in Firestore is unchanged, the worker logs status_mismatch
// at WARNING, and A's own status still applies.
func TestStatusFromAnotherTenantEndToEnd(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a := startAPIStack(t, "acme-bus", isoTenant("acme-bus", isoNumberA), isoTenant("bali-tours", isoNumberB))
	st, logs := a.st, a.logs
	// Tenant A's message, sent and recorded.
	before := a.sendTemplate(t, "447700900123", "order-42")
	recordKey := before.IdempotencyKey
	outbound := store.NewOutbound(a.db, store.Options{})

	// The attack: statuses from B's number echoing A's record key (and one naming A's wamid).
	n := 0
	for _, s := range []string{"sent", "delivered", "read"} {
		post(t, st, whatsapp.SampleStatus(whatsapp.SampleOptions{PhoneNumberID: isoNumberB, From: customerPhone,
			MessageID: "wamid.B-" + s, BizOpaqueCallbackData: recordKey}, s))
		n++
	}
	post(t, st, whatsapp.SampleFailedStatus(whatsapp.SampleOptions{PhoneNumberID: isoNumberB, From: customerPhone,
		MessageID: "wamid.B-failed", BizOpaqueCallbackData: recordKey}, 131026, "Message undeliverable", ""))
	post(t, st, whatsapp.SampleStatus(whatsapp.SampleOptions{PhoneNumberID: isoNumberB, From: customerPhone, MessageID: before.GraphMessageID}, "read"))
	n += 2
	mismatch := regexp.MustCompile(`"severity":"WARNING"[^\n]*"event":"status_mismatch"`)
	testenv.Eventually(t, 20*time.Second, func() bool { return len(mismatch.FindAllString(logs.String(), -1)) == n },
		"want %d status_mismatch lines at WARNING", n)
	after, err := outbound.GetOutbound(ctx, recordKey)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(before, after); diff != "" {
		t.Errorf("tenant A's record changed by tenant B's statuses (-before, +after):\n%s", diff)
	}

	// A's own status applies.
	post(t, st, whatsapp.SampleStatus(whatsapp.SampleOptions{PhoneNumberID: isoNumberA, From: customerPhone,
		MessageID: before.GraphMessageID, BizOpaqueCallbackData: recordKey}, "delivered"))
	testenv.Eventually(t, 20*time.Second, func() bool {
		rec, err := outbound.GetOutbound(ctx, recordKey)
		return err == nil && rec.DeliveryStatus == store.DeliveryDelivered && rec.State == store.OutboundSent
	}, "tenant A's own delivered status was not applied")
	if got := len(mismatch.FindAllString(logs.String(), -1)); got != n {
		t.Errorf("%d status_mismatch lines after A's own status, want %d", got, n)
	}
}
