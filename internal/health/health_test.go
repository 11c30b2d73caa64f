package health_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/wapipe/wapipe/internal/health"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/taskqueue"
	"github.com/wapipe/wapipe/internal/testenv"
	"github.com/wapipe/wapipe/tasks"
)

func TestMain(m *testing.M) { os.Exit(testenv.RunWithFirestore(m)) }

// records are the stores the fixture writes to.
type records struct {
	*store.Outbound
	*store.DeadLetterStore
}

type fixture struct {
	checker *health.Checker
	records records
	tq      *taskqueue.Client
	admin   *taskqueue.Admin
	db      *store.DB
	now     time.Time
}

func newFixture(t *testing.T, clockAhead time.Duration, pause bool) *fixture {
	t.Helper()
	db, project := testenv.Store(t)
	emu, _ := testenv.Tasks(t, project, "us-central1", nil)
	ctx := context.Background()
	admin, err := taskqueue.NewAdmin(ctx, project, "us-central1", emu.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close() })
	tq, err := taskqueue.New(ctx, taskqueue.Config{ProjectID: project, Location: "us-central1", EmulatorHost: emu.Addr(),
		BaseURL: "http://127.0.0.1:1", Token: "t"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tq.Close() })
	// Nothing answers at the target: pause the queues so tasks wait as a backlog would.
	for _, q := range []string{tasks.InboundQueueID, tasks.OutboundQueueID} {
		if !pause {
			break
		}
		if err := admin.PauseQueue(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	// Records are written on a fixed clock, so their latencies are exactly what a test sets.
	now := time.Now()
	opts := store.Options{Now: func() time.Time { return now }}
	recs := records{store.NewOutbound(db, opts), store.NewDeadLetters(db, opts)}
	f := &fixture{records: recs, tq: tq, admin: admin, db: db, now: now}
	f.checker = health.New(recs.Outbound, recs.DeadLetterStore, admin, []string{tq.QueuePath(tasks.InboundQueueID), tq.QueuePath(tasks.OutboundQueueID)},
		health.Options{Now: func() time.Time { return now.Add(clockAhead) }})
	return f
}

func (f *fixture) sent(t *testing.T, key string, latency time.Duration) {
	t.Helper()
	ctx := context.Background()
	if _, _, err := f.records.BeginSend(ctx, store.OutboundRecord{IdempotencyKey: key, ReceivedAt: f.now.Add(-latency)}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.records.MarkSent(ctx, key, "wamid."+key, false); err != nil {
		t.Fatal(err)
	}
}

func TestHealthy(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 0, false)
	for i := range 20 {
		f.sent(t, fmt.Sprintf("k%d", i), time.Duration(i+1)*50*time.Millisecond) // 50 ms … 1 s
	}
	rep, err := f.checker.Check(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if rep.Status != health.OK {
		t.Errorf("status %s (%s), want ok", rep.Status, rep.Reason)
	}
	if rep.LastHour.Sent != 20 || rep.LastHour.SuccessRate != 1 || rep.Outbound != (health.OutboundCounts{}) || rep.DeadLetters != 0 {
		t.Errorf("report = %+v", rep)
	}
	// 50 ms … 1 s in 20 steps: buckets ≤100 (2), ≤250 (3), ≤500 (5), ≤1000 (10). The 10th of 20 is
	// the last of ≤500; the 19th is nine tenths into ≤1000.
	if p50, p95 := rep.LastHour.LatencyP50MS, rep.LastHour.LatencyP95MS; p50 != 500 || p95 != 950 {
		t.Errorf("latency p50 %.0f ms, p95 %.0f ms; want 500 and 950 (interpolated within buckets)", p50, p95)
	}
}

// TestHealthSeesProblems creates a backlog, failures and dead letters and finds each in the answer.
func TestHealthSeesProblems(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 15*time.Minute, true)
	ctx := context.Background()
	for i := range 3 {
		if _, err := f.tq.Enqueue(ctx, taskqueue.Task{Queue: tasks.OutboundQueueID, ID: fmt.Sprintf("backlog-%d", i),
			Path: tasks.ProcessOutboundPath, Body: []byte(`{}`)}); err != nil {
			t.Fatal(err)
		}
	}
	f.sent(t, "ok1", 200*time.Millisecond)
	for i := range 2 {
		key := fmt.Sprintf("bad%d", i)
		if _, _, err := f.records.BeginSend(ctx, store.OutboundRecord{IdempotencyKey: key}); err != nil {
			t.Fatal(err)
		}
		if err := f.records.MarkFailed(ctx, key, 131026, "whatsapp_permanent_error", "undeliverable"); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := f.records.BeginSend(ctx, store.OutboundRecord{IdempotencyKey: "stuck"}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.records.PutDeadLetter(ctx, store.DeadLetter{Queue: tasks.OutboundQueueID, TaskName: "x", Path: tasks.ProcessOutboundPath}); err != nil {
		t.Fatal(err)
	}

	rep, err := f.checker.Check(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out := rep.Queues[tasks.OutboundQueueID]
	if out.Tasks != 3 || out.OldestTaskAgeS < 14*60 || !out.Paused {
		t.Errorf("outbound queue = %+v, want 3 tasks, oldest about 15 min, paused", out)
	}
	if rep.Outbound.Failed != 2 || rep.Outbound.Sending != 1 || rep.DeadLetters != 1 {
		t.Errorf("outbound = %+v, dead letters %d", rep.Outbound, rep.DeadLetters)
	}
	if rep.LastHour.Sent != 1 || rep.LastHour.Failed != 2 {
		t.Errorf("last hour = %+v", rep.LastHour)
	}
	if rep.Status != health.Failing {
		t.Errorf("status %s (%s), want failing", rep.Status, rep.Reason)
	}
	for _, want := range []string{"paused", "dead letters", "success rate"} {
		if !contains(rep.Reason, want) {
			t.Errorf("reason %q does not mention %q", rep.Reason, want)
		}
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
