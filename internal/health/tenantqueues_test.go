package health_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/wapipe/wapipe/internal/health"
	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/taskqueue"
	"github.com/wapipe/wapipe/internal/tenant"
	"github.com/wapipe/wapipe/internal/testenv"
	"github.com/wapipe/wapipe/tasks"
)

// TestHealthShowsTenantQueues: the report every service shows (ForStore) includes every
// tenant's send queue, by its queue id, beside the service's queues: a paused tenant queue with
// tasks waiting 20 minutes shows its backlog, its oldest task's age and makes the verdict
// failing; an idle tenant queue shows empty. The handler's JSON carries the same, and it logs
// the stalled queue at ERROR (queue_stalled, the alert's event) and not the idle one.
func TestHealthShowsTenantQueues(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, 0, false)
	db, admin, tq := f.db, f.admin, f.tq
	tenants := store.NewTenants(db, store.Options{})
	for i, id := range []string{"acme-bus", "idle-co"} {
		tn := &tenant.Tenant{ID: id, Name: id, Language: "en", Audience: tenant.AudiencePublic,
			PhoneNumbers: []tenant.PhoneNumber{{PhoneNumberID: fmt.Sprint(100 + i), WABAID: "2"}}}
		tn.ApplyDefaults()
		if _, err := tenants.Apply(ctx, tn, false); err != nil {
			t.Fatal(err)
		}
		if _, _, err := admin.EnsureQueue(ctx, tasks.DefaultQueues().TenantQueue(id, tn.Sending)); err != nil {
			t.Fatal(err)
		}
	}
	busy, idle := tasks.TenantQueueID("acme-bus"), tasks.TenantQueueID("idle-co")
	if err := admin.PauseQueue(ctx, busy); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if _, err := tq.Enqueue(ctx, taskqueue.Task{Queue: busy, ID: fmt.Sprintf("waiting-%d", i), Path: tasks.ProcessOutboundPath,
			Body: []byte(`{}`)}); err != nil {
			t.Fatal(err)
		}
	}

	// What every service reports (the worker, the console, wapipe health --direct).
	queues := []string{admin.QueuePath(tasks.InboundQueueID), admin.QueuePath(tasks.OutboundQueueID)}
	rep, err := health.ForStore(db, admin, queues).Check(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if q := rep.Queues[busy]; q.Tasks != 2 || !q.Paused {
		t.Errorf("ForStore: %s = %+v, want 2 tasks, paused (queues %v)", busy, q, rep.Queues)
	}

	// Twenty minutes later (Cloud Tasks cannot backdate a task): the oldest has waited that long.
	later := time.Now().Add(20 * time.Minute)
	checker := health.New(store.NewOutbound(db, store.Options{}), store.NewDeadLetters(db, store.Options{}), admin, queues,
		health.Options{Now: func() time.Time { return later }, Tenants: tenants})
	rep, err = checker.Check(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{tasks.InboundQueueID, tasks.OutboundQueueID, busy, idle} {
		if _, ok := rep.Queues[id]; !ok {
			t.Errorf("no queue %s in the report's queues %v", id, rep.Queues)
		}
	}
	if q := rep.Queues[busy]; q.Tasks != 2 || q.OldestTaskAgeS < 19*60 || !q.Paused {
		t.Errorf("%s = %+v, want 2 tasks, the oldest about 20 min old, paused", busy, q)
	}
	if q := rep.Queues[idle]; q.Tasks != 0 || q.OldestTaskAgeS != 0 || q.Paused {
		t.Errorf("%s = %+v, want empty and running", idle, q)
	}
	if rep.Status != health.Failing || !strings.Contains(rep.Reason, "queue "+busy+" is paused") {
		t.Errorf("status %s (%s), want failing naming %s", rep.Status, rep.Reason, busy)
	}

	// The handler: the same report as JSON, and the stalled queue logged for the alert.
	logs := &testenv.LogBuffer{}
	logger := logging.New(logs, logging.Options{Level: slog.LevelDebug, Hasher: logging.DevHasher()})
	req := httptest.NewRequest(http.MethodGet, "/internal/health", nil)
	req = req.WithContext(logging.WithLogger(req.Context(), logger))
	w := httptest.NewRecorder()
	health.Handler(checker).ServeHTTP(w, req)
	if w.Code != http.StatusServiceUnavailable {
		t.Errorf("handler status %d, want 503 (failing)", w.Code)
	}
	var body struct {
		Queues map[string]struct {
			Tasks          int64   `json:"tasks"`
			OldestTaskAgeS float64 `json:"oldest_task_age_s"`
		} `json:"queues"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
		t.Fatalf("handler body %s: %v", w.Body.String(), err)
	}
	if q := body.Queues[busy]; q.Tasks != 2 || q.OldestTaskAgeS < 19*60 {
		t.Errorf("JSON queues[%s] = %+v, want 2 tasks about 20 min old; body %s", busy, q, w.Body.String())
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
	if len(stalled) != 1 || stalled[0] != busy {
		t.Errorf("queue_stalled lines for %v, want only %s:\n%s", stalled, busy, logs.String())
	}
}
