package overview

import (
	"context"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/wapipe/wapipe/internal/console/page"
	"github.com/wapipe/wapipe/internal/console/tenants"
)

// TenantRows lists the tenants with their usage and send queues; *tenants.Server implements it.
type TenantRows interface {
	Rows(ctx context.Context, now time.Time, queues bool) ([]tenants.Row, error)
}

// Deps are the overview's dependencies.
type Deps struct {
	Health  HealthChecker
	Sends   SendSeries
	Tenants TenantRows
	Now     func() time.Time
}

// Server serves the overview, the console's front page, and the fragment that keeps it current.
type Server struct {
	kit  *page.Kit
	deps Deps
}

// New returns the overview over deps, rendering with kit.
func New(kit *page.Kit, deps Deps) *Server { return &Server{kit: kit, deps: deps} }

// Routes adds the overview's routes to r.
func (s *Server) Routes(r chi.Router) {
	r.Method(http.MethodGet, "/", s.handleOverview())
	r.Method(http.MethodGet, "/overview/live", s.handleOverviewLive())
}
