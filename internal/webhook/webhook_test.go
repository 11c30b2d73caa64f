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
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	cloudtasks "cloud.google.com/go/cloudtasks/apiv2"
	"cloud.google.com/go/cloudtasks/apiv2/cloudtaskspb"
	"cloud.google.com/go/firestore"
	"google.golang.org/api/iterator"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/wapipe/wapipe/internal/config"
	"github.com/wapipe/wapipe/internal/httpserver/httpservertest"
	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/internal/logging/logcheck"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/taskqueue"
	"github.com/wapipe/wapipe/internal/testenv"
	"github.com/wapipe/wapipe/internal/webhook"
	"github.com/wapipe/wapipe/internal/whatsapp"
	"github.com/wapipe/wapipe/tasks"
)

func TestMain(m *testing.M) { os.Exit(testenv.RunWithFirestore(m)) }

const (
	appSecret   = "test-app-secret-value"
	verifyToken = "test-verify-token"
	taskToken   = "test-internal-token-0123456789"
	location    = "us-central1"
	senderPhone = "16505551234"
	messageText = "I would like to book a table for two"
)

// textPayload is a Meta text message webhook.
func textPayload(msgID string) []byte {
	return []byte(fmt.Sprintf(`{"object":"whatsapp_business_account","entry":[{"id":"WABA_ID","changes":[{"field":"messages","value":{
 "messaging_product":"whatsapp","metadata":{"display_phone_number":"15550001111","phone_number_id":"PNID1"},
 "contacts":[{"profile":{"name":"Ana"},"wa_id":%q}],
 "messages":[{"from":%q,"id":%q,"timestamp":"1763800000","type":"text","text":{"body":%q}}]}}]}]}`,
		senderPhone, senderPhone, msgID, messageText))
}

// env is one test's webhook wired to the real Firestore emulator and its own Cloud Tasks
// emulator, with the inbound queue paused so tasks stay where the test can count them.
type env struct {
	t       testing.TB
	tq      *taskqueue.Client
	url     string
	fs      *firestore.Client
	tc      *cloudtasks.Client
	project string
	cfg     *webhook.Config
	srv     *httptest.Server
	logs    *testenv.LogBuffer
	clock   *clock
	queue   string
}

type envOptions struct {
	failMode     string
	dedupe       webhook.Deduper // overrides the Firestore store
	tasks        func(webhook.Enqueuer) webhook.Enqueuer
	serviceEmail string
	// callBudget is WEBHOOK_CALL_BUDGET: its ceiling when zero, so an emulator slowed down by a
	// loaded machine does not pass for an outage.
	callBudget time.Duration
	// deps adjusts the service's dependencies before it starts.
	deps func(*webhook.Deps)
	// httpserver serves the webhook as cmd/webhook does (httpserver.Serve on loopback, with its
	// timeouts) instead of httptest; e.srv is then nil.
	httpserver bool
}

func newEnv(t testing.TB, o envOptions) *env {
	t.Helper()
	fs, project := testenv.Firestore(t)
	emu, tc := testenv.Tasks(t, project, location, nil)
	e := &env{t: t, fs: fs, tc: tc, project: project, logs: &testenv.LogBuffer{}, clock: &clock{now: time.Now()}}
	e.queue = fmt.Sprintf("projects/%s/locations/%s/queues/%s", project, location, tasks.InboundQueueID)
	if _, err := tc.PauseQueue(context.Background(), &cloudtaskspb.PauseQueueRequest{Name: e.queue}); err != nil {
		t.Fatalf("pause queue: %v", err)
	}
	e.cfg = &webhook.Config{
		Base: config.Base{
			AppEnv: "dev", ProjectID: project, TasksLocation: location, TasksEmulatorHost: emu.Addr(),
			InternalTaskBaseURL: "http://127.0.0.1:1/", InternalTaskToken: taskToken,
			TasksServiceAccountEmail: o.serviceEmail,
		},
		InboundQueue: tasks.InboundQueueID, AppSecret: appSecret, VerifyToken: verifyToken,
		DedupeTTL: time.Hour, DedupeFailMode: o.failMode, CallBudget: o.callBudget,
	}
	if e.cfg.CallBudget == 0 {
		e.cfg.CallBudget = 4 * time.Second
	}
	e.cfg.SetDefaults()
	if err := e.cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	tq, err := taskqueue.New(context.Background(), e.cfg.TaskQueue())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tq.Close() })
	e.tq = tq
	var enq webhook.Enqueuer = tq
	if o.tasks != nil {
		enq = o.tasks(tq)
	}
	var dd webhook.Deduper = store.NewMarkers(store.NewDB(fs), store.MarkerOptions{TTL: time.Hour, Now: e.clock.Now, EventRef: logging.DevHasher().Ref})
	if o.dedupe != nil {
		dd = o.dedupe
	}
	deps := webhook.Deps{
		Dedupe: dd, Payloads: store.NewPayloads(store.NewDB(fs), time.Hour), Tasks: enq,
		Logger:     logging.New(e.logs, logging.Options{Level: slog.LevelDebug, Hasher: logging.DevHasher()}),
		CallBudget: e.cfg.CallBudget,
	}
	if o.deps != nil {
		o.deps(&deps)
	}
	s := webhook.NewServer(e.cfg, deps)
	// Every test's logs: no wamid, phone number or unkeyed hash (CONTRACT.md, Logs).
	t.Cleanup(func() { logcheck.Check(t, e.logs.String(), []string{senderPhone}, nil) })
	if o.httpserver {
		e.url = httpservertest.Serve(t, s.Routes()) + webhook.Path
		return e
	}
	e.srv = httptest.NewServer(s.Routes())
	t.Cleanup(e.srv.Close)
	e.url = e.srv.URL + webhook.Path
	return e
}

