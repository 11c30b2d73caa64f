package devstack_test

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/wapipe/wapipe/internal/devstack"
	"github.com/wapipe/wapipe/internal/testenv"
)

// TestStackSweepsLikeCloudScheduler: the local stack posts the worker's sweep on a ticker, with
// the internal token, as Cloud Scheduler does every minute in production: the worker logs a
// sweep line, ok, with the stranded-inbox and health jobs, on each tick.
func TestStackSweepsLikeCloudScheduler(t *testing.T) {
	t.Parallel()
	host := testenv.FirestoreHost(t)
	_, project := testenv.Firestore(t)
	logs := &testenv.LogBuffer{}
	worker := &testenv.LogBuffer{}
	st, err := devstack.Start(context.Background(), devstack.Options{
		FirestoreHost: host, Project: project, Queues: testenv.FastQueues(t), NoTenants: true,
		Logs: func(c string) io.Writer {
			if c == "worker" {
				return worker
			}
			return logs
		},
		SweepEvery: 200 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Stop()
	testenv.Eventually(t, 20*time.Second, func() bool { return worker.Count("sweep") >= 2 }, "the stack never swept twice:\n%s", worker.String())
	for line := range strings.Lines(worker.String()) {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) != nil || m["event"] != "sweep" {
			continue
		}
		if m["status"] != "ok" || m["stranded_inboxes"] == nil || m["health_probe"] == nil {
			t.Errorf("sweep line %s, want ok with the stranded_inboxes and health_probe jobs", line)
		}
	}
	if strings.Contains(worker.String(), `"event":"devstack_sweep_failed"`) {
		t.Errorf("a local sweep failed:\n%s", worker.String())
	}
}
