package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/wapipe/wapipe/internal/keyedid"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/testenv"
	"github.com/wapipe/wapipe/tasks"
)

// TestTraceBoundedForLargeBatch: the trace of a batch of 4,600 messages (about what a 3 MB
// delivery holds), every enqueue failed with a long error, is written, stays far under
// Firestore's 1 MiB document limit, and still says how many of each outcome there were.
func TestTraceBoundedForLargeBatch(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, _ := testenv.Store(t)
	traces := store.NewTraces(db, store.Options{})
	const n, failed = 4600, 100
	targets := make(map[string]store.TraceTarget, n)
	var errs []string
	for i := range n {
		id := fmt.Sprintf("wamid.HBgLMTY1MDU1NTEyMzQVAgASGBQzQTdBRkE0MDk5QjY0MzE%06d", i)
		tt := store.TraceTarget{MessageID: id, Status: "created",
			TaskName: "projects/wapipe-prod/locations/us-central1/queues/wa-outbound/tasks/" + tasks.OutboundTaskID(id)}
		if i%(n/failed) == 0 {
			tt.Status, tt.TaskName = "failed", ""
			tt.Error = "rpc error: code = Unavailable desc = " + strings.Repeat("connection reset by peer; ", 40)
			errs = append(errs, tt.Error)
		}
		targets[tasks.IdempotencyKey(keyedid.Dev(), id)] = tt
	}
	event := "wamid.batch"
	if err := traces.PutTrace(ctx, store.Trace{InboundEventID: event, Messages: n, State: store.TraceRetrying,
		Outbound: targets, Error: strings.Join(errs, "\n")}); err != nil {
		t.Fatalf("PutTrace: %v", err)
	}
	got, err := traces.GetTrace(ctx, event)
	if err != nil {
		t.Fatal(err)
	}
	if got.StartedAt.IsZero() || got.FinishedAt.IsZero() || got.ExpireAt.IsZero() || got.State != store.TraceRetrying {
		t.Errorf("trace state %s, started %v, finished %v, expires %v; want retrying with all three times", got.State, got.StartedAt, got.FinishedAt, got.ExpireAt)
	}
	if diff := cmp.Diff(map[string]int64{"created": n - failed, "failed": failed}, got.OutboundCounts); diff != "" {
		t.Errorf("outbound_counts (-want, +got):\n%s", diff)
	}
	if len(got.Outbound) != store.MaxTraceTargets || got.OutboundOmitted != n-store.MaxTraceTargets {
		t.Errorf("%d targets kept, %d omitted; want %d and %d", len(got.Outbound), got.OutboundOmitted, store.MaxTraceTargets, n-store.MaxTraceTargets)
	}
	kept := map[string]int{}
	for _, tt := range got.Outbound {
		kept[tt.Status]++
	}
	if kept["failed"] != failed {
		t.Errorf("%d failed targets kept, want all %d: failures come first", kept["failed"], failed)
	}
	size, _ := json.Marshal(got)
	if len(size) > 300<<10 {
		t.Errorf("trace is %d bytes, want under 300 KiB", len(size))
	}
	t.Logf("trace of %d targets: %d bytes as JSON", n, len(size))
}
