package worker_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wapipe/wapipe/internal/delivery"
	"github.com/wapipe/wapipe/internal/graph"
	"github.com/wapipe/wapipe/internal/outgoing"
	"github.com/wapipe/wapipe/internal/responder"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/whatsapp"
	"github.com/wapipe/wapipe/internal/worker"
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
			if hs.records.Called("PutTrace") {
				t.Error("a malformed task wrote a trace")
			}
		})
	}
}

// panicking is a responder that crashes on every message.
var panicking = responder.Func(func(context.Context, whatsapp.Message) (outgoing.Message, error) {
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
	if !panicLineHas(hs.logs.String(), `"correlation_id":"corr-1"`) {
		t.Errorf("the panic is not logged with the body's correlation id:\n%s", hs.logs.String())
	}
	if n := len(hs.records.DeadLetters()); n != 0 {
		t.Errorf("%d dead letters before the last attempt, want 0", n)
	}
}

// panicLineHas reports whether the panic_recovered line of logs contains want.
func panicLineHas(logs, want string) bool {
	for _, line := range strings.Split(logs, "\n") {
		if strings.Contains(line, `"event":"panic_recovered"`) && strings.Contains(line, want) {
			return true
		}
	}
	return false
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

// graphSender is the worker's Graph sender on a real client for baseURL.
func graphSender(t *testing.T, baseURL string, timeout time.Duration) worker.Sender {
	t.Helper()
	c, err := graph.NewClient(baseURL, "test-access-token", &http.Client{Timeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	return delivery.NewGraphSender(c)
}

// TestOutboundConnectionRefusedRetriesAtOnce: a send whose connection was refused never left, so
// the record goes back to pending (definite) and the retry sends at once, with no reconcile wait.
func TestOutboundConnectionRefusedRetriesAtOnce(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	hs := newHarness(t)
	hs.graph = graphSender(t, "http://"+addr, 5*time.Second)
	out := outboundTask("wamid.in1")
	hs.want(hs.run(tasks.ProcessOutboundPath, out, attempt{}), 503, retryBody("temporary_failure"), "outbound_retry")
	if got := hs.records.Mark(out.IdempotencyKey); got != "retry definite=true 0" {
		t.Errorf("record marked %q, want a definite retry", got)
	}
	if !strings.Contains(hs.logs.String(), `"class":"not_sent"`) {
		t.Error("the failure is not logged as not_sent")
	}
}

// TestOutboundHungSendOutcomeUnknown: a send that reached Meta's address and then hung may have
// been sent: the record stays of unknown outcome, to wait for its status webhook.
func TestOutboundHungSendOutcomeUnknown(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { <-release }))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) })
	hs := newHarness(t)
	hs.graph = graphSender(t, srv.URL, 100*time.Millisecond)
	out := outboundTask("wamid.in1")
	hs.want(hs.run(tasks.ProcessOutboundPath, out, attempt{}), 503, retryBody("temporary_failure"), "outbound_retry")
	if got := hs.records.Mark(out.IdempotencyKey); got != "retry definite=false 0" {
		t.Errorf("record marked %q, want a retry of unknown outcome", got)
	}
}

// TestOutboundOutcomeUnknownDeadLettered: once the reconcile window has passed without a status
// webhook (or the queue's attempts run out first), the reply is not resent blindly: the record is
// marked failed (so a replay can reopen it) and the task kept as an outcome_unknown dead letter,
// logged at ERROR.
func TestOutboundOutcomeUnknownDeadLettered(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		decision store.Decision
		attempt  func(*testing.T) attempt
	}{
		{"window passed", store.OutcomeUnknown, func(*testing.T) attempt { return attempt{retryCount: 3} }},
		{"last attempt inside the window", store.AwaitReconcile, func(t *testing.T) attempt { return lastAttempt(t, tasks.OutboundQueueID) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			hs := newHarness(t)
			hs.records.BeginSendFn = func(store.OutboundRecord) (store.Decision, store.OutboundRecord, error) {
				return tc.decision, store.OutboundRecord{State: store.OutboundSending}, nil
			}
			out := outboundTask("wamid.in1")
			hs.want(hs.run(tasks.ProcessOutboundPath, out, tc.attempt(t)), 200,
				map[string]any{"status": "dead_lettered", "dead_letter_id": "dl-1"}, "dead_lettered")
			if n := len(hs.sender.Sends()); n != 0 {
				t.Errorf("%d sends, want none", n)
			}
			if got := hs.records.Mark(out.IdempotencyKey); !strings.HasPrefix(got, "failed 0 outcome_unknown") {
				t.Errorf("record marked %q, want failed as outcome_unknown", got)
			}
			dls := hs.records.DeadLetters()
			if len(dls) != 1 || dls[0].Reason != "outcome_unknown" || dls[0].IdempotencyKey != out.IdempotencyKey {
				t.Errorf("dead letters = %+v, want one outcome_unknown", dls)
			}
			if !strings.Contains(hs.logs.String(), `"severity":"ERROR","message":"task dead-lettered"`) {
				t.Errorf("the dead letter is not logged at ERROR:\n%s", hs.logs.String())
			}
		})
	}
}

