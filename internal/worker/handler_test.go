package worker_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wapipe/wapipe/internal/delivery"
	"github.com/wapipe/wapipe/internal/graph"
	"github.com/wapipe/wapipe/internal/keyedid"
	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/internal/logging/logcheck"
	"github.com/wapipe/wapipe/internal/outgoing"
	"github.com/wapipe/wapipe/internal/responder"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/testenv"
	"github.com/wapipe/wapipe/internal/whatsapp"
	"github.com/wapipe/wapipe/internal/worker"
	"github.com/wapipe/wapipe/tasks"
)

// These tests specify the worker's answer to each outcome of a task against in-memory fakes: they
// need no emulator and run under -short. The emulator tests in worker_test.go run the same paths
// through the whole pipeline.

const (
	internalToken      = "test-internal-token-0123456789"
	defaultAccessToken = "EAAdefault-token"
)

// harness is one worker on fakes.
type harness struct {
	t        *testing.T
	h        http.Handler
	records  *fakeRecords
	queue    *fakeQueue
	payloads fakePayloads
	sender   *fakeSender
	// graph, when set, sends instead of sender: a real Graph client against a test server.
	graph     worker.Sender
	responder responder.Responder
	hasher    *logging.Hasher
	logs      *testenv.LogBuffer
	// tenants, when set, are the worker's tenants (resolver, members and tokens).
	tenants *fakeTenants
	// noDefault leaves WHATSAPP_ACCESS_TOKEN unset.
	noDefault bool
	// deps change the worker's dependencies last, before it is built.
	deps []func(*worker.Deps)
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	hs := &harness{t: t, records: &fakeRecords{}, queue: &fakeQueue{}, payloads: fakePayloads{}, sender: &fakeSender{},
		responder: responder.Ack{Text: "thanks"}, hasher: logging.DevHasher(), logs: &testenv.LogBuffer{}}
	// Every test's logs: no wamid, phone number or unkeyed hash (CONTRACT.md, Logs).
	t.Cleanup(func() {
		logcheck.Check(t, hs.logs.String(), []string{customerPhone, whatsapp.DefaultSampleOptions.From}, nil)
	})
	return hs
}

// serve builds the worker once the test has set its fakes.
func (hs *harness) serve() http.Handler {
	if hs.h == nil {
		cfg := &worker.Config{OutboundQueue: tasks.OutboundQueueID, InboundQueue: tasks.InboundQueueID}
		cfg.InternalTaskToken = internalToken
		if !hs.noDefault {
			cfg.AccessToken = defaultAccessToken
		}
		deps := worker.Deps{
			Tasks: hs.queue, Payloads: hs.payloads,
			Outbound: hs.records, Statuses: hs.records, Traces: hs.records, DeadLetters: hs.records,
			Sender: hs.senderUsed(), Responder: hs.responder, Hasher: hs.hasher,
			Logger: logging.New(hs.logs, logging.Options{Level: slog.LevelDebug, Hasher: hs.hasher}),
		}
		if hs.tenants != nil {
			deps.Tenants, deps.Members, deps.Tokens = hs.tenants, hs.tenants, hs.tenants
		}
		for _, f := range hs.deps {
			f(&deps)
		}
		hs.h = worker.NewServer(cfg, deps).Routes()
	}
	return hs.h
}

func (hs *harness) senderUsed() worker.Sender {
	if hs.graph != nil {
		return hs.graph
	}
	return hs.sender
}

// answer is the worker's response, decoded.
type answer struct {
	Code   int
	Body   map[string]any
	Header http.Header
}

// attempt is how Cloud Tasks runs the task: which retry it is.
type attempt struct {
	retryCount int
	token      string
}

// lastAttempt is the outbound queue's last attempt.
func lastAttempt(t *testing.T, queue string) attempt {
	q, ok := tasks.DefaultQueues().Queue(queue)
	if !ok || q.RetryConfig.MaxAttempts < 1 {
		t.Fatalf("queue %s has no max_attempts", queue)
	}
	return attempt{retryCount: int(q.RetryConfig.MaxAttempts) - 1}
}

// run posts body (bytes as they are, anything else as JSON) to path as Cloud Tasks would.
func (hs *harness) run(path string, body any, a attempt) answer {
	hs.t.Helper()
	b, ok := body.([]byte)
	if !ok {
		var err error
		if b, err = json.Marshal(body); err != nil {
			hs.t.Fatal(err)
		}
	}
	req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(b))
	token := internalToken
	if a.token != "" {
		token = a.token
	}
	req.Header.Set(tasks.HeaderInternalToken, token)
	queue := tasks.InboundQueueID
	if path == tasks.ProcessOutboundPath {
		queue = tasks.OutboundQueueID
		if out, ok := body.(tasks.Outbound); ok && out.TenantID != "" {
			queue = tasks.TenantQueueID(out.TenantID)
		}
	}
	req.Header.Set(tasks.HeaderQueueName, queue)
	req.Header.Set(tasks.HeaderTaskName, "task-1")
	req.Header.Set(tasks.HeaderTaskRetryCount, strconv.Itoa(a.retryCount))
	req.Header.Set(tasks.HeaderCorrelationID, "corr-header")
	rec := httptest.NewRecorder()
	hs.serve().ServeHTTP(rec, req)
	got := answer{Code: rec.Code, Header: rec.Header()}
	if err := json.Unmarshal(rec.Body.Bytes(), &got.Body); err != nil {
		hs.t.Fatalf("answer %d is not JSON: %q", rec.Code, rec.Body.String())
	}
	return got
}

