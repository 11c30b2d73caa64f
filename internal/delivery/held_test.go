package delivery_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/wapipe/wapipe/internal/delivery"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/taskqueue"
	"github.com/wapipe/wapipe/internal/testenv"
	"github.com/wapipe/wapipe/tasks"
)

// dispatched records the tasks the Cloud Tasks emulator dispatched to the worker's address.
type dispatched struct {
	mu    sync.Mutex
	calls []dispatch
}

type dispatch struct {
	path, queue string
	body        tasks.Send
}

func (d *dispatched) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	var body tasks.Send
	_ = json.Unmarshal(raw, &body)
	d.mu.Lock()
	d.calls = append(d.calls, dispatch{path: r.URL.Path, queue: r.Header.Get(tasks.HeaderQueueName), body: body})
	d.mu.Unlock()
}

func (d *dispatched) list() []dispatch {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]dispatch(nil), d.calls...)
}

// TestHeldSweepSendsDueRecordsOnce: the sweep's job gives a process_send task to each held record
// whose wait ends (evidence that Meta never took its send, or its cap passed), on its tenant's
// queue (the outbound queue for the single-tenant default), and none to the others (no status
// flowing for their number, or still inside the reconcile window), and one to each record whose
// task was killed on its last attempt (sending or pending long past any backoff), none to a
// record made a moment ago; a second sweep in the same hour makes no second task. Real
// Firestore emulator and Cloud Tasks emulator.
func TestHeldSweepSendsDueRecordsOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t, token, time.Time{})
	ctx := context.Background()
	project := testenv.ProjectID(t)
	emu, _ := testenv.Tasks(t, project, "us-central1", nil)
	admin, err := taskqueue.NewAdmin(ctx, project, "us-central1", emu.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close() })
	tpl := tasks.DefaultQueues().Templates[tasks.TenantOutboundTemplate]
	tpl.ID = tasks.TenantQueueID("acme")
	if err := admin.CreateQueue(ctx, tpl); err != nil {
		t.Fatal(err)
	}
	worker := &dispatched{}
	srv := httptest.NewServer(worker)
	t.Cleanup(srv.Close)
	tq, err := taskqueue.New(ctx, taskqueue.Config{ProjectID: project, Location: "us-central1", EmulatorHost: emu.Addr(), BaseURL: srv.URL, Token: "t"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tq.Close() })

	t0 := e.clk.now()
	held := func(key, tenantID, pnid string, until time.Time) {
		t.Helper()
		if _, _, err := e.out.BeginSend(ctx, store.OutboundRecord{IdempotencyKey: key, TenantID: tenantID, PhoneNumberID: pnid}); err != nil {
			t.Fatal(err)
		}
		if err := e.out.MarkUnknown(ctx, key, 0, "timeout", store.Stash{Message: `{"type":"text","text":{"body":"hi"}}`, MessageType: "text", To: contact}); err != nil {
			t.Fatal(err)
		}
		if ok, err := e.out.HoldUnknown(ctx, key, until); err != nil || !ok {
			t.Fatalf("hold %s: %v %v", key, ok, err)
		}
	}
	held("k-evidence", "acme", "111", t0.Add(24*time.Hour)) // statuses flow for 111 below: due
	held("k-capped", "", "333", t0.Add(time.Hour))          // no status for 333, cap passed: due
	held("k-waiting", "acme", "222", t0.Add(24*time.Hour))  // no status for 222, cap ahead: waits
	// Records whose task was killed on its last attempt: mid-send (sending, not held), after a
	// definite failure (pending), and before it began (pending, never begun); and one made a
	// moment ago, whose task is still to come.
	for _, k := range []string{"k-stranded-sending", "k-stranded-pending"} {
		if _, _, err := e.out.BeginSend(ctx, store.OutboundRecord{IdempotencyKey: k, TenantID: "acme", PhoneNumberID: "444"}); err != nil {
			t.Fatal(err)
		}
		if err := e.out.MarkUnknown(ctx, k, 0, "timeout", store.Stash{Message: `{"type":"text","text":{"body":"hi"}}`, MessageType: "text", To: contact}); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.out.MarkRetry(ctx, "k-stranded-pending", true, 131000, "meta said no"); err != nil {
		t.Fatal(err)
	}
	e.seed(delivery.APISend, "acme", "k-never-begun")
	e.clk.add(time.Second)
	if _, _, err := e.out.BeginSend(ctx, store.OutboundRecord{IdempotencyKey: "later", TenantID: "acme", PhoneNumberID: "111"}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.out.ApplyStatus(ctx, store.StatusUpdate{Key: "later", GraphMessageID: "wamid.later", Status: store.DeliveryDelivered,
		PhoneNumberID: "111", TenantID: "acme"}); err != nil {
		t.Fatal(err)
	}
	now := t0.Add(2 * time.Hour)
	e.clk.add(2*time.Hour - 2*time.Minute)
	held("k-recent", "acme", "111", now.Add(24*time.Hour)) // held on a last attempt, inside the window: waits
	e.seed(delivery.APISend, "acme", "k-just-made")        // its task is still to come: waits

	job := &delivery.HeldSweep{Records: e.out, Tasks: tq}
	res, err := job.Sweep(ctx, now)
	if err != nil || res.Found != 7 || res.Done != 5 {
		t.Fatalf("first sweep: %+v, %v; want 7 found (4 held, 3 stranded), 5 done", res, err)
	}
	res, err = job.Sweep(ctx, now.Add(time.Minute))
	if err != nil || res.Found != 7 || res.Done != 0 {
		t.Fatalf("second sweep: %+v, %v; want 7 found, none done again", res, err)
	}
	testenv.Eventually(t, 10*time.Second, func() bool { return len(worker.list()) >= 5 }, "five process_send tasks dispatched")
	got := map[string]dispatch{}
	for _, c := range worker.list() {
		got[c.body.IdempotencyKey] = c
	}
	want := map[string]dispatch{
		"k-evidence": {path: tasks.ProcessSendPath, queue: tasks.TenantQueueID("acme"), body: tasks.Send{IdempotencyKey: "k-evidence", TenantID: "acme"}},
		"k-capped":   {path: tasks.ProcessSendPath, queue: tasks.OutboundQueueID, body: tasks.Send{IdempotencyKey: "k-capped"}},
		"k-stranded-sending": {path: tasks.ProcessSendPath, queue: tasks.TenantQueueID("acme"),
			body: tasks.Send{IdempotencyKey: "k-stranded-sending", TenantID: "acme"}},
		"k-stranded-pending": {path: tasks.ProcessSendPath, queue: tasks.TenantQueueID("acme"),
			body: tasks.Send{IdempotencyKey: "k-stranded-pending", TenantID: "acme"}},
		"k-never-begun": {path: tasks.ProcessSendPath, queue: tasks.TenantQueueID("acme"),
			body: tasks.Send{IdempotencyKey: "k-never-begun", TenantID: "acme"}},
	}
	if len(got) != len(want) {
		t.Fatalf("dispatched %+v, want %+v", got, want)
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s: dispatched %+v, want %+v", k, got[k], w)
		}
	}
}
