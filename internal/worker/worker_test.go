package worker_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"cloud.google.com/go/cloudtasks/apiv2/cloudtaskspb"
	"cloud.google.com/go/firestore"
	"google.golang.org/api/iterator"

	"github.com/wapipe/wapipe/internal/cloudtasksemu"
	wacontact "github.com/wapipe/wapipe/internal/contact"
	"github.com/wapipe/wapipe/internal/devstack"
	"github.com/wapipe/wapipe/internal/graph/graphfake"
	"github.com/wapipe/wapipe/internal/keyedid"
	"github.com/wapipe/wapipe/internal/logging/logcheck"
	"github.com/wapipe/wapipe/internal/outgoing"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/taskqueue"
	"github.com/wapipe/wapipe/internal/testenv"
	"github.com/wapipe/wapipe/internal/webhook"
	"github.com/wapipe/wapipe/internal/whatsapp"
	"github.com/wapipe/wapipe/internal/worker"
	"github.com/wapipe/wapipe/tasks"
)

func TestMain(m *testing.M) { os.Exit(testenv.RunWithFirestore(m)) }

// stack is one test's whole pipeline: its own project in the shared Firestore emulator, its own
// Cloud Tasks emulator with short backoffs, the fake Graph API, the webhook and the worker.
type stack struct {
	*devstack.Stack
	t       *testing.T
	fs      *firestore.Client
	records records
	logs    *testenv.LogBuffer
}

// records are the stores the tests read.
type records struct {
	*store.Outbound
	*store.Statuses
	*store.Traces
	*store.DeadLetterStore
}

type stackOptions struct {
	serviceAccount string
	worker         []func(*worker.Deps)
	webhook        []func(*webhook.Deps)
	// externalWorkerAddr: the test runs the worker itself there (cmd/worker, killable).
	externalWorkerAddr string
	// noDefaultToken leaves WHATSAPP_ACCESS_TOKEN unset: numbers no tenant owns are unrouted.
	noDefaultToken bool
	// config changes the worker's configuration after the stack's defaults.
	config func(*worker.Config)
}

func newStack(t *testing.T, o stackOptions) *stack {
	t.Helper()
	host := testenv.FirestoreHost(t)
	fs, project := testenv.Firestore(t)
	queues := testenv.FastQueues(t)
	logs := &testenv.LogBuffer{}
	st, err := devstack.Start(context.Background(), devstack.Options{
		FirestoreHost: host, Project: project, Queues: queues,
		ServiceAccountEmail: o.serviceAccount,
		Logs:                func(string) io.Writer { return logs },
		Worker:              o.worker,
		Webhook:             o.webhook,
		WorkerAddr:          o.externalWorkerAddr,
		ExternalWorker:      o.externalWorkerAddr != "",
		// Tests apply their own tenants (tenants_test.go); the others test the default.
		NoTenants: true,
		WorkerConfig: func(c *worker.Config) {
			if o.noDefaultToken {
				c.AccessToken = ""
			}
			if o.config != nil {
				o.config(c)
			}
		},
	})
	if err != nil {
		t.Fatalf("devstack.Start: %v", err)
	}
	t.Cleanup(st.Stop)
	// Every test's logs: no wamid, phone number or unkeyed hash (CONTRACT.md, Logs).
	t.Cleanup(func() {
		logcheck.Check(t, logs.String(), []string{whatsapp.DefaultSampleOptions.From, contact, contactOwner}, nil)
		// Message text lives only in the stored conversation.
		for _, text := range []string{booking, "Pak Agus", "Done: create_booking", "Booked B-17", "already booked", "gibberish"} {
			if strings.Contains(logs.String(), text) {
				t.Errorf("a log line carries message text %q", text)
			}
		}
	})
	db := store.NewDB(fs)
	recs := records{store.NewOutbound(db, store.Options{}), store.NewStatuses(db, store.Options{}), store.NewTraces(db, store.Options{}), store.NewDeadLetters(db, store.Options{})}
	return &stack{Stack: st, t: t, fs: fs, records: recs, logs: logs}
}