// want checks the status code, the JSON body and that the log has event.
func (hs *harness) want(got answer, code int, body map[string]any, event string) {
	hs.t.Helper()
	if got.Code != code {
		hs.t.Errorf("status %d, want %d", got.Code, code)
	}
	if diff := cmp.Diff(body, got.Body); diff != "" {
		hs.t.Errorf("body (-want, +got):\n%s", diff)
	}
	if event != "" && !hs.logs.Has(event) {
		hs.t.Errorf("no %q log line in:\n%s", event, hs.logs.String())
	}
}

func retryBody(reason string) map[string]any {
	return map[string]any{"status": "retry", "error": reason}
}

var errDown = errors.New("rpc error: code = Unavailable")

// --- process_inbound ---

func inboundTask(id string, payload []byte) tasks.Inbound {
	return tasks.Inbound{InboundEventID: id, CorrelationID: "corr-1", ReceivedAt: time.Now(), Payload: payload}
}

func TestInboundFansOut(t *testing.T) {
	t.Parallel()
	hs := newHarness(t)
	payload := whatsapp.SampleBatch(whatsapp.SampleOptions{}, 3)
	got := hs.run(tasks.ProcessInboundPath, inboundTask("evt-1", payload), attempt{})
	hs.want(got, 200, map[string]any{"status": "ok", "messages": 3.0, "statuses": 0.0, "tasks_created": 3.0, "tasks_existed": 0.0}, "inbound_fanout")
	ids := map[string]bool{}
	for _, task := range hs.queue.Tasks() {
		var out tasks.Outbound
		if err := json.Unmarshal(task.Body, &out); err != nil {
			t.Fatal(err)
		}
		if task.Queue != tasks.OutboundQueueID || task.Path != tasks.ProcessOutboundPath || task.ID != tasks.OutboundTaskID(out.Message.ID) ||
			out.IdempotencyKey != tasks.IdempotencyKey(keyedid.Dev(), out.Message.ID) || out.CorrelationID != "corr-1" || out.InboundEventID != "evt-1" {
			t.Errorf("outbound task %s = %s", task.ID, task.Body)
		}
		ids[task.ID] = true
	}
	if len(ids) != 3 {
		t.Errorf("%d distinct outbound tasks, want 3", len(ids))
	}
	if diff := cmp.Diff([]string{"trace evt-1 " + store.TraceFinished}, hs.records.Traces()); diff != "" {
		t.Errorf("trace (-want, +got):\n%s", diff)
	}
}

func TestInboundTraceFailsRetries(t *testing.T) {
	t.Parallel()
	hs := newHarness(t)
	hs.records.Err = map[string]error{"PutTrace": errDown}
	got := hs.run(tasks.ProcessInboundPath, inboundTask("evt-1", whatsapp.SampleText(whatsapp.SampleOptions{}, "hi")), attempt{})
	// The trace is written last: the retry finds the outbound task by its name.
	hs.want(got, 503, retryBody("temporary_failure"), "task_retry")
}

func TestInboundEnqueueFailsRetries(t *testing.T) {
	t.Parallel()
	hs := newHarness(t)
	hs.queue.Err = errDown
	got := hs.run(tasks.ProcessInboundPath, inboundTask("evt-1", whatsapp.SampleText(whatsapp.SampleOptions{}, "hi")), attempt{})
	hs.want(got, 503, retryBody("temporary_failure"), "task_retry")
	if diff := cmp.Diff([]string{"trace evt-1 " + store.TraceRetrying}, hs.records.Traces()); diff != "" {
		t.Errorf("trace (-want, +got):\n%s", diff)
	}
}

// TestInboundLastAttemptDeadLetters: what still fails on the last attempt is kept, not lost.
func TestInboundLastAttemptDeadLetters(t *testing.T) {
	t.Parallel()
	hs := newHarness(t)
	hs.queue.Err = errDown
	got := hs.run(tasks.ProcessInboundPath, inboundTask("evt-1", whatsapp.SampleText(whatsapp.SampleOptions{}, "hi")), lastAttempt(t, tasks.InboundQueueID))
	hs.want(got, 200, map[string]any{"status": "dead_lettered", "dead_letter_id": "dl-1"}, "dead_lettered")
	dls := hs.records.DeadLetters()
	if len(dls) != 1 || dls[0].Path != tasks.ProcessInboundPath || dls[0].InboundEventID != "evt-1" || dls[0].TaskName != "task-1" ||
		dls[0].Queue != tasks.InboundQueueID || !strings.Contains(dls[0].LastError, "Unavailable") {
		t.Errorf("dead letters = %+v", dls)
	}
}

