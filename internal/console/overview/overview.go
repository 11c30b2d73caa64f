package overview

import (
	"context"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/wapipe/wapipe/internal/console/page"
	"github.com/wapipe/wapipe/internal/console/tenants"
	"github.com/wapipe/wapipe/internal/health"
	"github.com/wapipe/wapipe/internal/store"
)

// HealthChecker computes the health report; *health.Checker implements it.
type HealthChecker interface {
	Check(ctx context.Context) (health.Report, error)
}

// SendSeries reads the last hour's sends for the chart; *store.Outbound implements it.
type SendSeries interface {
	SentSince(ctx context.Context, since time.Time, limit int) ([]store.SentPoint, error)
}

// maxChartPoints caps the sends the chart reads: beyond it the chart shows the earliest ones
// only, and says so.
const maxChartPoints = 5000

// overviewData is the overview's content, which the live fragment redraws.
type overviewData struct {
	Report      health.Report
	ReportError string
	QueueNames  []string
	Chart       chart
	ChartError  string
	Attention   []tenantAttention
	TenantError string
	// Tenants are the tenants' send queues: backlog and pause, per tenant.
	Tenants []tenants.Row
}

// tenantAttention is a tenant an operator must look at: it has no working token (none set yet,
// or one that needs renewing), its quota is used up, or Meta restricted its account.
type tenantAttention struct {
	ID, Name    string
	AuthStatus  string
	NeedsReauth bool
	AuthError   string
	OverQuota   bool
	Used, Quota int
	// Restricted is what Meta said when it restricted the tenant's account; "" when it did not.
	Restricted string
}

func (s *Server) handleOverview() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d := s.overview(r.Context())
		s.kit.Render(w, r, http.StatusOK, "overview", "", page.View{Title: "Overview", Nav: "overview", Flash: s.kit.Flash(r), Data: d})
	})
}

// handleOverviewLive is the fragment htmx polls to keep the overview current.
func (s *Server) handleOverviewLive() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d := s.overview(r.Context())
		s.kit.Render(w, r, http.StatusOK, "overview", "live", page.View{Data: d})
	})
}

// overview gathers the report, the chart and the tenants concurrently; a part that fails is
// shown as failed, the others still are.
func (s *Server) overview(ctx context.Context) overviewData {
	var d overviewData
	now := s.deps.Now()
	var wg sync.WaitGroup
	wg.Go(func() {
		rep, err := s.deps.Health.Check(ctx)
		d.Report = rep
		if err != nil {
			// The report says failing with the reason; the page says which part failed too.
			page.Logger(ctx).Warn("health report incomplete", "event", "console_health_failed", "error", err)
			d.ReportError = "part of the report could not be read (see its reason)"
		}
		for q := range rep.Queues {
			d.QueueNames = append(d.QueueNames, q)
		}
		sort.Strings(d.QueueNames)
	})
	wg.Go(func() {
		pts, err := s.deps.Sends.SentSince(ctx, now.Add(-time.Hour), maxChartPoints)
		if err != nil {
			page.Logger(ctx).Warn("read the last hour's sends", "event", "console_chart_failed", "error", err)
			d.ChartError = page.UserMessage(err)
			return
		}
		d.Chart = buildChart(now, pts, len(pts) >= maxChartPoints)
	})
	wg.Go(func() {
		rows, err := s.deps.Tenants.Rows(ctx, now, true)
		if err != nil {
			page.Logger(ctx).Warn("list tenants", "event", "console_tenants_failed", "error", err)
			d.TenantError = page.UserMessage(err)
			return
		}
		d.Tenants = rows
		for _, t := range rows {
			over := t.Limited && t.UsageErr == "" && t.Used >= t.Quota
			// Whatever the Tenants page shows in red (needs_reauth, no_token) needs attention.
			if t.AuthStatus != store.AuthOK || over || t.Account.Restricted {
				a := tenantAttention{ID: t.ID, Name: t.Name, AuthStatus: t.AuthStatus,
					NeedsReauth: t.AuthStatus == store.AuthNeedsReauth, AuthError: t.AuthLastError,
					OverQuota: over, Used: t.Used, Quota: t.Quota}
				if t.Account.Restricted {
					a.Restricted = t.Account.String()
				}
				d.Attention = append(d.Attention, a)
			}
		}
	})
	wg.Wait()
	return d
}
