package worker_test

import (
	"context"
	"fmt"
	"regexp"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/wapipe/wapipe/internal/keyedid"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/whatsapp"
	"github.com/wapipe/wapipe/tasks"
)

// TestStatusFromAnotherTenantChangesNothing reproduces the red-team's attack (issue 21, item 2):
// tenant B sends a message of its own whose biz_opaque_callback_data is tenant A's record key,
// and Meta's statuses for it (B's number) echo that key. A's records, in every state, stay as they
// were, each attempt is logged at WARNING as status_mismatch, and A's own statuses still apply.
func TestStatusFromAnotherTenantChangesNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStack(t, stackOptions{})
	ops := s.ops()
	a := s.applyTenant(ops, tenantFile("acme-bus", numberA, "en", "public", ""), "EAAtoken-acme")
	b := s.applyTenant(ops, tenantFile("bali-tours", numberB, "id", "public", ""), "EAAtoken-bali")
	db := store.NewDB(s.fs)
	sends := store.NewSends(db, store.Options{})

	// A's records: sent (a real reply through the pipeline), pending (an api send whose task has
	// not run), sending (a send of unknown outcome) and failed.
	sentID := s.say(numberA, contact, "hello")
	sentWamid := s.sendFor(sentID).MessageID
	s.idle(tasks.TenantQueueID(a))
	sentKey := tasks.IdempotencyKey(keyedid.Dev(), sentID)
	pendingKey := tasks.SendKey("msg_00000000000000000000000000000001")
	if _, _, err := sends.CreateSend(ctx, store.OutboundRecord{IdempotencyKey: pendingKey, Source: store.SourceAPI,
		TenantID: a, PhoneNumberID: numberA, To: contact, MessageType: "text", RequestHash: "h"}); err != nil {
		t.Fatal(err)
	}
	sendingKey, failedKey := tasks.IdempotencyKey(keyedid.Dev(), "wamid.in-sending"), tasks.IdempotencyKey(keyedid.Dev(), "wamid.in-failed")
	for _, k := range []string{sendingKey, failedKey} {
		if _, _, err := s.records.BeginSend(ctx, store.OutboundRecord{IdempotencyKey: k, TenantID: a, PhoneNumberID: numberA}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.records.MarkFailed(ctx, failedKey, 131026, "whatsapp_permanent_error", "undeliverable"); err != nil {
		t.Fatal(err)
	}
	keys := map[string]string{"sent": sentKey, "pending": pendingKey, "sending": sendingKey, "failed": failedKey}
	before := map[string]store.OutboundRecord{}
	for name, k := range keys {
		rec, err := s.records.GetOutbound(ctx, k)
		if err != nil {
			t.Fatalf("%s record: %v", name, err)
		}
		before[name] = rec
	}
	wantState := map[string]string{"sent": store.OutboundSent, "pending": store.OutboundPending, "sending": store.OutboundSending, "failed": store.OutboundFailed}
	for name, rec := range before {
		if rec.State != wantState[name] {
			t.Fatalf("%s record is %s before the attack", name, rec.State)
		}
	}

	// The attack: B's number, A's keys, every status that moved a record before.
	n := 0
	for name, k := range keys {
		for _, st := range []string{"sent", "read", "failed"} {
			n++
			o := whatsapp.SampleOptions{PhoneNumberID: numberB, From: contact, MessageID: fmt.Sprintf("wamid.B-%s-%s", name, st), BizOpaqueCallbackData: k}
			if st == "failed" {
				s.deliver(whatsapp.SampleFailedStatus(o, 131026, "Message undeliverable", ""))
			} else {
				s.deliver(whatsapp.SampleStatus(o, st))
			}
		}
	}
	// The same with A's sent record found by its own wamid, from B's number.
	s.deliver(whatsapp.SampleStatus(whatsapp.SampleOptions{PhoneNumberID: numberB, From: contact, MessageID: sentWamid}, "read"))
	n++
	s.idle(tasks.TenantQueueID(a), tasks.TenantQueueID(b))
	for name, k := range keys {
		rec, err := s.records.GetOutbound(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(before[name], rec); diff != "" {
			t.Errorf("tenant A's %s record changed by tenant B's statuses (-before, +after):\n%s", name, diff)
		}
	}
	if got := len(regexp.MustCompile(`"severity":"WARNING"[^\n]*"event":"status_mismatch"`).FindAllString(s.logs.String(), -1)); got != n {
		t.Errorf("%d status_mismatch lines at WARNING, want %d", got, n)
	}
	if n := len(s.Graph.Sends()); n != 1 {
		t.Errorf("%d sends, want 1 (A's reply): a status sends nothing", n)
	}

	// A's own statuses still apply: the sent record is delivered, the send of unknown outcome is
	// reconciled. A pending record is not settled by a wamid that is not its own, and a failed
	// record is never reopened, even from A's own number: it only learns that Meta has the
	// message, so a replay of its dead letter never sends it again.
	fromA := func(wamid, key, st string) {
		s.deliver(whatsapp.SampleStatus(whatsapp.SampleOptions{PhoneNumberID: numberA, From: contact, MessageID: wamid, BizOpaqueCallbackData: key}, st))
	}
	fromA(sentWamid, sentKey, "delivered")
	fromA("wamid.A-reconciled", sendingKey, "sent")
	fromA("wamid.A-other", pendingKey, "sent")
	fromA("wamid.A-late", failedKey, "delivered")
	s.idle(tasks.TenantQueueID(a))
	for _, tc := range []struct {
		name, key, state, delivery, wamid string
	}{
		{"sent", sentKey, store.OutboundSent, store.DeliveryDelivered, sentWamid},
		{"sending", sendingKey, store.OutboundSent, store.DeliverySent, "wamid.A-reconciled"},
		{"pending", pendingKey, store.OutboundPending, "", ""},
		{"failed", failedKey, store.OutboundFailed, store.DeliveryDelivered, "wamid.A-late"},
	} {
		rec, err := s.records.GetOutbound(ctx, tc.key)
		if err != nil {
			t.Fatal(err)
		}
		if rec.State != tc.state || rec.DeliveryStatus != tc.delivery || rec.GraphMessageID != tc.wamid {
			t.Errorf("%s record after A's status: %s/%q/%q, want %s/%q/%q", tc.name, rec.State, rec.DeliveryStatus, rec.GraphMessageID, tc.state, tc.delivery, tc.wamid)
		}
	}
	if got := s.logs.Count("status_mismatch"); got != n+1 {
		t.Errorf("%d status_mismatch lines in all, want %d (B's and A's one refused)", got, n+1)
	}
	if got := s.logs.Count("status_after_failure"); got != 1 {
		t.Errorf("%d status_after_failure lines, want 1 (A's failed record)", got)
	}
	checkPrivacy(t, s.logs.String(), "EAAtoken-acme", "EAAtoken-bali")
}