func TestInboundStatusesDeduplicatedAndApplied(t *testing.T) {
	t.Parallel()
	hs := newHarness(t)
	key := tasks.IdempotencyKey(keyedid.Dev(), "wamid.in")
	o := whatsapp.SampleOptions{MessageID: "wamid.out", BizOpaqueCallbackData: key}
	hs.records.seen = map[string]bool{"wamid.out:sent": true}
	for _, status := range []string{"sent", "delivered"} {
		got := hs.run(tasks.ProcessInboundPath, inboundTask("evt-"+status, whatsapp.SampleStatus(o, status)), attempt{})
		hs.want(got, 200, map[string]any{"status": "ok", "messages": 0.0, "statuses": 1.0, "tasks_created": 0.0, "tasks_existed": 0.0}, "")
	}
	recipient := whatsapp.DefaultSampleOptions.From
	want := []store.StatusUpdate{{Key: key, GraphMessageID: "wamid.out", Status: "delivered", PhoneNumberID: whatsapp.DefaultSampleOptions.PhoneNumberID,
		RecipientPhone: recipient, RecipientHashes: []string{hs.hasher.Phone(recipient)}}}
	if diff := cmp.Diff(want, hs.records.Applied()); diff != "" {
		t.Errorf("applied statuses (-want, +got); the seen one must be skipped:\n%s", diff)
	}
	if !hs.logs.Has("status_duplicate") || !hs.logs.Has("status_applied") {
		t.Error("no status_duplicate and status_applied log lines")
	}
	if !hs.records.seen["wamid.out:delivered"] {
		t.Error("the applied status was not recorded as seen")
	}
}

// TestInboundForeignCallbackData: a status for a message another system sent on the number is
// applied by its Graph id only.
func TestInboundForeignCallbackData(t *testing.T) {
	t.Parallel()
	hs := newHarness(t)
	o := whatsapp.SampleOptions{MessageID: "wamid.other", BizOpaqueCallbackData: "someone-else's-data"}
	hs.run(tasks.ProcessInboundPath, inboundTask("evt-1", whatsapp.SampleStatus(o, "read")), attempt{})
	if got := hs.records.Applied(); len(got) != 1 || got[0].Key != "" || got[0].GraphMessageID != "wamid.other" {
		t.Errorf("applied = %+v, want by Graph id only", got)
	}
}

func TestInboundStatusWriteFailsRetries(t *testing.T) {
	t.Parallel()
	hs := newHarness(t)
	hs.records.Err = map[string]error{"ApplyStatus": errDown}
	o := whatsapp.SampleOptions{MessageID: "wamid.out"}
	got := hs.run(tasks.ProcessInboundPath, inboundTask("evt-1", whatsapp.SampleStatus(o, "delivered")), attempt{})
	hs.want(got, 503, retryBody("temporary_failure"), "task_retry")
	if hs.records.Called("RecordStatus") {
		t.Error("a status not applied was recorded as seen")
	}
}

func TestInboundMalformedTaskDeadLettered(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		body []byte
	}{
		{"not JSON", []byte(`{"inbound_event_id":`)},
		{"two objects", []byte(`{"inbound_event_id":"e","payload":{}} {}`)},
		{"no inbound_event_id", []byte(`{"payload":{"object":"whatsapp_business_account"}}`)},
		{"neither payload nor ref", []byte(`{"inbound_event_id":"e"}`)},
		{"over 1 MiB", append([]byte(`{"inbound_event_id":"`), bytes.Repeat([]byte("a"), 1<<20)...)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			hs := newHarness(t)
			hs.want(hs.run(tasks.ProcessInboundPath, tc.body, attempt{}), 200,
				map[string]any{"status": "dead_lettered", "dead_letter_id": "dl-1"}, "dead_lettered")
			dls := hs.records.DeadLetters()
			if len(dls) != 1 || dls[0].Path != tasks.ProcessInboundPath || dls[0].CorrelationID != "corr-header" ||
				!strings.HasPrefix(string(tc.body), dls[0].Body) || len(dls[0].Body) > 1<<20 {
				t.Errorf("dead letters = %d, first path %s, correlation %s, %d body bytes", len(dls), dls[0].Path, dls[0].CorrelationID, len(dls[0].Body))
			}
			if hs.records.Called("PutTrace") {
				t.Error("a malformed task wrote a trace")
			}
		})
	}
}

// TestInboundUnparseablePayload: the webhook parsed it, so a payload that does not parse is a
// defect no retry fixes: dead-lettered on the first attempt.
func TestInboundUnparseablePayload(t *testing.T) {
	t.Parallel()
	hs := newHarness(t)
	got := hs.run(tasks.ProcessInboundPath, inboundTask("evt-1", []byte(`[1,2]`)), attempt{})
	hs.want(got, 200, map[string]any{"status": "dead_lettered", "dead_letter_id": "dl-1"}, "dead_lettered")
	if !strings.Contains(hs.logs.String(), `"permanent":true`) {
		t.Error("the dead letter is not logged as permanent")
	}
}

