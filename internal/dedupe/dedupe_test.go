package dedupe_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wapipe/wapipe/internal/dedupe"
)

// TestDecide covers what an existing marker means for a new delivery of its event.
func TestDecide(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		name     string
		cur      dedupe.Marker
		want     dedupe.Result
		wantDone bool
	}{
		{"enqueued is a duplicate", dedupe.Marker{State: dedupe.StateEnqueued, Attempt: 2}, dedupe.Result{Outcome: dedupe.Duplicate, Attempt: 2}, true},
		{"enqueued with a lease run out is still a duplicate", dedupe.Marker{State: dedupe.StateEnqueued, LeaseUntil: now.Add(-time.Hour), Attempt: 1}, dedupe.Result{Outcome: dedupe.Duplicate, Attempt: 1}, true},
		{"pending within its lease is in flight", dedupe.Marker{State: dedupe.StatePending, LeaseUntil: now.Add(time.Second), Attempt: 1}, dedupe.Result{Outcome: dedupe.InFlight, Attempt: 1}, true},
		{"pending at the end of its lease may be taken over", dedupe.Marker{State: dedupe.StatePending, LeaseUntil: now, Attempt: 1}, dedupe.Result{}, false},
		{"released may be taken over", dedupe.Marker{State: dedupe.StateFailed, Attempt: 1}, dedupe.Result{}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, done := dedupe.Decide(tc.cur, now)
			if done != tc.wantDone {
				t.Fatalf("Decide done = %v, want %v", done, tc.wantDone)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Decide (-want, +got):\n%s", diff)
			}
		})
	}
}