func (e *env) post(body []byte, header map[string]string) (int, string) {
	e.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, e.url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Hub-Signature-256", whatsapp.Sign(body, appSecret))
	for k, v := range header {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatalf("POST: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func (e *env) tasks() []*cloudtaskspb.Task {
	e.t.Helper()
	it := e.tc.ListTasks(context.Background(), &cloudtaskspb.ListTasksRequest{Parent: e.queue, ResponseView: cloudtaskspb.Task_FULL})
	var out []*cloudtaskspb.Task
	for {
		task, err := it.Next()
		if errors.Is(err, iterator.Done) {
			return out
		}
		if err != nil {
			e.t.Fatalf("ListTasks: %v", err)
		}
		out = append(out, task)
	}
}

func (e *env) wantTasks(n int) []*cloudtaskspb.Task {
	e.t.Helper()
	got := e.tasks()
	if len(got) != n {
		e.t.Fatalf("%d tasks in the inbound queue, want %d", len(got), n)
	}
	return got
}

type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Add(d time.Duration) { c.mu.Lock(); c.now = c.now.Add(d); c.mu.Unlock() }

func TestVerifyHandshake(t *testing.T) {
	t.Parallel()
	s := webhook.NewServer(&webhook.Config{VerifyToken: verifyToken}, webhook.Deps{Logger: slog.New(slog.DiscardHandler)})
	srv := httptest.NewServer(s.Routes())
	defer srv.Close()
	tests := []struct {
		name     string
		query    string
		wantCode int
		wantBody string
	}{
		{"matching token", "hub.mode=subscribe&hub.verify_token=" + verifyToken + "&hub.challenge=1158201444", 200, "1158201444"},
		{"wrong token", "hub.mode=subscribe&hub.verify_token=nope&hub.challenge=1", 403, ""},
		{"wrong mode", "hub.mode=unsubscribe&hub.verify_token=" + verifyToken + "&hub.challenge=1", 403, ""},
		{"no token", "hub.mode=subscribe&hub.challenge=1", 403, ""},
		{"nothing", "", 403, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := http.Get(srv.URL + webhook.Path + "?" + tc.query)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.wantCode || (tc.wantBody != "" && string(b) != tc.wantBody) {
				t.Errorf("GET ?%s = %d %q, want %d %q", tc.query, resp.StatusCode, b, tc.wantCode, tc.wantBody)
			}
		})
	}
}

func TestHealthz(t *testing.T) {
	t.Parallel()
	s := webhook.NewServer(&webhook.Config{}, webhook.Deps{})
	rec := httptest.NewRecorder()
	s.Routes().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
	if rec.Code != 200 {
		t.Fatalf("GET /healthz = %d", rec.Code)
	}
}

// TestPostStatusCodes drives every refusal in the contract through the real handler and checks
// that none of them creates a task.
func TestPostStatusCodes(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	good := textPayload("wamid.codes1")
	tests := []struct {
		name     string
		body     []byte
		header   map[string]string
		wantCode int
		wantLog  string
	}{
		{"no signature", good, map[string]string{"X-Hub-Signature-256": ""}, 401, "signature_invalid"},
		{"wrong signature", good, map[string]string{"X-Hub-Signature-256": whatsapp.Sign(good, "other-secret")}, 401, "signature_invalid"},
		{"signature not hex", good, map[string]string{"X-Hub-Signature-256": "sha256=zz"}, 401, "signature_invalid"},
		{"signature without prefix", good, map[string]string{"X-Hub-Signature-256": strings.TrimPrefix(whatsapp.Sign(good, appSecret), "sha256=")}, 401, "signature_invalid"},
		{"signature over other bytes", append([]byte(" "), good...), map[string]string{"X-Hub-Signature-256": whatsapp.Sign(good, appSecret)}, 401, "signature_invalid"},
		{"malformed JSON, good signature", []byte(`{"object":`), nil, 400, "payload_malformed"},
		{"JSON array, good signature", []byte(`[1,2]`), nil, 400, "payload_malformed"},
	}
	for _, tc := range tests {
		code, body := e.post(tc.body, tc.header)
		if code != tc.wantCode {
			t.Errorf("%s: status %d (%s), want %d", tc.name, code, body, tc.wantCode)
		}
		if !e.logs.Has(tc.wantLog) {
			t.Errorf("%s: no %q log line", tc.name, tc.wantLog)
		}
	}
	e.wantTasks(0)
}

func TestBodyTooLarge(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	big := bytes.Repeat([]byte("a"), webhook.MaxBodyBytes+1)
	// Declared length over the cap: refused before reading.
	if code, _ := e.post(big, nil); code != http.StatusRequestEntityTooLarge {
		t.Errorf("declared oversize body: %d, want 413", code)
	}
	// Chunked, no declared length: refused once the cap is crossed.
	req, _ := http.NewRequest(http.MethodPost, e.url, io.MultiReader(bytes.NewReader(big)))
	req.ContentLength = -1
	req.Header.Set("X-Hub-Signature-256", whatsapp.Sign(big, appSecret))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("chunked oversize body: %d, want 413", resp.StatusCode)
	}
	if !e.logs.Has("body_too_large") {
		t.Error("no body_too_large log line")
	}
	e.wantTasks(0)
}