func TestInboundPayloadRef(t *testing.T) {
	t.Parallel()
	hs := newHarness(t)
	ref := "firestore://inbound_events/" + store.DocID("evt-1")
	hs.payloads[ref] = whatsapp.SampleText(whatsapp.SampleOptions{}, "hi")
	in := tasks.Inbound{InboundEventID: "evt-1", CorrelationID: "corr-1", PayloadRef: ref}
	hs.want(hs.run(tasks.ProcessInboundPath, in, attempt{}), 200,
		map[string]any{"status": "ok", "messages": 1.0, "statuses": 0.0, "tasks_created": 1.0, "tasks_existed": 0.0}, "inbound_fanout")
	// A reference that cannot be read is retried.
	in.PayloadRef = "firestore://inbound_events/" + store.DocID("missing")
	hs.want(hs.run(tasks.ProcessInboundPath, in, attempt{}), 503, retryBody("temporary_failure"), "task_retry")
}

// brokenBody fails mid-read, as a connection that drops.
type brokenBody struct{}

func (brokenBody) Read([]byte) (int, error) { return 0, errors.New("connection reset") }

func TestBodyUnreadableRetries(t *testing.T) {
	t.Parallel()
	for _, path := range []string{tasks.ProcessInboundPath, tasks.ProcessOutboundPath} {
		hs := newHarness(t)
		req := httptest.NewRequest(http.MethodPost, path, brokenBody{})
		req.Header.Set(tasks.HeaderInternalToken, internalToken)
		rec := httptest.NewRecorder()
		hs.serve().ServeHTTP(rec, req)
		if rec.Code != 503 || strings.TrimSpace(rec.Body.String()) != `{"error":"body_unreadable","status":"retry"}` {
			t.Errorf("%s: %d %s, want 503 body_unreadable", path, rec.Code, rec.Body.String())
		}
		if len(hs.records.Calls()) != 0 {
			t.Errorf("%s: an unread task touched the records: %v", path, hs.records.Calls())
		}
	}
}

func TestBadInternalTokenRefused(t *testing.T) {
	t.Parallel()
	for _, token := range []string{"", "wrong"} {
		for _, path := range []string{tasks.ProcessInboundPath, tasks.ProcessOutboundPath} {
			hs := newHarness(t)
			req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(`{}`))
			if token != "" {
				req.Header.Set(tasks.HeaderInternalToken, token)
			}
			rec := httptest.NewRecorder()
			hs.serve().ServeHTTP(rec, req)
			if rec.Code != 401 || strings.TrimSpace(rec.Body.String()) != `{"error":"unauthorized","status":"error"}` {
				t.Errorf("token %q on %s: %d %s, want 401 unauthorized", token, path, rec.Code, rec.Body.String())
			}
			if len(hs.records.Calls()) != 0 || len(hs.sender.Sends()) != 0 {
				t.Errorf("a refused request did something: %v", hs.records.Calls())
			}
			if !hs.logs.Has("auth_refused") {
				t.Error("no auth_refused log line")
			}
		}
	}
}

// --- process_outbound ---

const customerPhone = "16505551234"

func outboundTask(id string) tasks.Outbound {
	return tasks.Outbound{IdempotencyKey: tasks.IdempotencyKey(keyedid.Dev(), id), CorrelationID: "corr-1", InboundEventID: "evt-1",
		PhoneNumberID: "PNID1", To: customerPhone, Message: whatsapp.Message{ID: id, Type: "text", From: customerPhone}}
}

func TestOutboundNewSendSent(t *testing.T) {
	t.Parallel()
	hs := newHarness(t)
	out := outboundTask("wamid.in1")
	hs.want(hs.run(tasks.ProcessOutboundPath, out, attempt{}), 200, map[string]any{"status": store.OutboundSent, "message_id": "wamid.sent-1"}, "outbound_sent")
	if diff := cmp.Diff([]string{customerPhone + " " + out.IdempotencyKey + " wamid.in1"}, hs.sender.Sends()); diff != "" {
		t.Errorf("sends, quoting the inbound message (-want, +got):\n%s", diff)
	}
	if got := hs.records.Mark(out.IdempotencyKey); got != "sent wamid.sent-1 read=true" {
		t.Errorf("record marked %q, want sent with its Graph id and read", got)
	}
	if diff := cmp.Diff([]string{"wamid.in1"}, hs.sender.Reads()); diff != "" {
		t.Errorf("marked read (-want, +got):\n%s", diff)
	}
	if strings.Contains(hs.logs.String(), customerPhone) {
		t.Error("the customer's phone number is in the logs")
	}
}

