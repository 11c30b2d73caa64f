package webhook_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/internal/logging/logcheck"
	"github.com/wapipe/wapipe/internal/testenv"
	"github.com/wapipe/wapipe/internal/webhook"
	"github.com/wapipe/wapipe/internal/whatsapp"
	"github.com/wapipe/wapipe/tasks"
)

// These tests specify the webhook's answer to each outcome of a delivery against in-memory fakes:
// they need no emulator and run under -short. The emulator tests in webhook_test.go check the
// same paths against the real stores.

// harness is one webhook on fakes.
type harness struct {
	t        *testing.T
	h        http.Handler
	markers  *fakeMarkers
	payloads *fakePayloads
	queue    *fakeQueue
	logs     *testenv.LogBuffer
}

func newHarness(t *testing.T, failMode string) *harness {
	t.Helper()
	if failMode == "" {
		failMode = webhook.FailClosed
	}
	hs := &harness{t: t, markers: &fakeMarkers{}, payloads: &fakePayloads{}, queue: &fakeQueue{}, logs: &testenv.LogBuffer{}}
	cfg := &webhook.Config{InboundQueue: tasks.InboundQueueID, AppSecret: appSecret, VerifyToken: verifyToken, DedupeFailMode: failMode}
	hs.h = webhook.NewServer(cfg, webhook.Deps{
		Dedupe: hs.markers, Payloads: hs.payloads, Tasks: hs.queue,
		Logger:     logging.New(hs.logs, logging.Options{Level: slog.LevelDebug, Hasher: logging.DevHasher()}),
		CallBudget: 300 * time.Millisecond,
	}).Routes()
	// Every test's logs: no wamid, phone number or unkeyed hash (CONTRACT.md, Logs).
	t.Cleanup(func() { logcheck.Check(t, hs.logs.String(), []string{senderPhone}, nil) })
	return hs
}

// answer is the webhook's response, decoded.
type answer struct {
	Code   int
	Body   map[string]string
	Header http.Header
}