// TestAcceptCreatesTask checks the inbound task against the contract: name, headers, body.
func TestAcceptCreatesTask(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{serviceEmail: "tasks-invoker@p.iam.gserviceaccount.com"})
	body := textPayload("wamid.accept1")
	code, resp := e.post(body, map[string]string{"X-Correlation-ID": "corr-abc"})
	if code != 200 {
		t.Fatalf("POST = %d %s, want 200", code, resp)
	}
	task := e.wantTasks(1)[0]
	if want := e.queue + "/tasks/" + tasks.InboundTaskID("wamid.accept1"); task.Name != want {
		t.Errorf("task name %s, want %s", task.Name, want)
	}
	hr := task.GetHttpRequest()
	if hr.Url != "http://127.0.0.1:1"+tasks.ProcessInboundPath || hr.HttpMethod != cloudtaskspb.HttpMethod_POST {
		t.Errorf("target %s %s", hr.HttpMethod, hr.Url)
	}
	for k, want := range map[string]string{"X-Internal-Token": taskToken, "X-Correlation-ID": "corr-abc", "Content-Type": "application/json"} {
		if hr.Headers[k] != want {
			t.Errorf("header %s = %q, want %q", k, hr.Headers[k], want)
		}
	}
	if oidc := hr.GetOidcToken(); oidc == nil || oidc.ServiceAccountEmail != "tasks-invoker@p.iam.gserviceaccount.com" || oidc.Audience != "http://127.0.0.1:1" {
		t.Errorf("oidc token = %v", oidc)
	}
	var in tasks.Inbound
	if err := json.Unmarshal(hr.Body, &in); err != nil {
		t.Fatalf("task body is not JSON: %v", err)
	}
	var sent, got any
	_ = json.Unmarshal(body, &sent)
	_ = json.Unmarshal(in.Payload, &got)
	if in.InboundEventID != "wamid.accept1" || in.CorrelationID != "corr-abc" || in.ReceivedAt.IsZero() || fmt.Sprint(sent) != fmt.Sprint(got) {
		t.Errorf("task body = %s", hr.Body)
	}
	var raw map[string]json.RawMessage
	_ = json.Unmarshal(hr.Body, &raw)
	for _, k := range []string{"inbound_event_id", "correlation_id", "received_at", "payload"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("task body has no %q", k)
		}
	}
	// The marker is the one write, made before the task.
	m, err := store.NewMarkers(store.NewDB(e.fs), store.MarkerOptions{}).Get(context.Background(), "wamid.accept1")
	if err != nil || m.State != store.MarkerReceived || m.CorrelationID != "corr-abc" || m.ExpireAt.IsZero() {
		t.Errorf("marker = %+v, %v; want received with the correlation id and an expire_at", m, err)
	}
}

