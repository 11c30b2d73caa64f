package tenants

import (
	"context"
	"slices"
	"strconv"
	"time"

	"github.com/wapipe/wapipe/internal/console/page"
	"github.com/wapipe/wapipe/internal/tenant"
	"github.com/wapipe/wapipe/internal/usage"
	"github.com/wapipe/wapipe/pricing"
)

// moneyView is the tenant's month in money (GET /v1/usage's report) and its days as a chart.
type moneyView struct {
	Report usage.Report
	// Categories are the report's Meta categories, sorted, for a stable table.
	Categories []string
	Chart      moneyChart
	Err        string
}

// The chart's geometry, in SVG user units.
const (
	moneyW, moneyH = 620.0, 150.0
	moneyPadL      = 50.0
	moneyPadB      = 20.0
)

// moneyChart is the month's days as stacked bars: Meta's messages below, the model above.
type moneyChart struct {
	Width, Height float64
	Bars          []moneyBar
	Labels        []chartLabel
	// Max is the tallest day's total, the chart's scale.
	Max string
}

type moneyBar struct {
	X, W           float64
	MetaY, MetaH   float64
	LLMY, LLMH     float64
	Day, Meta, LLM string
}

type chartLabel struct {
	X    float64
	Text string
}

// moneyOf reads tenant t's month of period and lays out its chart.
func (s *Server) moneyOf(ctx context.Context, t *tenant.Tenant, period string) moneyView {
	l, err := s.deps.Usage.Ledger(ctx, t.ID, period)
	if err != nil {
		page.Logger(ctx).Warn("read the ledger", "event", "console_usage_failed", "tenant_id", t.ID, "error", err)
		return moneyView{Err: "unavailable"}
	}
	v := moneyView{Report: usage.Build(l, t)}
	for c := range v.Report.Meta.ByCategory {
		v.Categories = append(v.Categories, c)
	}
	slices.Sort(v.Categories)
	start, err := time.Parse("2006-01", period)
	if err != nil {
		return v
	}
	days := start.AddDate(0, 1, -1).Day()
	var top pricing.Amount
	for _, d := range l.Days {
		top = max(top, d.Meta+d.LLM)
	}
	c := moneyChart{Width: moneyW, Height: moneyH, Max: top.Round(2)}
	w := (moneyW - moneyPadL) / float64(days)
	scale := func(a pricing.Amount) float64 {
		if top == 0 {
			return 0
		}
		return float64(a) / float64(top) * (moneyH - moneyPadB - 10)
	}
	base := moneyH - moneyPadB
	for i := 1; i <= days; i++ {
		key := start.AddDate(0, 0, i-1).Format("02")
		d := l.Days[key]
		mh, lh := scale(d.Meta), scale(d.LLM)
		x := moneyPadL + float64(i-1)*w
		c.Bars = append(c.Bars, moneyBar{X: x + 1, W: w - 2, MetaY: base - mh, MetaH: mh, LLMY: base - mh - lh, LLMH: lh,
			Day: period + "-" + key, Meta: d.Meta.String(), LLM: d.LLM.String()})
		if i == 1 || i%5 == 0 {
			c.Labels = append(c.Labels, chartLabel{X: x, Text: strconv.Itoa(i)})
		}
	}
	v.Chart = c
	return v
}