// post signs body with the app secret, applies header (an empty value removes one) and posts it.
func (hs *harness) post(body []byte, header map[string]string) answer {
	hs.t.Helper()
	req := httptest.NewRequest(http.MethodPost, webhook.Path, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(whatsapp.SignatureHeader, whatsapp.Sign(body, appSecret))
	for k, v := range header {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	return hs.do(req)
}

func (hs *harness) do(req *http.Request) answer {
	hs.t.Helper()
	rec := httptest.NewRecorder()
	hs.h.ServeHTTP(rec, req)
	a := answer{Code: rec.Code, Header: rec.Header()}
	if err := json.Unmarshal(rec.Body.Bytes(), &a.Body); err != nil {
		hs.t.Fatalf("answer %d is not JSON: %q", rec.Code, rec.Body.String())
	}
	return a
}

// want checks the status code, the JSON body and that the log has event.
func (hs *harness) want(got answer, code int, body map[string]string, event string) {
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

// wantNothingDone checks a refused delivery touched neither the markers nor the queue.
func (hs *harness) wantNothingDone() {
	hs.t.Helper()
	if n := hs.markers.Calls(); n != 0 {
		hs.t.Errorf("%d mark_if_new calls, want none", n)
	}
	if n := len(hs.queue.Tasks()); n != 0 {
		hs.t.Errorf("%d tasks created, want none", n)
	}
}

func errorBody(e string) map[string]string { return map[string]string{"status": "error", "error": e} }

var errDown = errors.New("rpc error: code = Unavailable")

func TestNewEventEnqueued(t *testing.T) {
	t.Parallel()
	hs := newHarness(t, "")
	body := textPayload("wamid.new")
	hs.want(hs.post(body, map[string]string{tasks.HeaderCorrelationID: "corr-1"}), 200, map[string]string{"status": "accepted"}, "webhook_accepted")

	got := hs.queue.Tasks()
	if len(got) != 1 {
		t.Fatalf("%d tasks, want 1", len(got))
	}
	task := got[0]
	if task.Queue != tasks.InboundQueueID || task.ID != tasks.InboundTaskID("wamid.new") ||
		task.Path != tasks.ProcessInboundPath || task.CorrelationID != "corr-1" {
		t.Errorf("task = %s %s %s %s", task.Queue, task.ID, task.Path, task.CorrelationID)
	}
	var in tasks.Inbound
	if err := json.Unmarshal(task.Body, &in); err != nil {
		t.Fatal(err)
	}
	var compact bytes.Buffer
	_ = json.Compact(&compact, body)
	if in.InboundEventID != "wamid.new" || in.CorrelationID != "corr-1" || in.ReceivedAt.IsZero() ||
		in.PayloadRef != "" || !bytes.Equal(in.Payload, compact.Bytes()) {
		t.Errorf("task body = %s", task.Body)
	}
	// One store call: mark_if_new. Nothing is written after the task (the fake has no other
	// method to call).
	if n := hs.markers.Calls(); n != 1 {
		t.Errorf("%d mark_if_new calls, want 1", n)
	}
}

// TestDuplicateDropped: a delivery that finds the event marked and its task by name creates
// nothing.
func TestDuplicateDropped(t *testing.T) {
	t.Parallel()
	hs := newHarness(t, "")
	body := textPayload("wamid.dup")
	hs.want(hs.post(body, nil), 200, map[string]string{"status": "accepted"}, "webhook_accepted")
	hs.want(hs.post(body, nil), 200, map[string]string{"status": "duplicate"}, "duplicate_dropped")
	if n := len(hs.queue.Tasks()); n != 1 {
		t.Errorf("%d tasks created for two deliveries of one event, want 1", n)
	}
}

// TestMarkedWithoutTaskHeals: an earlier delivery marked the event and died before its task (or
// its CreateTask failed): the redelivery finds the marker, creates the task by name, and answers
// 200, at once.
func TestMarkedWithoutTaskHeals(t *testing.T) {
	t.Parallel()
	hs := newHarness(t, "")
	hs.markers.MarkFn = func(context.Context, string) (bool, error) { return false, nil }
	hs.want(hs.post(textPayload("wamid.crashed"), nil), 200, map[string]string{"status": "accepted"}, "task_recreated")
	if got := hs.queue.Tasks(); len(got) != 1 || got[0].ID != tasks.InboundTaskID("wamid.crashed") {
		t.Errorf("tasks = %+v, want the event's one", got)
	}
}

func TestBadSignature(t *testing.T) {
	t.Parallel()
	good := textPayload("wamid.sig")
	tests := []struct {
		name   string
		body   []byte
		header string
	}{
		{"missing", good, ""},
		{"other secret", good, whatsapp.Sign(good, "other-secret")},
		{"not hex", good, "sha256=zz"},
		{"without prefix", good, strings.TrimPrefix(whatsapp.Sign(good, appSecret), "sha256=")},
		{"over other bytes", append([]byte(" "), good...), whatsapp.Sign(good, appSecret)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			hs := newHarness(t, "")
			hs.want(hs.post(tc.body, map[string]string{whatsapp.SignatureHeader: tc.header}), 401, errorBody("invalid_signature"), "signature_invalid")
			hs.wantNothingDone()
		})
	}
}

func TestMalformedPayload(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		body string
	}{
		{"truncated JSON", `{"object":`},
		{"JSON array", `[1,2]`},
		{"JSON string", `"hello"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			hs := newHarness(t, "")
			hs.want(hs.post([]byte(tc.body), nil), 400, errorBody("malformed_payload"), "payload_malformed")
			hs.wantNothingDone()
		})
	}
}

func TestBodyOverTheCap(t *testing.T) {
	t.Parallel()
	big := bytes.Repeat([]byte("a"), webhook.MaxBodyBytes+1)
	tests := []struct {
		name          string
		contentLength int64
	}{
		{"declared length", int64(len(big))},
		{"chunked", -1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			hs := newHarness(t, "")
			req := httptest.NewRequest(http.MethodPost, webhook.Path, io.MultiReader(bytes.NewReader(big)))
			req.ContentLength = tc.contentLength
			req.Header.Set(whatsapp.SignatureHeader, whatsapp.Sign(big, appSecret))
			hs.want(hs.do(req), 413, errorBody("body_too_large"), "body_too_large")
			hs.wantNothingDone()
		})
	}
}

// brokenBody fails mid-read, as a connection that drops.
type brokenBody struct{}

func (brokenBody) Read([]byte) (int, error) { return 0, io.ErrUnexpectedEOF }

func TestBodyUnreadable(t *testing.T) {
	t.Parallel()
	hs := newHarness(t, "")
	req := httptest.NewRequest(http.MethodPost, webhook.Path, brokenBody{})
	req.Header.Set(whatsapp.SignatureHeader, whatsapp.Sign(nil, appSecret))
	hs.want(hs.do(req), 400, errorBody("body_unreadable"), "body_read_failed")
	hs.wantNothingDone()
}

// TestEnqueueFailsThenRedelivery: with Cloud Tasks down the answer is 503 and the marker stays;
// Meta's redelivery finds it and creates the task, once.
func TestEnqueueFailsThenRedelivery(t *testing.T) {
	t.Parallel()
	hs := newHarness(t, "")
	body := textPayload("wamid.enq")
	hs.queue.SetErr(errDown)
	hs.want(hs.post(body, nil), 503, errorBody("enqueue_failed"), "enqueue_failed")
	hs.queue.SetErr(nil)
	hs.want(hs.post(body, nil), 200, map[string]string{"status": "accepted"}, "task_recreated")
	hs.want(hs.post(body, nil), 200, map[string]string{"status": "duplicate"}, "duplicate_dropped")
	if n := len(hs.queue.Tasks()); n != 1 {
		t.Errorf("%d tasks, want 1", n)
	}
}

func TestStoreDownFailClosed(t *testing.T) {
	t.Parallel()
	hs := newHarness(t, webhook.FailClosed)
	hs.markers.MarkFn = func(context.Context, string) (bool, error) { return false, errDown }
	hs.want(hs.post(textPayload("wamid.closed"), nil), 500, errorBody("dedupe_unavailable"), "dedupe_unavailable")
	if n := len(hs.queue.Tasks()); n != 0 {
		t.Errorf("%d tasks created with the store down and fail mode closed, want 0", n)
	}
	if !strings.Contains(hs.logs.String(), `"severity":"ERROR"`) {
		t.Error("the outage is not logged at ERROR")
	}
}

// TestStoreDownFailOpen: the task is created without a marker; its deterministic name still
// dedupes.
func TestStoreDownFailOpen(t *testing.T) {
	t.Parallel()
	hs := newHarness(t, webhook.FailOpen)
	hs.markers.MarkFn = func(context.Context, string) (bool, error) { return false, errDown }
	hs.want(hs.post(textPayload("wamid.open"), nil), 200, map[string]string{"status": "accepted"}, "dedupe_unavailable")
	if got := hs.queue.Tasks(); len(got) != 1 || got[0].ID != tasks.InboundTaskID("wamid.open") {
		t.Errorf("tasks = %+v, want the event's one", got)
	}
}

// TestStoreTooSlow: mark_if_new is bounded by the call budget, so a store that hangs counts as
// down: fail closed answers 500, fail open enqueues.
func TestStoreTooSlow(t *testing.T) {
	t.Parallel()
	tests := []struct {
		mode     string
		wantCode int
		wantBody map[string]string
		wantN    int
	}{
		{webhook.FailClosed, 500, errorBody("dedupe_unavailable"), 0},
		{webhook.FailOpen, 200, map[string]string{"status": "accepted"}, 1},
	}
	for _, tc := range tests {
		t.Run(tc.mode, func(t *testing.T) {
			t.Parallel()
			hs := newHarness(t, tc.mode)
			hs.markers.MarkFn = func(ctx context.Context, _ string) (bool, error) {
				<-ctx.Done()
				return false, ctx.Err()
			}
			hs.want(hs.post(textPayload("wamid.slow"), nil), tc.wantCode, tc.wantBody, "dedupe_unavailable")
			if n := len(hs.queue.Tasks()); n != tc.wantN {
				t.Errorf("%d tasks, want %d", n, tc.wantN)
			}
		})
	}
}

// largePayload is a delivery whose task would be over Cloud Tasks' limit.
func largePayload(id string) []byte {
	filler := strings.Repeat("x", tasks.MaxTaskBodyBytes)
	return []byte(fmt.Sprintf(`{"object":"whatsapp_business_account","entry":[{"id":"W","changes":[{"field":"messages","value":{"messaging_product":"whatsapp","metadata":{"phone_number_id":"P"},"messages":[{"from":"1","id":%q,"type":"text","text":{"body":%q}}]}}]}]}`, id, filler))
}

func TestPayloadOutOfBand(t *testing.T) {
	t.Parallel()
	hs := newHarness(t, "")
	body := largePayload("wamid.large")
	hs.want(hs.post(body, nil), 200, map[string]string{"status": "accepted"}, "payload_out_of_band")
	got := hs.queue.Tasks()
	if len(got) != 1 {
		t.Fatalf("%d tasks, want 1", len(got))
	}
	var in tasks.Inbound
	if err := json.Unmarshal(got[0].Body, &in); err != nil {
		t.Fatal(err)
	}
	if len(in.Payload) != 0 || in.PayloadRef == "" || len(got[0].Body) > tasks.MaxTaskBodyBytes {
		t.Fatalf("task has %d payload bytes and ref %q, want only a reference", len(in.Payload), in.PayloadRef)
	}
	if stored, ok := hs.payloads.Get(in.PayloadRef); !ok || !bytes.Equal(stored, body) {
		t.Errorf("stored payload: %d bytes, want the %d bytes sent", len(stored), len(body))
	}
}

// TestPayloadStoreFails: a payload that cannot be stored is a task that cannot be created.
func TestPayloadStoreFails(t *testing.T) {
	t.Parallel()
	hs := newHarness(t, "")
	hs.payloads.PutErr = errDown
	hs.want(hs.post(largePayload("wamid.noput"), nil), 503, errorBody("enqueue_failed"), "enqueue_failed")
}

func TestCorrelationID(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		header   string
		wantKept bool
	}{
		{"valid one kept", "corr-abc:1.2_3", true},
		{"with spaces replaced", "bad id with spaces", false},
		{"missing generated", "", false},
		{"too long replaced", strings.Repeat("a", 129), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			hs := newHarness(t, "")
			got := hs.post(textPayload("wamid.corr"), map[string]string{tasks.HeaderCorrelationID: tc.header})
			id := got.Header.Get(tasks.HeaderCorrelationID)
			switch {
			case tc.wantKept && id != tc.header:
				t.Errorf("correlation id %q, want %q kept", id, tc.header)
			case !tc.wantKept && (len(id) != 32 || id == tc.header):
				t.Errorf("correlation id %q, want a new 32-hex id", id)
			}
			task := hs.queue.Tasks()[0]
			var in tasks.Inbound
			_ = json.Unmarshal(task.Body, &in)
			if task.CorrelationID != id || in.CorrelationID != id {
				t.Errorf("task carries %q and %q, answer %q: want one id", task.CorrelationID, in.CorrelationID, id)
			}
		})
	}
}

// TestRefusalsAnswerWithCorrelationID: even a refused delivery says which id its logs carry.
func TestRefusalsAnswerWithCorrelationID(t *testing.T) {
	t.Parallel()
	hs := newHarness(t, "")
	got := hs.post([]byte(`{"object":`), map[string]string{tasks.HeaderCorrelationID: "corr-refused"})
	if got.Code != 400 || got.Header.Get(tasks.HeaderCorrelationID) != "corr-refused" {
		t.Errorf("answer %d with correlation id %q, want 400 with corr-refused", got.Code, got.Header.Get(tasks.HeaderCorrelationID))
	}
	if !strings.Contains(hs.logs.String(), `"correlation_id":"corr-refused"`) {
		t.Error("the refusal is not logged with its correlation id")
	}
}