func TestCorrelationIDGenerated(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	if code, _ := e.post(textPayload("wamid.corr1"), map[string]string{"X-Correlation-ID": "bad id with spaces"}); code != 200 {
		t.Fatalf("POST = %d", code)
	}
	hr := e.wantTasks(1)[0].GetHttpRequest()
	id := hr.Headers["X-Correlation-ID"]
	if len(id) != 32 || strings.Contains(id, " ") {
		t.Errorf("generated correlation id %q", id)
	}
	if !strings.Contains(string(hr.Body), `"correlation_id":"`+id+`"`) {
		t.Error("the body's correlation_id differs from the header's")
	}
}

func TestDuplicateSequential(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	body := textPayload("wamid.dup3")
	for i := range 3 {
		if code, resp := e.post(body, nil); code != 200 {
			t.Fatalf("delivery %d: %d %s", i+1, code, resp)
		}
	}
	e.wantTasks(1)
	if n := e.logs.Count("duplicate_dropped"); n != 2 {
		t.Errorf("%d duplicate_dropped lines, want 2", n)
	}
}

func TestDuplicateConcurrent(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	body := textPayload("wamid.dup50")
	var wg sync.WaitGroup
	codes := make(chan int, 50)
	for range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, _ := e.post(body, nil)
			codes <- code
		}()
	}
	wg.Wait()
	close(codes)
	counts := map[int]int{}
	for c := range codes {
		counts[c]++
	}
	// Every delivery is answered 200: whichever gets there first creates the task, the others
	// find it by name. None makes a second task.
	if counts[200] != 50 {
		t.Errorf("status codes %v, want 50 × 200", counts)
	}
	e.wantTasks(1)
}

// TestDifferentEventsEachGetATask guards against dedupe that is too eager.
func TestDifferentEventsEachGetATask(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	for i := range 5 {
		if code, _ := e.post(textPayload(fmt.Sprintf("wamid.distinct%d", i)), nil); code != 200 {
			t.Fatalf("POST %d = %d", i, code)
		}
	}
	e.wantTasks(5)
}

// downStore is a Firestore client on a port where nothing listens.
func downStore(t testing.TB) *store.Markers {
	t.Helper()
	// FIRESTORE_EMULATOR_HOST wins over an endpoint option, but not over a connection.
	conn, err := grpc.NewClient("127.0.0.1:1", grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	c, err := firestore.NewClient(context.Background(), "down", option.WithGRPCConn(conn))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return store.NewMarkers(store.NewDB(c), store.MarkerOptions{})
}

// TestStoreOutage: with Firestore unreachable, fail closed answers 500 and fail open enqueues,
// both within the call budget (WEBHOOK_CALL_BUDGET, 1.5 s by default) and so well before Meta's
// 5 s timeout, where the answer would count as a failure whatever it said.
func TestStoreOutage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		mode      string
		wantCode  int
		wantTasks int
	}{
		{webhook.FailClosed, 500, 0},
		{webhook.FailOpen, 200, 1},
	}
	for _, tc := range tests {
		t.Run(tc.mode, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, envOptions{failMode: tc.mode, dedupe: downStore(t), callBudget: webhook.DefaultCallBudget})
			start := time.Now()
			code, resp := e.post(textPayload("wamid.outage"), nil)
			took := time.Since(start)
			t.Logf("fail %s: %d after %s", tc.mode, code, took.Round(time.Millisecond))
			if code != tc.wantCode {
				t.Fatalf("POST = %d %s, want %d", code, resp, tc.wantCode)
			}
			if took >= 5*time.Second {
				t.Errorf("answered after %s: Meta has given up at 5 s", took)
			}
			e.wantTasks(tc.wantTasks)
			if !strings.Contains(e.logs.String(), `"severity":"ERROR"`) || !e.logs.Has("dedupe_unavailable") {
				t.Error("the outage is not logged at ERROR with event dedupe_unavailable")
			}
		})
	}
}

