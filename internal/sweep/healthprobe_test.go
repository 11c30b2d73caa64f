package sweep_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/wapipe/wapipe/internal/health"
	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/sweep"
	"github.com/wapipe/wapipe/internal/taskqueue"
	"github.com/wapipe/wapipe/internal/testenv"
	"github.com/wapipe/wapipe/tasks"
)

// TestHealthProbeLogsStalledQueues: the health job computes the report as GET /internal/health
// does, so a queue whose oldest task waited over ten minutes is logged queue_stalled at ERROR
// (the alert's event) with nobody calling the route, and an idle queue is not; the job counts
// the stalled queues (found) and the queues reported (done). A sweep of the worker's jobs logs
// it too, beside the sweep line.
func TestHealthProbeLogsStalledQueues(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, project := testenv.Store(t)
	emu, _ := testenv.Tasks(t, project, "us-central1", nil)
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
	// A backlog on the inbound queue (paused: nothing answers at the target).
	if err := admin.PauseQueue(ctx, tasks.InboundQueueID); err != nil {
		t.Fatal(err)
	}
	if _, err := tq.Enqueue(ctx, taskqueue.Task{Queue: tasks.InboundQueueID, ID: "waiting", Path: tasks.ProcessInboundPath, Body: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	// Twenty minutes later (Cloud Tasks cannot backdate a task): the oldest has waited that long.
	later := time.Now().Add(20 * time.Minute)
	checker := health.New(store.NewOutbound(db, store.Options{}), store.NewDeadLetters(db, store.Options{}), admin,
		[]string{admin.QueuePath(tasks.InboundQueueID), admin.QueuePath(tasks.OutboundQueueID)},
		health.Options{Now: func() time.Time { return later }})

	logs := &testenv.LogBuffer{}
	ctx = logging.WithLogger(ctx, logging.New(logs, logging.Options{Level: slog.LevelDebug, Hasher: logging.DevHasher()}))
	rep := (&sweep.Sweeper{Jobs: []sweep.Job{sweep.HealthProbe{Reporter: checker}}}).Run(ctx, later)
	if rep.Failed() || len(rep.Jobs) != 1 || rep.Jobs[0].Name != "health_probe" || rep.Jobs[0].Result != (sweep.Result{Found: 1, Done: 2}) {
		t.Errorf("sweep = %+v, want health_probe ok with found 1 (stalled), done 2 (queues)", rep)
	}
	var stalled []string
	for line := range strings.Lines(logs.String()) {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil && m["event"] == health.EventQueueStalled {
			if m["severity"] != "ERROR" {
				t.Errorf("queue_stalled at %v, want ERROR: %s", m["severity"], line)
			}
			stalled = append(stalled, fmt.Sprint(m["queue"]))
		}
	}
	if len(stalled) != 1 || stalled[0] != tasks.InboundQueueID {
		t.Errorf("queue_stalled lines for %v, want only %s:\n%s", stalled, tasks.InboundQueueID, logs.String())
	}
	if logs.Count("sweep") != 1 {
		t.Errorf("%d sweep lines, want 1", logs.Count("sweep"))
	}
}

// TestHealthProbeWithoutReporter: a worker without health fails the job, not the sweep's other
// jobs.
func TestHealthProbeWithoutReporter(t *testing.T) {
	t.Parallel()
	if _, err := (sweep.HealthProbe{}).Sweep(context.Background(), time.Now()); err == nil {
		t.Error("no error without a reporter")
	}
}
