package tenants

import (
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/wapipe/wapipe/internal/console/page"
	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/internal/operator"
)

// Deps are the tenant pages' dependencies.
type Deps struct {
	Tenants TenantReader
	Usage   UsageReader
	Queues  QueueStatser
	// Templates lists the tenants' templates (templates.go); the page says "not available" when nil.
	Templates TemplateLister
	// APIKeys lists and revokes the tenants' API keys (apikeys.go); the page says "not
	// available" when nil.
	APIKeys operator.APIKeyAdmin
	// Members lists and removes the members who joined a tenant by invite (members.go); the
	// tenant page says "not available" when nil.
	Members MemberAdmin
	// LinkMaker makes a tenant's Embedded Signup link (Reconnect).
	LinkMaker LinkMaker
	// Contacts finds the file members whose BSUID is unknown; none are marked when nil.
	Contacts page.ContactFinder
	// Hasher keys the refs that name invited members in the Remove form.
	Hasher *logging.Hasher
	Now    func() time.Time
}

// Server serves the tenants, each tenant's page (settings, usage, members, templates,
// Reconnect) and its API keys.
type Server struct {
	kit  *page.Kit
	deps Deps
}

// New returns the tenant pages over deps, rendering with kit.
func New(kit *page.Kit, deps Deps) *Server { return &Server{kit: kit, deps: deps} }

// Routes adds the tenant pages' routes to r: pages are GETs, actions POSTs behind the CSRF guard.
func (s *Server) Routes(r chi.Router) {
	r.Method(http.MethodGet, "/tenants", s.handleTenants())
	r.Method(http.MethodGet, "/tenants/{tenant}", s.handleTenant())
	r.Method(http.MethodPost, "/tenants/{tenant}/reconnect", s.kit.Protect(s.handleReconnect()))
	r.Method(http.MethodPost, "/tenants/{tenant}/members/remove", s.kit.Protect(s.handleRemoveMember()))
	r.Mount("/tenants/{tenant}/api-keys", s.apiKeysRoutes())
}