// failingEnqueuer fails the first n creations, like a Cloud Tasks outage.
type failingEnqueuer struct {
	next webhook.Enqueuer
	n    atomic.Int32
}

func (f *failingEnqueuer) Enqueue(ctx context.Context, t taskqueue.Task) (taskqueue.Result, error) {
	if f.n.Add(-1) >= 0 {
		return taskqueue.Result{}, errors.New("create task: rpc error: code = Unavailable")
	}
	return f.next.Enqueue(ctx, t)
}

func TestTaskFailureThenRedelivery(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{tasks: func(next webhook.Enqueuer) webhook.Enqueuer {
		f := &failingEnqueuer{next: next}
		f.n.Store(1)
		return f
	}})
	body := textPayload("wamid.redeliver")
	if code, _ := e.post(body, nil); code < 500 {
		t.Fatalf("first delivery with Cloud Tasks failing: %d, want 5xx", code)
	}
	e.wantTasks(0)
	if !e.logs.Has("enqueue_failed") {
		t.Error("no enqueue_failed log line")
	}
	// Meta redelivers: it finds the marker and creates the task by name, at once.
	if code, resp := e.post(body, nil); code != 200 {
		t.Fatalf("redelivery: %d %s, want 200", code, resp)
	}
	e.wantTasks(1)
	if code, _ := e.post(body, nil); code != 200 {
		t.Fatal("third delivery not a 200 duplicate")
	}
	e.wantTasks(1)
}

// TestCrashBetweenMarkerAndTask: an instance that died after mark_if_new, before or after
// creating the task, strands nothing: Meta's redelivery is answered 200 at once, with no lease to
// wait out, and the event has exactly one task.
func TestCrashBetweenMarkerAndTask(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		taskCreated bool // the crashed instance got as far as creating the task
		wantStatus  string
	}{
		{"crashed before the task", false, "accepted"},
		{"crashed after the task", true, "duplicate"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, envOptions{})
			id := "wamid.crash-" + strings.ReplaceAll(tc.name, " ", "-")
			body := textPayload(id)
			crashed := store.NewMarkers(store.NewDB(e.fs), store.MarkerOptions{TTL: time.Hour, EventRef: logging.DevHasher().Ref})
			if _, err := crashed.MarkIfNew(context.Background(), id, "corr-crashed"); err != nil {
				t.Fatal(err)
			}
			if tc.taskCreated {
				if _, err := e.tq.Enqueue(context.Background(), taskqueue.Task{Queue: tasks.InboundQueueID, ID: tasks.InboundTaskID(id),
					Path: tasks.ProcessInboundPath, Body: []byte(`{}`)}); err != nil {
					t.Fatal(err)
				}
			}
			code, resp := e.post(body, nil)
			if code != 200 || !strings.Contains(resp, `"status":"`+tc.wantStatus+`"`) {
				t.Fatalf("redelivery: %d %s, want 200 %s", code, resp, tc.wantStatus)
			}
			if !tc.taskCreated && !e.logs.Has("task_recreated") {
				t.Error("no task_recreated log line")
			}
			e.wantTasks(1)
		})
	}
}

func TestLargePayloadOutOfBand(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	// A 3 MB delivery: one message plus Meta-style bulk (many statuses).
	var sb strings.Builder
	sb.WriteString(`{"object":"whatsapp_business_account","entry":[{"id":"WABA","changes":[{"field":"messages","value":{"messaging_product":"whatsapp","metadata":{"display_phone_number":"1555","phone_number_id":"PNID1"},"messages":[{"from":"1650","id":"wamid.big3mb","timestamp":"1","type":"text","text":{"body":"hi"}}],"statuses":[`)
	for i := 0; sb.Len() < 3_000_000; i++ {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, `{"id":"wamid.s%07d","status":"delivered","timestamp":"1763800000","recipient_id":"16505550000","conversation":{"id":"c%07d","origin":{"type":"service"}},"pricing":{"billable":true,"pricing_model":"CBP","category":"service"}}`, i, i)
	}
	sb.WriteString(`]}}]}]}`)
	body := []byte(sb.String())
	if code, resp := e.post(body, nil); code != 200 {
		t.Fatalf("3 MB POST = %d %s", code, resp)
	}
	task := e.wantTasks(1)[0]
	var in tasks.Inbound
	if err := json.Unmarshal(task.GetHttpRequest().Body, &in); err != nil {
		t.Fatal(err)
	}
	if len(in.Payload) != 0 || in.PayloadRef == "" || len(task.GetHttpRequest().Body) > 4096 {
		t.Fatalf("task carries %d payload bytes and ref %q; want only a reference", len(in.Payload), in.PayloadRef)
	}
	got, err := store.NewPayloads(store.NewDB(e.fs), time.Hour).Get(context.Background(), in.PayloadRef)
	if err != nil || !bytes.Equal(got, body) {
		t.Fatalf("stored payload: %d bytes, err %v; want the %d bytes sent", len(got), err, len(body))
	}
}

