package worker_test

import (
	"context"
	"strings"
	"testing"

	"github.com/wapipe/wapipe/internal/responder"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/whatsapp"
	"github.com/wapipe/wapipe/tasks"
)

// TestMalformedPayloadRefDeadLettered: a payload_ref of any form but the payload store's is a
// permanent input error: dead-lettered on the first attempt (200), no panic, no payload read.
func TestMalformedPayloadRefDeadLettered(t *testing.T) {
	t.Parallel()
	id := store.DocID("evt-1")
	tests := []struct {
		name string
		in   tasks.Inbound
	}{
		{"odd path", tasks.Inbound{PayloadRef: "firestore://inbound_events/a/b"}},
		{"empty id", tasks.Inbound{PayloadRef: "firestore://inbound_events/"}},
		{"other collection", tasks.Inbound{PayloadRef: "firestore://dead_letters/" + id}},
		{"subcollection", tasks.Inbound{PayloadRef: "firestore://inbound_events/" + id + "/payload_chunks"}},
		{"no scheme", tasks.Inbound{PayloadRef: "inbound_events/" + id}},
		{"payload and ref", tasks.Inbound{PayloadRef: "firestore://inbound_events/" + id, Payload: whatsapp.SampleText(whatsapp.SampleOptions{}, "hi")}},
		{"payload null", tasks.Inbound{Payload: []byte(`null`)}},
		{"payload a string", tasks.Inbound{Payload: []byte(`"x"`)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			hs := newHarness(t)
			tc.in.InboundEventID, tc.in.CorrelationID = "evt-1", "corr-1"
			hs.want(hs.run(tasks.ProcessInboundPath, tc.in, attempt{}), 200,
				map[string]any{"status": "dead_lettered", "dead_letter_id": "dl-1"}, "dead_lettered")
			if !strings.Contains(hs.logs.String(), `"permanent":true`) {
				t.Error("the dead letter is not logged as permanent")
			}
			if hs.records.Called("StartTrace") {
				t.Error("a malformed task started a trace")
			}
		})
	}
}

// panicking is a responder that crashes on every message.
var panicking = responder.Func(func(context.Context, whatsapp.Message) (responder.Reply, error) {
	panic("responder bug")
})

// TestPanicRecoveredRetries: a handler that panics answers 500, so Cloud Tasks retries, and the
// panic is logged once, with the task's correlation id.
func TestPanicRecoveredRetries(t *testing.T) {
	t.Parallel()
	hs := newHarness(t)
	hs.responder = panicking
	hs.want(hs.run(tasks.ProcessOutboundPath, outboundTask("wamid.in1"), attempt{}), 500,
		map[string]any{"status": "retry", "error": "internal"}, "panic_recovered")
	if n := hs.logs.Count("panic_recovered"); n != 1 {
		t.Errorf("%d panic_recovered lines, want 1", n)
	}
	if !strings.Contains(hs.logs.String(), `"correlation_id":"corr-1"`) {
		t.Errorf("the panic is not logged with the body's correlation id:\n%s", hs.logs.String())
	}
	if n := len(hs.records.DeadLetters()); n != 0 {
		t.Errorf("%d dead letters before the last attempt, want 0", n)
	}
}

// TestPanicRecoveredLastAttemptDeadLetters: on the task's last attempt a panic ends in a dead
// letter that keeps the body, answered 200.
func TestPanicRecoveredLastAttemptDeadLetters(t *testing.T) {
	t.Parallel()
	hs := newHarness(t)
	hs.responder = panicking
	out := outboundTask("wamid.in1")
	hs.want(hs.run(tasks.ProcessOutboundPath, out, lastAttempt(t, tasks.OutboundQueueID)), 200,
		map[string]any{"status": "dead_lettered", "dead_letter_id": "dl-1"}, "panic_recovered")
	dls := hs.records.DeadLetters()
	if len(dls) != 1 || dls[0].IdempotencyKey != out.IdempotencyKey || dls[0].CorrelationID != "corr-1" ||
		!strings.Contains(dls[0].LastError, "panicked") || dls[0].Body == "" {
		t.Errorf("dead letters = %+v", dls)
	}
}