// deliver signs and posts a Meta payload to the webhook, as Meta would: an answer other than 200
// is retried (Meta redelivers), for up to 20 s. Under a loaded test machine the webhook may fail
// fast (WEBHOOK_CALL_BUDGET) and rely on that redelivery.
func (s *stack) deliver(body []byte) {
	s.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		req, _ := http.NewRequest(http.MethodPost, s.WebhookURL, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Hub-Signature-256", whatsapp.Sign(body, s.AppSecret))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			s.t.Fatalf("deliver: %v", err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		switch {
		case resp.StatusCode == http.StatusOK:
			return
		case resp.StatusCode < 500 || time.Now().After(deadline):
			s.t.Fatalf("webhook answered %d %s", resp.StatusCode, b)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// idle waits until both queues, and the tenant queues named, are empty: every task has
// completed (or been dead-lettered).
func (s *stack) idle(tenantQueues ...string) {
	s.t.Helper()
	ctx := context.Background()
	tc, err := cloudtasksemu.NewClient(ctx, s.TasksAddr)
	if err != nil {
		s.t.Fatal(err)
	}
	defer tc.Close()
	testenv.Eventually(s.t, 20*time.Second, func() bool {
		for _, q := range append([]string{tasks.InboundQueueID, tasks.OutboundQueueID}, tenantQueues...) {
			it := tc.ListTasks(ctx, &cloudtaskspb.ListTasksRequest{Parent: s.QueuePath(q)})
			if _, err := it.Next(); !errors.Is(err, iterator.Done) {
				return false
			}
		}
		return true
	}, "queues never emptied")
}

func (s *stack) waitSends(n int) []graphfake.Request {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	got, err := s.Graph.WaitForSends(ctx, n)
	if err != nil {
		s.t.Fatalf("%d sends reached the Graph API, want %d: %v", len(got), n, err)
	}
	return got
}

func (s *stack) outbound(messageID string) store.OutboundRecord {
	s.t.Helper()
	rec, err := s.records.GetOutbound(context.Background(), tasks.IdempotencyKey(keyedid.Dev(), messageID))
	if err != nil {
		s.t.Fatalf("outbound record of %s: %v", messageID, err)
	}
	return rec
}

// sendAttempts counts the send calls the fake answered, successful or not.
func (s *stack) sendAttempts() int {
	n := 0
	for _, r := range s.Graph.Requests() {
		if r.Kind == graphfake.KindSend {
			n++
		}
	}
	return n
}

func messageIDs(t *testing.T, payload []byte) []string {
	t.Helper()
	p, err := whatsapp.Parse(payload)
	if err != nil {
		t.Fatal(err)
	}
	msgs, _ := whatsapp.Normalize(p)
	ids := make([]string, len(msgs))
	for i, m := range msgs {
		ids[i] = m.ID
	}
	return ids
}

func TestTenMessagesTenSends(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{})
	payload := whatsapp.SampleBatch(whatsapp.SampleOptions{}, 10)
	s.deliver(payload)
	sends := s.waitSends(10)
	s.idle()
	if n := len(s.Graph.Sends()); n != 10 {
		t.Fatalf("%d sends once the queues are empty, want 10", n)
	}
	keys := map[string]bool{}
	for _, r := range sends {
		keys[fmt.Sprint(r.Body["biz_opaque_callback_data"])] = true
		if r.Body["to"] != whatsapp.DefaultSampleOptions.From {
			t.Errorf("reply sent to %v", r.Body["to"])
		}
	}
	for _, id := range messageIDs(t, payload) {
		if !keys[tasks.IdempotencyKey(keyedid.Dev(), id)] {
			t.Errorf("no send carries the idempotency key of %s", id)
		}
		if rec := s.outbound(id); rec.State != store.OutboundSent || rec.GraphMessageID == "" || rec.Attempts != 1 {
			t.Errorf("record of %s = %s/%q/%d attempts, want sent with a Graph id after 1 attempt", id, rec.State, rec.GraphMessageID, rec.Attempts)
		}
	}
	trace, err := s.records.GetTrace(context.Background(), messageIDs(t, payload)[0])
	if err != nil || trace.State != store.TraceFinished || trace.Messages != 10 || len(trace.Outbound) != 10 || trace.TaskName == "" {
		t.Errorf("trace = %+v, %v; want finished with 10 outbound enqueues and the task name", trace, err)
	}
	// Every inbound message is marked as read, best effort.
	testenv.Eventually(t, 10*time.Second, func() bool {
		n := 0
		for _, r := range s.Graph.Requests() {
			if r.Kind == graphfake.KindRead && r.Status == 200 {
				n++
			}
		}
		return n == 10
	}, "not every message was marked as read")
}

// TestRedeliveredInboundTask: an inbound task run again (Cloud Tasks at-least-once, or the same
// messages in another delivery) creates no new outbound task and sends nothing new.
func TestRedeliveredInboundTask(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{})
	payload := whatsapp.SampleBatch(whatsapp.SampleOptions{}, 2)
	s.deliver(payload)
	s.waitSends(2)
	s.idle()

	// The same delivery as a new inbound task (its original name is reserved, as in production).
	ctx := context.Background()
	tq, err := taskqueue.New(ctx, taskqueue.Config{ProjectID: s.Project, Location: s.Location, EmulatorHost: s.TasksAddr,
		BaseURL: s.WorkerURL, Token: s.InternalToken})
	if err != nil {
		t.Fatal(err)
	}
	defer tq.Close()
	ids := messageIDs(t, payload)
	body, _ := json.Marshal(tasks.Inbound{InboundEventID: ids[0], CorrelationID: "redelivery", ReceivedAt: time.Now(), Payload: payload})
	if _, err := tq.Enqueue(ctx, taskqueue.Task{Queue: tasks.InboundQueueID, ID: "redelivered-inbound",
		Path: tasks.ProcessInboundPath, Body: body, CorrelationID: "redelivery"}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 10*time.Second, func() bool {
		tr, err := s.records.GetTrace(ctx, ids[0])
		return err == nil && tr.CorrelationID == "redelivery" && tr.State == store.TraceFinished
	}, "the redelivered inbound task did not finish")
	s.idle()
	if n := len(s.Graph.Sends()); n != 2 {
		t.Fatalf("%d sends after the redelivery, want 2", n)
	}
	tr, _ := s.records.GetTrace(ctx, ids[0])
	for key, target := range tr.Outbound {
		if target.Status != "existed" {
			t.Errorf("outbound enqueue %s on redelivery: %s, want existed", key, target.Status)
		}
	}
}