// panicTenants crashes on every tenant lookup; panicSends on every send record read;
// panicSender on every Graph call (a nil interface's method).
type (
	panicTenants struct{ worker.TenantResolver }
	panicSends   struct{ delivery.Parker }
	panicSender  struct{ delivery.Sender }
)

// MarkRead does not panic: it runs beside the send, in a goroutine of its own.
func (panicSender) MarkRead(context.Context, string, string, string) error { return nil }

// TestPanicOnLastAttemptDeadLettersEveryTaskRoute: whatever task route a panic ends, on the
// task's last attempt it is kept as a dead letter with its body, answered 200, also when Cloud
// Tasks' queue header is missing (the route's own queue then says which attempt is the last).
func TestPanicOnLastAttemptDeadLettersEveryTaskRoute(t *testing.T) {
	t.Parallel()
	const tenantID = "acme-bus"
	inbound := tasks.Inbound{InboundEventID: "evt-1", CorrelationID: "corr-1",
		Payload: whatsapp.SampleText(whatsapp.SampleOptions{PhoneNumberID: "PNID1", From: customerPhone}, "hello")}
	// The single-tenant default's reply: a tenant's goes through its conversation, whose panics
	// the conversation tests cover.
	outbound := outboundTask("wamid.in1")
	req, _ := json.Marshal(map[string]any{"action_id": "act-1", "intent": "create_booking"})
	act := tasks.Action{ActionID: "act-1", TenantID: tenantID, ConversationID: "conv-1", PhoneNumberID: "PNID1",
		To: customerPhone, MessageID: "wamid.in1", CorrelationID: "corr-1", Request: req}
	send := tasks.Send{IdempotencyKey: tasks.SendKey("msg_00000000000000000000000000000001"), TenantID: tenantID, CorrelationID: "corr-1"}
	for _, tc := range []struct {
		path, queue string
		body        any
	}{
		{tasks.ProcessInboundPath, tasks.InboundQueueID, inbound},
		{tasks.ProcessOutboundPath, tasks.OutboundQueueID, outbound},
		{tasks.ProcessActionPath, tasks.TenantQueueID(tenantID), act},
		{tasks.ProcessSendPath, tasks.TenantQueueID(tenantID), send},
	} {
		for _, header := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/queue_header=%v", tc.path, header), func(t *testing.T) {
				t.Parallel()
				hs := newHarness(t)
				hs.deps = append(hs.deps, func(d *worker.Deps) { d.Tenants, d.Sends, d.Sender = panicTenants{}, panicSends{}, panicSender{} })
				q, ok := tasks.DefaultQueues().Queue(tc.queue)
				if !ok {
					t.Fatalf("no queue %s", tc.queue)
				}
				b, _ := json.Marshal(tc.body)
				r := httptest.NewRequest(http.MethodPost, tc.path, bytes.NewReader(b))
				r.Header.Set(tasks.HeaderInternalToken, internalToken)
				if header {
					r.Header.Set(tasks.HeaderQueueName, tc.queue)
				}
				r.Header.Set(tasks.HeaderTaskName, "task-1")
				r.Header.Set(tasks.HeaderTaskRetryCount, strconv.Itoa(int(q.RetryConfig.MaxAttempts)-1))
				rec := httptest.NewRecorder()
				hs.serve().ServeHTTP(rec, r)
				if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"dead_lettered"`) {
					t.Errorf("last attempt answered %d %s, want 200 dead_lettered", rec.Code, rec.Body.String())
				}
				if !hs.logs.Has("panic_recovered") {
					t.Error("no panic_recovered log line")
				}
				dls := hs.records.DeadLetters()
				if len(dls) != 1 || dls[0].Path != tc.path || dls[0].Body != string(b) || !strings.Contains(dls[0].LastError, "panicked") {
					t.Errorf("dead letters = %+v, want the task's, with its body", dls)
				}
			})
		}
	}
}
