package taskqueue_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/wapipe/wapipe/internal/taskqueue"
	"github.com/wapipe/wapipe/internal/tenant"
	"github.com/wapipe/wapipe/internal/testenv"
	"github.com/wapipe/wapipe/tasks"
)

const (
	project  = "p-admin"
	location = "us-central1"
)

func newAdmin(t *testing.T) (*taskqueue.Admin, *taskqueue.Client) {
	t.Helper()
	emu, _ := testenv.Tasks(t, project, location, nil)
	ctx := context.Background()
	admin, err := taskqueue.NewAdmin(ctx, project, location, emu.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close() })
	tq, err := taskqueue.New(ctx, taskqueue.Config{ProjectID: project, Location: location, EmulatorHost: emu.Addr(),
		BaseURL: "http://127.0.0.1:1", Token: "secret-token"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tq.Close() })
	return admin, tq
}

// TestAdminReadsAPausedBacklog pauses a queue, enqueues, and reads the backlog back as health and
// the operator CLI do: stats, the task list, one task in full; then resumes the queue.
func TestAdminReadsAPausedBacklog(t *testing.T) {
	t.Parallel()
	admin, tq := newAdmin(t)
	ctx := context.Background()
	if err := admin.PauseQueue(ctx, tasks.InboundQueueID); err != nil {
		t.Fatal(err)
	}
	res, err := tq.Enqueue(ctx, taskqueue.Task{Queue: tasks.InboundQueueID, ID: "t1", Path: tasks.ProcessInboundPath, Body: []byte(`{"a":1}`)})
	if err != nil {
		t.Fatal(err)
	}
	st, err := admin.QueueStats(ctx, tasks.InboundQueueID)
	if err != nil {
		t.Fatal(err)
	}
	if !st.Paused || st.Tasks != 1 || st.OldestArrival.IsZero() {
		t.Errorf("stats = %+v, want paused with one task and its arrival time", st)
	}
	list, err := admin.ListTasks(ctx, tasks.InboundQueueID, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].Name != res.Name || list[0].Body != nil {
		t.Errorf("ListTasks = %+v, want the task %s without its body", list, res.Name)
	}
	full, err := admin.GetTask(ctx, admin.TaskPath(tasks.InboundQueueID, "t1"), true)
	if err != nil {
		t.Fatal(err)
	}
	if string(full.Body) != `{"a":1}` || full.Method != "POST" || full.Headers[tasks.HeaderInternalToken] != "secret-token" {
		t.Errorf("GetTask = %+v, want the body, method and headers as created", full)
	}
	if _, err := admin.GetTask(ctx, admin.TaskPath(tasks.InboundQueueID, "missing"), false); !errors.Is(err, taskqueue.ErrTaskNotFound) {
		t.Errorf("GetTask(missing) = %v, want ErrTaskNotFound", err)
	}
	if err := admin.ResumeQueue(ctx, tasks.InboundQueueID); err != nil {
		t.Fatal(err)
	}
	if st, err := admin.QueueStats(ctx, tasks.InboundQueueID); err != nil || st.Paused {
		t.Errorf("after ResumeQueue: stats %+v, %v; want running", st, err)
	}
}

// TestAdminCreatesAndUpdatesAQueue creates a queue from a definition, as per-tenant queues will
// be, and updates it.
func TestAdminCreatesAndUpdatesAQueue(t *testing.T) {
	t.Parallel()
	admin, _ := newAdmin(t)
	ctx := context.Background()
	q, _ := tasks.DefaultQueues().Queue(tasks.OutboundQueueID)
	q.ID = "tenant-a-outbound"
	if err := admin.CreateQueue(ctx, q); err != nil {
		t.Fatal(err)
	}
	q.RetryConfig.MaxBackoff.Duration = 2 * time.Minute
	if err := admin.UpdateQueue(ctx, q); err != nil {
		t.Fatal(err)
	}
	if st, err := admin.QueueStats(ctx, q.ID); err != nil || st.Paused || st.Tasks != 0 {
		t.Errorf("stats of the new queue = %+v, %v; want an empty running queue", st, err)
	}
}

