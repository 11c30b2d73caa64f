package worker_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/whatsapp"
	"github.com/wapipe/wapipe/tasks"
)

// TestInboundTraceWrittenOnce: each attempt writes its trace once, when it is over; a delivery of
// statuses only that went well writes none (its status records name the event and the task),
// and one that failed writes its retrying trace.
func TestInboundTraceWrittenOnce(t *testing.T) {
	t.Parallel()
	status := whatsapp.SampleStatus(whatsapp.SampleOptions{MessageID: "wamid.out", BizOpaqueCallbackData: tasks.IdempotencyKey("wamid.in")}, "delivered")
	tests := []struct {
		name       string
		payload    []byte
		err        string // the store method that fails
		wantCode   int
		wantTraces []string
	}{
		{"text", whatsapp.SampleText(whatsapp.SampleOptions{}, "hi"), "", 200, []string{"trace evt-1 " + store.TraceFinished}},
		{"statuses only", status, "", 200, nil},
		{"statuses only, failed", status, "ApplyStatus", 503, []string{"trace evt-1 " + store.TraceRetrying}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			hs := newHarness(t)
			if tc.err != "" {
				hs.records.Err = map[string]error{tc.err: errDown}
			}
			if got := hs.run(tasks.ProcessInboundPath, inboundTask("evt-1", tc.payload), attempt{}); got.Code != tc.wantCode {
				t.Fatalf("answer %d, want %d", got.Code, tc.wantCode)
			}
			if diff := cmp.Diff(tc.wantTraces, hs.records.Traces()); diff != "" {
				t.Errorf("trace writes (-want, +got):\n%s", diff)
			}
			if tc.err == "" && len(tc.wantTraces) == 0 {
				hs.records.mu.Lock()
				defer hs.records.mu.Unlock()
				if len(hs.records.recorded) != 1 || hs.records.recorded[0].TaskName != "task-1" || hs.records.recorded[0].InboundEventID != "evt-1" {
					t.Errorf("status records = %+v, want one naming task-1 and evt-1", hs.records.recorded)
				}
			}
		})
	}
}