// TestOutboundReadAlreadyMarked: a retry does not mark the message as read again.
func TestOutboundReadAlreadyMarked(t *testing.T) {
	t.Parallel()
	hs := newHarness(t)
	hs.records.BeginSendFn = func(seed store.OutboundRecord) (store.Decision, store.OutboundRecord, error) {
		seed.ReadMarked, seed.Attempts = true, 2
		return store.Send, seed, nil
	}
	out := outboundTask("wamid.in1")
	hs.want(hs.run(tasks.ProcessOutboundPath, out, attempt{retryCount: 1}), 200, map[string]any{"status": store.OutboundSent, "message_id": "wamid.sent-1"}, "")
	if n := len(hs.sender.Reads()); n != 0 {
		t.Errorf("%d mark-as-read calls, want 0", n)
	}
	if got := hs.records.Mark(out.IdempotencyKey); got != "sent wamid.sent-1 read=true" {
		t.Errorf("record marked %q", got)
	}
}

// TestOutboundMarkReadFails: mark-as-read is best effort; the reply goes out, recorded unread.
func TestOutboundMarkReadFails(t *testing.T) {
	t.Parallel()
	hs := newHarness(t)
	hs.sender.MarkReadErr = errDown
	out := outboundTask("wamid.in1")
	hs.want(hs.run(tasks.ProcessOutboundPath, out, attempt{}), 200, map[string]any{"status": store.OutboundSent, "message_id": "wamid.sent-1"}, "mark_read_failed")
	if got := hs.records.Mark(out.IdempotencyKey); got != "sent wamid.sent-1 read=false" {
		t.Errorf("record marked %q, want sent and not read", got)
	}
}

func TestOutboundAlreadySettledNoSend(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		rec  store.OutboundRecord
		want map[string]any
	}{
		{"sent", store.OutboundRecord{State: store.OutboundSent, GraphMessageID: "wamid.earlier"},
			map[string]any{"status": store.OutboundSent, "message_id": "wamid.earlier", "duplicate": true}},
		{"failed", store.OutboundRecord{State: store.OutboundFailed, LastErrorCode: 131026},
			map[string]any{"status": "failed", "error": "whatsapp_permanent_error", "code": 131026.0, "duplicate": true}},
		{"skipped", store.OutboundRecord{State: store.OutboundSkipped},
			map[string]any{"status": store.OutboundSkipped, "message_id": "", "duplicate": true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			hs := newHarness(t)
			hs.records.BeginSendFn = func(store.OutboundRecord) (store.Decision, store.OutboundRecord, error) {
				return store.AlreadyDone, tc.rec, nil
			}
			hs.want(hs.run(tasks.ProcessOutboundPath, outboundTask("wamid.in1"), attempt{}), 200, tc.want, "outbound_duplicate")
			if n := len(hs.sender.Sends()); n != 0 {
				t.Errorf("%d sends for a settled reply, want 0", n)
			}
		})
	}
}

func awaitReconcile(store.OutboundRecord) (store.Decision, store.OutboundRecord, error) {
	return store.AwaitReconcile, store.OutboundRecord{State: "sending", LastErrorCode: 0}, nil
}

func TestOutboundAwaitReconcileRetries(t *testing.T) {
	t.Parallel()
	hs := newHarness(t)
	hs.records.BeginSendFn = awaitReconcile
	hs.want(hs.run(tasks.ProcessOutboundPath, outboundTask("wamid.in1"), attempt{}), 503, retryBody("awaiting_reconciliation"), "outbound_awaiting_reconcile")
	if n := len(hs.sender.Sends()); n != 0 {
		t.Errorf("%d sends while an earlier send's outcome is unknown, want 0", n)
	}
}

func TestOutboundAwaitReconcileLastAttemptDeadLetters(t *testing.T) {
	t.Parallel()
	hs := newHarness(t)
	hs.records.BeginSendFn = awaitReconcile
	hs.want(hs.run(tasks.ProcessOutboundPath, outboundTask("wamid.in1"), lastAttempt(t, tasks.OutboundQueueID)), 200,
		map[string]any{"status": "dead_lettered", "dead_letter_id": "dl-1"}, "dead_lettered")
	if n := len(hs.sender.Sends()); n != 0 {
		t.Errorf("%d sends, want 0", n)
	}
}

func TestOutboundBeginSendFailsRetries(t *testing.T) {
	t.Parallel()
	hs := newHarness(t)
	hs.records.Err = map[string]error{"BeginSend": errDown}
	hs.want(hs.run(tasks.ProcessOutboundPath, outboundTask("wamid.in1"), attempt{}), 503, retryBody("temporary_failure"), "task_retry")
	if n := len(hs.sender.Sends()); n != 0 {
		t.Errorf("%d sends without a record, want 0", n)
	}
}

