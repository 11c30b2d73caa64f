package store_test

import (
	"testing"
	"time"

	"github.com/wapipe/wapipe/internal/store"
)

// TestDefaultTTLCoversMetaRedeliveries: Meta redelivers an unacknowledged event for up to 7 days,
// so a marker must live at least that long by default.
func TestDefaultTTLCoversMetaRedeliveries(t *testing.T) {
	t.Parallel()
	if store.DefaultMarkerTTL < 7*24*time.Hour {
		t.Errorf("DefaultTTL = %s, want at least 7 days", store.DefaultMarkerTTL)
	}
}