// failSends makes the fake's next sends fail; mark-as-read calls are not affected.
func failSends(s *stack, n int, fl graphfake.Failure) {
	fl.Kind = graphfake.KindSend
	s.Graph.FailWith(n, fl)
}

func TestGraphRetriesEndInOneSend(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{})
	failSends(s, 3, graphfake.Failure{HTTPStatus: 500, Code: 1})
	failSends(s, 1, graphfake.Failure{HTTPStatus: 400, Code: 130429, RetryAfter: "0"})
	payload := whatsapp.SampleText(whatsapp.SampleOptions{}, "hello")
	s.deliver(payload)
	s.waitSends(1)
	s.idle()
	if n, attempts := len(s.Graph.Sends()), s.sendAttempts(); n != 1 || attempts != 5 {
		t.Fatalf("%d successful sends in %d attempts, want 1 in 5", n, attempts)
	}
	rec := s.outbound(messageIDs(t, payload)[0])
	if rec.State != store.OutboundSent || rec.Attempts != 5 {
		t.Errorf("record = %s after %d attempts, want sent after 5", rec.State, rec.Attempts)
	}
}

func TestPermanentErrorNoRetry(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{})
	failSends(s, 1, graphfake.Failure{HTTPStatus: 400, Code: 131026})
	payload := whatsapp.SampleText(whatsapp.SampleOptions{}, "hello")
	s.deliver(payload)
	id := messageIDs(t, payload)[0]
	testenv.Eventually(t, 10*time.Second, func() bool {
		rec, err := s.records.GetOutbound(context.Background(), tasks.IdempotencyKey(keyedid.Dev(), id))
		return err == nil && rec.State == store.OutboundFailed
	}, "the record never became failed")
	s.idle()
	if attempts := s.sendAttempts(); attempts != 1 {
		t.Fatalf("%d send attempts, want 1", attempts)
	}
	if rec := s.outbound(id); rec.LastErrorCode != 131026 {
		t.Errorf("record error code %d, want 131026", rec.LastErrorCode)
	}
	if !strings.Contains(s.logs.String(), `"event":"outbound_failed"`) {
		t.Error("no outbound_failed log line")
	}
}

