package overview

import (
	"strings"
	"testing"
	"time"

	"github.com/wapipe/wapipe/internal/store"
)

// TestChartLeavesEmptyBucketsOut: the p95 line is broken where a bucket has no sends; a lone
// bucket between gaps is a dot.
func TestChartLeavesEmptyBucketsOut(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	at := func(minutesAgo int, ms int64) store.SentPoint {
		return store.SentPoint{SentAt: now.Add(-time.Duration(minutesAgo)*time.Minute + time.Second), LatencyMS: ms}
	}
	// Buckets 0 and 1 (60–50 minutes ago), then 5 alone, then nothing.
	c := buildChart(now, []store.SentPoint{at(59, 100), at(54, 200), at(34, 300)}, false)
	if len(c.Lines) != 1 || strings.Count(c.Lines[0], ",") != 2 {
		t.Errorf("lines = %q, want one through the two first buckets", c.Lines)
	}
	if len(c.Dots) != 1 {
		t.Errorf("dots = %v, want one for the lone bucket", c.Dots)
	}
	if empty := buildChart(now, nil, false); len(empty.Lines)+len(empty.Dots) != 0 {
		t.Errorf("an empty hour draws %v %v", empty.Lines, empty.Dots)
	}
}
