package failures

import (
	"context"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/wapipe/wapipe/internal/console/page"
	"github.com/wapipe/wapipe/internal/keyedid"
	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/internal/store"
)

// TenantLister lists the tenants (which owns which number, their auth status); *store.Tenants
// implements it.
type TenantLister interface {
	List(ctx context.Context) ([]store.TenantRecord, error)
}

// OutboundReader reads the outbound records a replay would send; *store.Outbound implements it.
type OutboundReader interface {
	GetOutbounds(ctx context.Context, keys []string) (map[string]store.OutboundRecord, error)
}

// Deps are the failures pages' dependencies.
type Deps struct {
	Tenants     TenantLister
	Outbound    OutboundReader
	DeadLetters DeadLetterReader
	Replayer    Replayer
	Inspector   Inspector
	// Contacts finds the dead letters' conversations; none are linked when nil.
	Contacts page.ContactFinder
	// Keyer finds the record a replay of an action's result would send; Hasher makes the keyed
	// event refs the inspect links carry.
	Keyer  *keyedid.Keyer
	Hasher *logging.Hasher
}

// Server serves the dead letters with their replay, and the search that wapipe inspect does.
type Server struct {
	kit  *page.Kit
	deps Deps
}

// New returns the failures pages over deps, rendering with kit.
func New(kit *page.Kit, deps Deps) *Server { return &Server{kit: kit, deps: deps} }

// Routes adds the failures pages' routes to r: pages are GETs, actions and searches POSTs behind
// the CSRF guard.
func (s *Server) Routes(r chi.Router) {
	r.Method(http.MethodGet, "/failures", s.handleFailures())
	r.Method(http.MethodPost, "/failures/{deadletter}/replay", s.kit.Protect(s.handleReplay()))
	r.Method(http.MethodGet, "/search", s.handleSearch())
	r.Method(http.MethodPost, "/search", s.kit.Protect(s.handleSearch()))
}