// lostResponse sends for real, then reports a timeout once: as if the instance died after Meta
// accepted the message but before the record said so.
type lostResponse struct {
	worker.Sender
	once   atomic.Bool
	sentID atomic.Value
}

func (l *lostResponse) Send(ctx context.Context, token, phoneNumberID string, to wacontact.Address, r outgoing.Message, key, replyTo string) (string, error) {
	id, err := l.Sender.Send(ctx, token, phoneNumberID, to, r, key, replyTo)
	if err == nil && l.once.CompareAndSwap(false, true) {
		l.sentID.Store(id)
		return "", context.DeadlineExceeded
	}
	return id, err
}

func TestCrashAfterSendReconciledByStatus(t *testing.T) {
	t.Parallel()
	lost := &lostResponse{}
	s := newStack(t, stackOptions{worker: []func(*worker.Deps){func(d *worker.Deps) {
		lost.Sender = d.Sender
		d.Sender = lost
	}}})
	payload := whatsapp.SampleText(whatsapp.SampleOptions{}, "hello")
	id := messageIDs(t, payload)[0]
	key := tasks.IdempotencyKey(keyedid.Dev(), id)
	s.deliver(payload)
	s.waitSends(1)
	testenv.Eventually(t, 5*time.Second, func() bool { return lost.sentID.Load() != nil }, "send not made")
	// Meta's "sent" status echoes the key.
	s.deliver(whatsapp.SampleStatus(whatsapp.SampleOptions{MessageID: lost.sentID.Load().(string), BizOpaqueCallbackData: key}, "sent"))
	s.idle()
	if n := len(s.Graph.Sends()); n != 1 {
		t.Fatalf("%d sends, want 1", n)
	}
	rec := s.outbound(id)
	if rec.State != store.OutboundSent || !rec.Reconciled || rec.GraphMessageID != lost.sentID.Load().(string) {
		t.Errorf("record = %+v, want sent, reconciled, with the Graph id", rec)
	}
}

func TestStatusesOutOfOrderKeepHighestRank(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{})
	payload := whatsapp.SampleText(whatsapp.SampleOptions{}, "hello")
	id := messageIDs(t, payload)[0]
	s.deliver(payload)
	s.waitSends(1)
	s.idle()
	graphID := s.outbound(id).GraphMessageID
	o := whatsapp.SampleOptions{MessageID: graphID, BizOpaqueCallbackData: tasks.IdempotencyKey(keyedid.Dev(), id)}
	for _, st := range []string{"read", "sent", "delivered", "read"} {
		s.deliver(whatsapp.SampleStatus(o, st))
	}
	s.idle()
	if rec := s.outbound(id); rec.DeliveryStatus != store.DeliveryRead {
		t.Errorf("delivery status %q after read, sent, delivered; want read", rec.DeliveryStatus)
	}
	statuses, err := s.records.ListStatusesFor(context.Background(), graphID)
	if err != nil || len(statuses) != 3 {
		t.Errorf("%d statuses recorded (%v), want 3: the repeated read is deduplicated", len(statuses), err)
	}
	// failed is terminal, and is logged at ERROR with Meta's code.
	s.deliver(whatsapp.SampleFailedStatus(o, 131026, "Message undeliverable", ""))
	s.deliver(whatsapp.SampleStatus(whatsapp.SampleOptions{MessageID: graphID}, "delivered"))
	s.idle()
	if rec := s.outbound(id); rec.DeliveryStatus != store.DeliveryFailed || rec.DeliveryError != 131026 {
		t.Errorf("record = %s/%d, want failed/131026", rec.DeliveryStatus, rec.DeliveryError)
	}
	if !strings.Contains(s.logs.String(), `"meta_error_code":131026`) {
		t.Error("failed status not logged with its Meta code")
	}
	if n := len(s.Graph.Sends()); n != 1 {
		t.Errorf("statuses caused sends: %d, want 1", n)
	}
}

