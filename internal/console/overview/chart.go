package overview

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/wapipe/wapipe/internal/store"
)

// The chart's geometry, in SVG user units.
const (
	chartW, chartH   = 600.0, 160.0
	chartPadL        = 40.0
	chartPadB        = 20.0
	chartBuckets     = 12
	chartBucketWidth = time.Hour / chartBuckets
)

// chart is the last hour of sends drawn as inline SVG: a bar per five minutes for throughput
// and a line through the p95 webhook-to-sent latency of the buckets that have sends.
type chart struct {
	Width, Height float64
	Bars          []chartBar
	// Lines are the p95 latency polylines' points ("x,y x,y"): one per run of buckets that
	// have sends, so no line crosses a bucket without any; Dots mark a lone bucket's p95.
	Lines    []string
	Dots     []chartDot
	MaxCount int
	MaxP95MS int64
	Total    int
	// Truncated says more sends happened than the chart read.
	Truncated bool
	Labels    []chartLabel
}

type chartBar struct {
	X, Y, W, H float64
	Count      int
	P95MS      int64
	Start      string
}

type chartDot struct{ X, Y float64 }

type chartLabel struct {
	X    float64
	Text string
}

// buildChart buckets pts (sends of the hour before now) into five-minute bars.
func buildChart(now time.Time, pts []store.SentPoint, truncated bool) chart {
	c := chart{Width: chartW, Height: chartH, Total: len(pts), Truncated: truncated}
	start := now.Add(-time.Hour)
	counts := make([]int, chartBuckets)
	lat := make([][]int64, chartBuckets)
	for _, p := range pts {
		i := int(p.SentAt.Sub(start) / chartBucketWidth)
		if i < 0 || i >= chartBuckets {
			continue
		}
		counts[i]++
		if p.LatencyMS >= 0 {
			lat[i] = append(lat[i], p.LatencyMS)
		}
	}
	p95 := make([]int64, chartBuckets)
	for i := range lat {
		p95[i] = percentile95(lat[i])
		c.MaxP95MS = max(c.MaxP95MS, p95[i])
		c.MaxCount = max(c.MaxCount, counts[i])
	}
	plotW, plotH := chartW-chartPadL, chartH-chartPadB
	bw := plotW / chartBuckets
	var run []chartDot
	flush := func() {
		switch len(run) {
		case 0:
		case 1:
			c.Dots = append(c.Dots, run[0])
		default:
			pts := make([]string, len(run))
			for j, p := range run {
				pts[j] = fmt.Sprintf("%.1f,%.1f", p.X, p.Y)
			}
			c.Lines = append(c.Lines, strings.Join(pts, " "))
		}
		run = nil
	}
	for i := range chartBuckets {
		x := chartPadL + float64(i)*bw
		h := 0.0
		if c.MaxCount > 0 {
			h = plotH * float64(counts[i]) / float64(c.MaxCount)
		}
		c.Bars = append(c.Bars, chartBar{X: x + 2, Y: plotH - h, W: bw - 4, H: h, Count: counts[i], P95MS: p95[i],
			Start: start.Add(time.Duration(i) * chartBucketWidth).UTC().Format("15:04")})
		if c.MaxP95MS > 0 && len(lat[i]) > 0 {
			run = append(run, chartDot{X: x + bw/2, Y: plotH - plotH*float64(p95[i])/float64(c.MaxP95MS)})
		} else {
			flush()
		}
		if i%3 == 0 {
			c.Labels = append(c.Labels, chartLabel{X: x, Text: start.Add(time.Duration(i) * chartBucketWidth).UTC().Format("15:04")})
		}
	}
	flush()
	return c
}

// percentile95 is the nearest-rank 95th percentile of ms (0 when empty).
func percentile95(ms []int64) int64 {
	if len(ms) == 0 {
		return 0
	}
	s := slices.Clone(ms)
	slices.Sort(s)
	rank := (95*len(s) + 99) / 100
	return s[max(rank-1, 0)]
}
