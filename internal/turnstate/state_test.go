package turnstate_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/wapipe/wapipe/internal/turnstate"
)

var t0 = time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)

// TestHitOnboarding: a non-member's replies are counted in the conversation's state: five in an
// hour, then silence until the hour is over; a redone turn counts nothing more; the input state
// is not changed.
func TestHitOnboarding(t *testing.T) {
	t.Parallel()
	st := turnstate.State{}
	var got []bool
	for i := range 8 {
		next, ok := st.HitOnboarding(fmt.Sprint("m-", i), t0.Add(time.Duration(i)*time.Minute))
		if st.Onboarding != nil && st.Onboarding.Count != i {
			t.Fatalf("message %d changed its input state", i)
		}
		st = next
		got = append(got, ok)
	}
	want := []bool{true, true, true, true, true, false, false, false}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("answered %v, want %v", got, want)
	}
	if _, ok := st.HitOnboarding("m-2", t0.Add(9*time.Minute)); !ok {
		t.Error("a redone turn of an answered message is refused")
	}
	if _, ok := st.HitOnboarding("m-9", t0.Add(turnstate.OnboardingPer)); !ok {
		t.Error("a message after the hour is refused")
	}
}