func TestLastAttemptWritesDeadLetter(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{})
	failSends(s, 100, graphfake.Failure{HTTPStatus: 503, Code: 2})
	payload := whatsapp.SampleText(whatsapp.SampleOptions{}, "hello")
	id := messageIDs(t, payload)[0]
	s.deliver(payload)
	s.idle()
	max := int(testenv.FastQueues(t).Queues[tasks.OutboundQueueID].RetryConfig.MaxAttempts)
	if attempts := s.sendAttempts(); attempts != max {
		t.Errorf("%d send attempts, want max_attempts = %d", attempts, max)
	}
	dls, err := s.records.ListDeadLetters(context.Background(), true, 10)
	if err != nil || len(dls) != 1 {
		t.Fatalf("%d dead letters (%v), want 1", len(dls), err)
	}
	d := dls[0]
	var body tasks.Outbound
	if err := json.Unmarshal([]byte(d.Body), &body); err != nil || body.IdempotencyKey != tasks.IdempotencyKey(keyedid.Dev(), id) ||
		d.LastErrorCode != 2 || d.Path != tasks.ProcessOutboundPath || d.RetryCount != int64(max-1) {
		t.Errorf("dead letter = %+v", d)
	}
	if rec := s.outbound(id); rec.State != store.OutboundFailed {
		t.Errorf("record %s after retries ran out, want failed", rec.State)
	}
}

func TestUnauthorizedChangesNothing(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{serviceAccount: "invoker@wapipe-dev.iam.gserviceaccount.com"})
	body, _ := json.Marshal(tasks.Outbound{IdempotencyKey: tasks.IdempotencyKey(keyedid.Dev(), "wamid.x"), PhoneNumberID: "1", To: "2",
		Message: whatsapp.Message{ID: "wamid.x", Type: "text"}})
	tests := []struct {
		name   string
		header map[string]string
	}{
		{"no token", nil},
		{"wrong token", map[string]string{"X-Internal-Token": "nope"}},
		{"right token, no OIDC", map[string]string{"X-Internal-Token": s.InternalToken}},
		{"right token, bad OIDC", map[string]string{"X-Internal-Token": s.InternalToken, "Authorization": "Bearer e30.e30.sig"}},
	}
	for _, tc := range tests {
		for _, path := range []string{tasks.ProcessInboundPath, tasks.ProcessOutboundPath} {
			req, _ := http.NewRequest(http.MethodPost, s.WorkerURL+path, bytes.NewReader(body))
			for k, v := range tc.header {
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized {
				t.Errorf("%s %s: %d, want 401", tc.name, path, resp.StatusCode)
			}
		}
	}
	if _, err := s.records.GetOutbound(context.Background(), tasks.IdempotencyKey(keyedid.Dev(), "wamid.x")); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a refused request left a record: %v", err)
	}
	if n := len(s.Graph.Requests()); n != 0 {
		t.Errorf("a refused request reached the Graph API %d times", n)
	}
	// With the emulator's OIDC tokens, the real path works.
	payload := whatsapp.SampleText(whatsapp.SampleOptions{}, "hello")
	s.deliver(payload)
	s.waitSends(1)
}

// TestAuthErrorKeptForReplay: a bad token fails every reply, so each is kept as a dead letter for
// replay once the token is fixed, while the task still answers 200 and is not retried.
func TestAuthErrorKeptForReplay(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{})
	failSends(s, 1, graphfake.Failure{HTTPStatus: 401, Code: 190})
	payload := whatsapp.SampleText(whatsapp.SampleOptions{}, "hello")
	id := messageIDs(t, payload)[0]
	s.deliver(payload)
	s.idle()
	if attempts := s.sendAttempts(); attempts != 1 {
		t.Errorf("%d send attempts, want 1", attempts)
	}
	if rec := s.outbound(id); rec.State != store.OutboundFailed || rec.LastErrorCode != 190 {
		t.Errorf("record %s/%d, want failed/190", rec.State, rec.LastErrorCode)
	}
	dls, err := s.records.ListDeadLettersFor(context.Background(), "", tasks.IdempotencyKey(keyedid.Dev(), id))
	if err != nil || len(dls) != 1 || dls[0].LastErrorCode != 190 {
		t.Fatalf("dead letters %+v (%v), want one with code 190", dls, err)
	}
}