// TestOutboundPermanentMetaError: a reply Meta refused for good is answered 200 failed (a retry
// would only burn attempts) and, unless the refusal is deliberate (the contact opted out), kept
// as a dead letter: a send that ends unsent never ends in a log line alone.
func TestOutboundPermanentMetaError(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		code        int
		deadLetters int
	}{{131026, 1}, {delivery.CodeOptedOut, 0}} {
		t.Run(strconv.Itoa(tc.code), func(t *testing.T) {
			t.Parallel()
			hs := newHarness(t)
			hs.sender.SendErr = &graph.Error{HTTPStatus: 400, Code: tc.code, Kind: graph.Permanent, Message: "refused"}
			out := outboundTask("wamid.in1")
			hs.want(hs.run(tasks.ProcessOutboundPath, out, attempt{}), 200,
				map[string]any{"status": "failed", "error": "whatsapp_permanent_error", "code": float64(tc.code)}, "")
			if got := hs.records.Mark(out.IdempotencyKey); !strings.HasPrefix(got, fmt.Sprintf("failed %d ", tc.code)) {
				t.Errorf("record marked %q, want failed %d", got, tc.code)
			}
			if n := len(hs.records.DeadLetters()); n != tc.deadLetters {
				t.Errorf("%d dead letters for a message Meta refused with %d, want %d", n, tc.code, tc.deadLetters)
			}
		})
	}
}

// TestOutboundMarkFailedFailsRetries: without the failed record a retry would send again, so the
// task is retried until the record is written.
func TestOutboundMarkFailedFailsRetries(t *testing.T) {
	t.Parallel()
	hs := newHarness(t)
	hs.sender.SendErr = &graph.Error{HTTPStatus: 400, Code: 131026, Kind: graph.Permanent}
	hs.records.Err = map[string]error{"MarkFailed": errDown}
	hs.want(hs.run(tasks.ProcessOutboundPath, outboundTask("wamid.in1"), attempt{}), 503, retryBody("temporary_failure"), "task_retry")
}

func TestOutboundThrottledRetriesAfter(t *testing.T) {
	t.Parallel()
	hs := newHarness(t)
	hs.sender.SendErr = &graph.Error{HTTPStatus: 400, Code: 130429, Kind: graph.Throttled, RetryAfter: 30 * time.Second}
	out := outboundTask("wamid.in1")
	got := hs.run(tasks.ProcessOutboundPath, out, attempt{})
	hs.want(got, 503, retryBody("temporary_failure"), "outbound_retry")
	if ra := got.Header.Get("Retry-After"); ra != "30" {
		t.Errorf("Retry-After %q, want 30", ra)
	}
	if got := hs.records.Mark(out.IdempotencyKey); got != "retry definite=true 130429" {
		t.Errorf("record marked %q, want a definite retry with Meta's code", got)
	}
}

// TestOutboundTimeoutOutcomeUnknown: a send that timed out may have reached Meta: the record says
// so, and no Retry-After is invented.
func TestOutboundTimeoutOutcomeUnknown(t *testing.T) {
	t.Parallel()
	hs := newHarness(t)
	hs.sender.SendErr = context.DeadlineExceeded
	out := outboundTask("wamid.in1")
	got := hs.run(tasks.ProcessOutboundPath, out, attempt{})
	hs.want(got, 503, retryBody("temporary_failure"), "outbound_retry")
	if ra := got.Header.Get("Retry-After"); ra != "" {
		t.Errorf("Retry-After %q, want none", ra)
	}
	if got := hs.records.Mark(out.IdempotencyKey); got != "retry definite=false 0" {
		t.Errorf("record marked %q, want a retry of unknown outcome", got)
	}
}

func TestOutboundLastAttemptDeadLetters(t *testing.T) {
	t.Parallel()
	hs := newHarness(t)
	hs.sender.SendErr = &graph.Error{HTTPStatus: 503, Code: 2, Kind: graph.Temporary}
	out := outboundTask("wamid.in1")
	hs.want(hs.run(tasks.ProcessOutboundPath, out, lastAttempt(t, tasks.OutboundQueueID)), 200,
		map[string]any{"status": "dead_lettered", "dead_letter_id": "dl-1"}, "dead_lettered")
	if got := hs.records.Mark(out.IdempotencyKey); !strings.HasPrefix(got, "failed 2 retries_exhausted: ") {
		t.Errorf("record marked %q, want failed after retries ran out", got)
	}
	dls := hs.records.DeadLetters()
	if len(dls) != 1 || dls[0].LastErrorCode != 2 || dls[0].IdempotencyKey != out.IdempotencyKey || dls[0].Path != tasks.ProcessOutboundPath {
		t.Errorf("dead letters = %+v", dls)
	}
	var body tasks.Outbound
	if err := json.Unmarshal([]byte(dls[0].Body), &body); err != nil || body.IdempotencyKey != out.IdempotencyKey {
		t.Errorf("the dead letter does not keep the task body: %v", err)
	}
}

// TestOutboundAuthErrorKeptForReplay: a bad token fails every reply: each answers 200 failed and
// is kept as a dead letter to replay once the token is fixed.
func TestOutboundAuthErrorKeptForReplay(t *testing.T) {
	t.Parallel()
	hs := newHarness(t)
	hs.sender.SendErr = &graph.Error{HTTPStatus: 401, Code: 190, Kind: graph.Auth}
	hs.want(hs.run(tasks.ProcessOutboundPath, outboundTask("wamid.in1"), attempt{}), 200,
		map[string]any{"status": "failed", "error": "whatsapp_permanent_error", "code": 190.0}, "dead_lettered")
	if dls := hs.records.DeadLetters(); len(dls) != 1 || dls[0].LastErrorCode != 190 {
		t.Errorf("dead letters = %+v, want one with code 190", dls)
	}
}

