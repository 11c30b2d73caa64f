package store_test

import (
	"testing"
	"time"

	"github.com/wapipe/wapipe/internal/store"
)

// TestWindowOpen: the window is open for 24 hours after the contact's last message, closed from
// the 24th hour on, and closed for a contact who never wrote.
func TestWindowOpen(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name        string
		lastInbound time.Time
		want        bool
	}{
		{"never wrote", time.Time{}, false},
		{"a minute ago", now.Add(-time.Minute), true},
		{"just under 24 hours ago", now.Add(-store.CustomerServiceWindow + time.Second), true},
		{"exactly 24 hours ago", now.Add(-store.CustomerServiceWindow), false},
		{"25 hours ago", now.Add(-25 * time.Hour), false},
	} {
		if got := store.WindowOpen(tc.lastInbound, now); got != tc.want {
			t.Errorf("%s: WindowOpen = %v, want %v", tc.name, got, tc.want)
		}
	}
}