// TestLogsKeepSecrets: nothing a customer wrote, no phone number, no wamid (it holds the number),
// no unkeyed hash of either and no secret reaches the logs; the event is named by its keyed
// event_ref, which its dedupe marker carries too.
func TestLogsKeepSecrets(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	const eventID = "wamid.HBgLMTY1MDU1NTEyMzQVAgASGBQzRUIwQzc2N0Q3MTk0NjE5RUY0QQA="
	body := textPayload(eventID)
	e.post(body, nil)
	e.post(body, nil)
	e.post(body, map[string]string{"X-Hub-Signature-256": "sha256=00"})
	e.post([]byte(`{"bad":`), nil)
	logs := e.logs.String()
	if n := logcheck.Check(t, logs, []string{senderPhone}, []string{eventID}); n == 0 {
		t.Fatal("no log lines")
	}
	ref := logging.DevHasher().Ref(eventID)
	if !strings.Contains(logs, `"event_ref":"`+ref+`"`) {
		t.Errorf("no line carries event_ref %s:\n%s", ref, logs)
	}
	m, err := store.NewMarkers(store.NewDB(e.fs), store.MarkerOptions{}).GetMarkerByRef(context.Background(), ref)
	if err != nil || m.EventID != eventID {
		t.Errorf("GetMarkerByRef(%s) = %+v, %v; want the marker of %s", ref, m, err, eventID)
	}
	for _, secret := range []string{senderPhone, messageText, appSecret, taskToken, verifyToken} {
		if strings.Contains(logs, secret) {
			t.Errorf("logs contain %q", secret)
		}
	}
	for _, line := range strings.Split(strings.TrimSpace(logs), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line is not JSON: %s", line)
		}
		if m["severity"] == nil || m["message"] == nil {
			t.Errorf("log line without severity or message: %s", line)
		}
	}
}

// TestPayloadNearTheTaskLimit: what decides inline or out of band is the encoded task's size, and
// characters JSON may escape (<, >, &) must not grow a task past Cloud Tasks' limit.
func TestPayloadNearTheTaskLimit(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	tests := []struct {
		name       string
		size       int
		wantInline bool
	}{
		{"880 KB of <&> inline", 880 << 10, true},
		{"950 KB out of band", 950 << 10, false},
	}
	for i, tc := range tests {
		id := fmt.Sprintf("wamid.near-%d", i)
		filler := strings.Repeat("<&>", tc.size/3)
		body := []byte(fmt.Sprintf(`{"object":"whatsapp_business_account","entry":[{"id":"W","changes":[{"field":"messages","value":{"messaging_product":"whatsapp","metadata":{"phone_number_id":"P"},"messages":[{"from":"1","id":%q,"type":"text","text":{"body":%q}}]}}]}]}`, id, filler))
		if code, resp := e.post(body, nil); code != 200 {
			t.Fatalf("%s: %d %s", tc.name, code, resp)
		}
		task, err := e.tc.GetTask(context.Background(), &cloudtaskspb.GetTaskRequest{
			Name: e.queue + "/tasks/" + tasks.InboundTaskID(id), ResponseView: cloudtaskspb.Task_FULL})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var in tasks.Inbound
		if err := json.Unmarshal(task.GetHttpRequest().Body, &in); err != nil {
			t.Fatal(err)
		}
		if inline := len(in.Payload) > 0; inline != tc.wantInline || len(task.GetHttpRequest().Body) > tasks.MaxTaskBodyBytes {
			t.Errorf("%s: inline=%v with a %d-byte task, want inline=%v and at most %d bytes",
				tc.name, inline, len(task.GetHttpRequest().Body), tc.wantInline, tasks.MaxTaskBodyBytes)
		}
	}
}