// TestOutboundAuthDeadLetterFails: the reply's answer does not depend on the kept dead letter.
func TestOutboundAuthDeadLetterFails(t *testing.T) {
	t.Parallel()
	hs := newHarness(t)
	hs.sender.SendErr = &graph.Error{HTTPStatus: 401, Code: 190, Kind: graph.Auth}
	hs.records.Err = map[string]error{"PutDeadLetter": errDown}
	hs.want(hs.run(tasks.ProcessOutboundPath, outboundTask("wamid.in1"), attempt{}), 200,
		map[string]any{"status": "failed", "error": "whatsapp_permanent_error", "code": 190.0}, "dead_letter_failed")
}

func TestOutboundResponderSkips(t *testing.T) {
	t.Parallel()
	hs := newHarness(t)
	hs.responder = responder.Func(func(context.Context, whatsapp.Message) (outgoing.Message, error) { return outgoing.Message{}, nil })
	out := outboundTask("wamid.in1")
	hs.want(hs.run(tasks.ProcessOutboundPath, out, attempt{}), 200, map[string]any{"status": store.OutboundSkipped}, "outbound_skipped")
	if got := hs.records.Mark(out.IdempotencyKey); got != "skipped" {
		t.Errorf("record marked %q, want skipped", got)
	}
	if n := len(hs.sender.Sends()); n != 0 {
		t.Errorf("%d sends, want 0", n)
	}
}

func TestOutboundResponderFailsRetries(t *testing.T) {
	t.Parallel()
	hs := newHarness(t)
	hs.responder = responder.Func(func(context.Context, whatsapp.Message) (outgoing.Message, error) {
		return outgoing.Message{}, errors.New("model unavailable")
	})
	out := outboundTask("wamid.in1")
	hs.want(hs.run(tasks.ProcessOutboundPath, out, attempt{}), 503, retryBody("temporary_failure"), "task_retry")
	if got := hs.records.Mark(out.IdempotencyKey); got != "retry definite=true 0" {
		t.Errorf("record marked %q, want a definite retry (nothing was sent)", got)
	}
}

// TestOutboundRecordFailsAfterSend: Meta has the message, so the answer is 200 (a retry would send
// it twice); the status webhook settles the record.
func TestOutboundRecordFailsAfterSend(t *testing.T) {
	t.Parallel()
	hs := newHarness(t)
	hs.records.Err = map[string]error{"MarkSent": errDown}
	hs.want(hs.run(tasks.ProcessOutboundPath, outboundTask("wamid.in1"), attempt{}), 200,
		map[string]any{"status": store.OutboundSent, "message_id": "wamid.sent-1"}, "outbound_record_failed")
}

func TestOutboundMalformedTaskDeadLettered(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		change func(*tasks.Outbound)
	}{
		{"idempotency key malformed", func(o *tasks.Outbound) { o.IdempotencyKey = "nope" }},
		{"no phone_number_id", func(o *tasks.Outbound) { o.PhoneNumberID = "" }},
		// Neither the task nor its message names the sender: no phone, no BSUID.
		{"no recipient", func(o *tasks.Outbound) { o.To, o.Message.From = "", "" }},
		{"no recipient, a username only", func(o *tasks.Outbound) {
			o.To, o.Message.From, o.Message.Username, o.Message.ContactName = "", "", "@marie.b", "Marie"
		}},
		{"no message id", func(o *tasks.Outbound) { o.Message.ID = "" }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			hs := newHarness(t)
			out := outboundTask("wamid.in1")
			tc.change(&out)
			hs.want(hs.run(tasks.ProcessOutboundPath, out, attempt{}), 200,
				map[string]any{"status": "dead_lettered", "dead_letter_id": "dl-1"}, "dead_lettered")
			if hs.records.Called("BeginSend") || len(hs.sender.Sends()) != 0 {
				t.Error("a malformed task reached the record or the Graph API")
			}
			if dls := hs.records.DeadLetters(); len(dls) != 1 || !strings.Contains(dls[0].LastError, "malformed outbound task") {
				t.Errorf("dead letters = %+v", dls)
			}
		})
	}
}