// TestEnsureQueue creates a tenant's send queue from the template, leaves it alone when nothing
// changed, and updates it when the tenant's rate changes.
func TestEnsureQueue(t *testing.T) {
	t.Parallel()
	admin, tq := newAdmin(t)
	ctx := context.Background()
	q := tasks.TenantQueue("acme-bus", tenant.Sending{PerSecond: 5, MaxConcurrent: 2})
	steps := []struct {
		name                 string
		q                    tasks.Queue
		wantCreated, wantUpd bool
	}{
		{"new tenant", q, true, false},
		{"same file again", q, false, false},
		{"rate changed", tasks.TenantQueue("acme-bus", tenant.Sending{PerSecond: 8, MaxConcurrent: 3}), false, true},
		{"same again", tasks.TenantQueue("acme-bus", tenant.Sending{PerSecond: 8, MaxConcurrent: 3}), false, false},
	}
	for _, s := range steps {
		created, updated, err := admin.EnsureQueue(ctx, s.q)
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if created != s.wantCreated || updated != s.wantUpd {
			t.Errorf("%s: created %v updated %v, want %v %v", s.name, created, updated, s.wantCreated, s.wantUpd)
		}
	}
	cfg, err := admin.QueueConfig(ctx, "wa-out-acme-bus")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.RateLimits.MaxDispatchesPerSecond != 8 || cfg.RateLimits.MaxConcurrentDispatches != 3 || cfg.RetryConfig.MaxAttempts != q.RetryConfig.MaxAttempts {
		t.Errorf("queue after update: %+v", cfg)
	}
	// The queue serves tasks like any other.
	if _, err := tq.Enqueue(ctx, taskqueue.Task{Queue: "wa-out-acme-bus", ID: "t1", Path: tasks.ProcessOutboundPath, Body: []byte(`{}`)}); err != nil {
		t.Errorf("enqueue to the tenant queue: %v", err)
	}
}

// TestTaskInvoker: a task carries the OIDC token of the client's own account, or of the task's
// Invoker when it names one (a replay acting as the route's own enqueuer); a client with no
// account attaches none, whatever the task says.
func TestTaskInvoker(t *testing.T) {
	t.Parallel()
	emu, _ := testenv.Tasks(t, project, location, nil)
	ctx := context.Background()
	admin, err := taskqueue.NewAdmin(ctx, project, location, emu.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close() })
	if err := admin.PauseQueue(ctx, tasks.InboundQueueID); err != nil {
		t.Fatal(err)
	}
	const own, webhook = "wapipe-inv-console@p.iam.gserviceaccount.com", "wapipe-inv-webhook@p.iam.gserviceaccount.com"
	for _, tc := range []struct {
		name, account, invoker, want string
	}{
		{"own account", own, "", own},
		{"the route enqueuer", own, webhook, webhook},
		{"no OIDC at all", "", webhook, ""},
	} {
		tq, err := taskqueue.New(ctx, taskqueue.Config{ProjectID: project, Location: location, EmulatorHost: emu.Addr(),
			BaseURL: "https://worker.example", Token: "secret-token", ServiceAccountEmail: tc.account})
		if err != nil {
			t.Fatal(err)
		}
		id := strings.ReplaceAll(tc.name, " ", "-")
		_, err = tq.Enqueue(ctx, taskqueue.Task{Queue: tasks.InboundQueueID, ID: id, Path: tasks.ProcessInboundPath, Body: []byte(`{}`), Invoker: tc.invoker})
		tq.Close()
		if err != nil {
			t.Fatal(err)
		}
		got, err := admin.GetTask(ctx, admin.TaskPath(tasks.InboundQueueID, id), false)
		if err != nil || got.OIDCServiceAccount != tc.want {
			t.Errorf("%s: the task's OIDC account %q (%v), want %q", tc.name, got.OIDCServiceAccount, err, tc.want)
		}
	}
}
