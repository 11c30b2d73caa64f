package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/wapipe/wapipe/internal/taskqueue"
	"github.com/wapipe/wapipe/internal/testenv"
	"github.com/wapipe/wapipe/tasks"
)

// TestHealthShowsTenantQueueBacklog: `wapipe health` prints every tenant's send queue beside
// the service's queues: a tenant queue paused with tasks waiting shows its backlog and its oldest
// task's age, and the verdict names it (exit 1).
func TestHealthShowsTenantQueueBacklog(t *testing.T) {
	t.Parallel()
	e := newTenantEnv(t)
	file := writeFile(t, "id: acme-bus\nname: Acme Bus\nlanguage: id\naudience: members\nphone_numbers:\n  - {phone_number_id: \"200\", waba_id: \"300\"}\n")
	mustCLI(t, e.args("apply", "-f", file)...) // creates the tenant's queue
	ctx := context.Background()
	queue := tasks.TenantQueueID("acme-bus")
	if err := e.admin.PauseQueue(ctx, queue); err != nil {
		t.Fatal(err)
	}
	tq, err := taskqueue.New(ctx, taskqueue.Config{ProjectID: e.project, Location: "us-central1", EmulatorHost: e.tasksAddr,
		BaseURL: "http://127.0.0.1:1", Token: "t"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tq.Close() })
	for i := range 3 {
		if _, err := tq.Enqueue(ctx, taskqueue.Task{Queue: queue, ID: fmt.Sprintf("waiting-%d", i), Path: tasks.ProcessOutboundPath, Body: []byte(`{}`)}); err != nil {
			t.Fatal(err)
		}
	}

	type queueJSON struct {
		Tasks          int64   `json:"tasks"`
		OldestTaskAgeS float64 `json:"oldest_task_age_s"`
		Paused         bool    `json:"paused"`
	}
	var last string
	// The age grows from zero: poll until it reads at least a second.
	testenv.Eventually(t, 60*time.Second, func() bool {
		out, _, err := cli(t, "health", "--direct", "--project", e.project, "--location", "us-central1", "--tasks-emulator", e.tasksAddr)
		last = fmt.Sprintf("%s (%v)", out, err)
		var h struct {
			Status, Reason string
			Queues         map[string]queueJSON
		}
		if json.Unmarshal([]byte(out), &h) != nil || err == nil {
			return false
		}
		q, ok := h.Queues[queue]
		_, inbound := h.Queues[tasks.InboundQueueID]
		return ok && inbound && q.Tasks == 3 && q.Paused && q.OldestTaskAgeS >= 1 &&
			h.Status == "failing" && strings.Contains(h.Reason, "queue "+queue+" is paused")
	}, "health --direct never showed %s's backlog of 3, paused, with its oldest task's age: last %s", queue, lastOut{&last})
}

// lastOut prints the last output polled, when the poll gives up.
type lastOut struct{ s *string }

func (l lastOut) String() string { return *l.s }