// TestOutboundByBSUID: on the default path a task that names its sender by BSUID only (in its
// user_id, or in its message's from_user_id) is well formed: the reply goes by recipient, the
// record's to_hash is the BSUID's keyed ref, and no log line names the BSUID or the username.
func TestOutboundByBSUID(t *testing.T) {
	t.Parallel()
	const userID, username = "CO.5581920374461120", "@bo_rivera"
	for _, tc := range []struct {
		name   string
		change func(*tasks.Outbound)
	}{
		{"user_id only", func(o *tasks.Outbound) { o.To, o.Message.From, o.UserID = "", "", userID }},
		{"message from_user_id only", func(o *tasks.Outbound) {
			o.To, o.Message.From, o.Message.FromUserID, o.Message.Username = "", "", userID, username
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			hs := newHarness(t)
			out := outboundTask("wamid.in1")
			tc.change(&out)
			hs.want(hs.run(tasks.ProcessOutboundPath, out, attempt{}), 200, map[string]any{"status": store.OutboundSent, "message_id": "wamid.sent-1"}, "outbound_sent")
			if diff := cmp.Diff([]string{"recipient:" + userID + " " + out.IdempotencyKey + " wamid.in1"}, hs.sender.Sends()); diff != "" {
				t.Errorf("sends (-want, +got):\n%s", diff)
			}
			hs.records.mu.Lock()
			seeds := append([]store.OutboundRecord(nil), hs.records.seeds...)
			hs.records.mu.Unlock()
			if len(seeds) != 1 || seeds[0].ToHash != hs.hasher.User(userID) {
				t.Errorf("outbound record seeds = %+v, want to_hash the BSUID's us_ ref", seeds)
			}
			logcheck.Check(t, hs.logs.String(), []string{customerPhone}, []string{userID, username})
		})
	}
}

// TestDeadLetterWriteFailsRetries: a task that cannot be kept stays in the queue.
func TestDeadLetterWriteFailsRetries(t *testing.T) {
	t.Parallel()
	hs := newHarness(t)
	hs.records.Err = map[string]error{"PutDeadLetter": errDown}
	out := outboundTask("wamid.in1")
	out.To, out.Message.From = "", ""
	hs.want(hs.run(tasks.ProcessOutboundPath, out, attempt{}), 503, retryBody("dead_letter_failed"), "dead_letter_failed")
}

// TestLogsAndLookupsUseKeyedRefs (issue 11, items 3 and 4): the worker's log lines name the event
// by event_ref, the sent message by message_ref and the customer by a ph_ ref, all keyed with
// LOG_HASH_KEY; the outbound record's to_hash, the status's recipient_hash and the trace's
// event_ref are the same refs, so wapipe hash-phone and inspect find them.
func TestLogsAndLookupsUseKeyedRefs(t *testing.T) {
	t.Parallel()
	h, err := logging.NewHasher("worker-test-log-hash-key-0123456789abcdef")
	if err != nil {
		t.Fatal(err)
	}
	hs := newHarness(t)
	hs.hasher = h
	const inID = "wamid.HBgLMTY1MDU1NTEyMzQVAgASGBQzRUIwQzc2N0Q3MTk0NjE5RUY0QQA="
	out := outboundTask(inID)
	out.InboundEventID = inID
	hs.want(hs.run(tasks.ProcessOutboundPath, out, attempt{}), 200, map[string]any{"status": store.OutboundSent, "message_id": "wamid.sent-1"}, "outbound_sent")
	o := whatsapp.SampleOptions{From: customerPhone, MessageID: "wamid.sent-1", BizOpaqueCallbackData: out.IdempotencyKey}
	statusEvent := "wamid.sent-1:delivered"
	hs.want(hs.run(tasks.ProcessInboundPath, inboundTask(statusEvent, whatsapp.SampleStatus(o, "delivered")), attempt{}), 200,
		map[string]any{"status": "ok", "messages": 0.0, "statuses": 1.0, "tasks_created": 0.0, "tasks_existed": 0.0}, "status_applied")

	logs := hs.logs.String()
	logcheck.Check(t, logs, []string{customerPhone}, []string{inID, "wamid.sent-1"})
	for _, want := range []string{
		`"event_ref":"` + h.Ref(inID) + `"`, `"to":"` + h.Phone(customerPhone) + `"`,
		`"message_ref":"` + h.Ref("wamid.sent-1") + `"`, `"event_ref":"` + h.Ref(statusEvent) + `"`,
		`"recipient":"` + h.Phone(customerPhone) + `"`,
	} {
		if !strings.Contains(logs, want) {
			t.Errorf("no log line carries %s:\n%s", want, logs)
		}
	}
	if strings.Contains(logs, logging.DevHasher().Phone(customerPhone)) {
		t.Error("a log line carries the dev key's ref: the logger is not keyed with the configured key")
	}
	hs.records.mu.Lock()
	defer hs.records.mu.Unlock()
	if len(hs.records.seeds) != 1 || hs.records.seeds[0].ToHash != h.Phone(customerPhone) {
		t.Errorf("outbound record to_hash = %+v, want %s", hs.records.seeds, h.Phone(customerPhone))
	}
	if len(hs.records.recorded) != 1 || hs.records.recorded[0].RecipientHash != h.Phone(customerPhone) {
		t.Errorf("status recipient_hash = %+v, want %s", hs.records.recorded, h.Phone(customerPhone))
	}
	if len(hs.records.started) != 1 || hs.records.started[0].EventRef != h.Ref(statusEvent) {
		t.Errorf("trace event_ref = %+v, want %s", hs.records.started, h.Ref(statusEvent))
	}
}
