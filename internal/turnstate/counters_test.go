package turnstate_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wapipe/wapipe/internal/tenant"
	"github.com/wapipe/wapipe/internal/turnstate"
)

func TestWindowHit(t *testing.T) {
	t.Parallel()
	l := tenant.Limit{Max: 2, Per: 30 * time.Second}
	type hit struct {
		id string
		at time.Duration
	}
	tests := []struct {
		name string
		hits []hit
		want []turnstate.RateDecision
	}{
		{"under, first over, silent over",
			[]hit{{"a", 0}, {"b", time.Second}, {"c", 2 * time.Second}, {"d", 3 * time.Second}},
			[]turnstate.RateDecision{{}, {}, {Limited: true, First: true}, {Limited: true}}},
		{"a new window opens after Per",
			[]hit{{"a", 0}, {"b", 0}, {"c", 0}, {"d", 30 * time.Second}, {"e", 31 * time.Second}, {"f", 31 * time.Second}},
			[]turnstate.RateDecision{{}, {}, {Limited: true, First: true}, {}, {}, {Limited: true, First: true}}},
		{"the window starts at its first message, not on the clock",
			[]hit{{"a", 29 * time.Second}, {"b", 31 * time.Second}, {"c", 58 * time.Second}},
			[]turnstate.RateDecision{{}, {}, {Limited: true, First: true}}},
		{"a message counted again gets its first answer",
			[]hit{{"a", 0}, {"b", 0}, {"c", 0}, {"d", 0}, {"c", time.Second}, {"a", time.Second}, {"e", time.Second}},
			[]turnstate.RateDecision{{}, {}, {Limited: true, First: true}, {Limited: true}, {Limited: true, First: true}, {}, {Limited: true}}},
		{"a message dated before the window counts in it",
			[]hit{{"a", 10 * time.Second}, {"b", 0}, {"c", 5 * time.Second}},
			[]turnstate.RateDecision{{}, {}, {Limited: true, First: true}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var w turnstate.Window
			var got []turnstate.RateDecision
			for _, h := range tt.hits {
				var d turnstate.RateDecision
				w, d = w.Hit(h.id, t0.Add(h.at), l)
				got = append(got, d)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("decisions (-want, +got):\n%s", diff)
			}
		})
	}
}

func TestWindowRemembersABoundedNumberOfMessages(t *testing.T) {
	t.Parallel()
	l := tenant.Limit{Max: 1000, Per: time.Hour}
	var w turnstate.Window
	for i := range 500 {
		w, _ = w.Hit(fmt.Sprintf("m-%d", i), t0, l)
	}
	if w.Count != 500 || len(w.Recent) > 32 {
		t.Errorf("count %d, recent %d; want 500 and at most 32", w.Count, len(w.Recent))
	}
	again, _ := w.Hit("m-499", t0, l)
	if diff := cmp.Diff(w, again); diff != "" {
		t.Errorf("a recent message counted twice (-before, +after):\n%s", diff)
	}
	if w2, d := (turnstate.Window{}).Hit("a", t0, tenant.Limit{}); d.Limited || w2.Count != 0 {
		t.Errorf("a zero limit limited or counted: %+v %+v", w2, d)
	}
}
