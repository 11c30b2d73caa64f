package inbox

import (
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/wapipe/wapipe/internal/console/page"
)

// Deps are the inbox's dependencies.
type Deps struct {
	Tenants       page.TenantGetter
	Conversations Conversations
	Outbound      OutboundReader
	// Actions reads the actions a conversation ran and their answers; the page shows none when nil.
	Actions ActionReader
	// Preferences reads the contacts' marketing preferences; the page shows none when nil.
	Preferences PreferenceReader
	// Contacts finds a tenant's contacts by any identifier: the searches by number or BSUID, a
	// conversation's contact (how it is shown and answered). When nil, none are found and a
	// conversation shows what it recorded of its contact.
	Contacts page.ContactFinder
	// Replier sends an operator's reply.
	Replier Replier
	// Worker calls the worker's tenant routes: a message's image (media.go). Without it, the
	// page shows no images.
	Worker WorkerCaller
	Now    func() time.Time
}

// Server serves a tenant's inbox, its conversations, the operator's actions on them and their
// images.
type Server struct {
	kit  *page.Kit
	deps Deps
}

// New returns the inbox over deps, rendering with kit.
func New(kit *page.Kit, deps Deps) *Server { return &Server{kit: kit, deps: deps} }

// Routes adds the inbox's routes to r: pages are GETs, actions POSTs behind the CSRF guard.
func (s *Server) Routes(r chi.Router) {
	r.Method(http.MethodGet, "/tenants/{tenant}/inbox", s.handleInbox())
	r.Method(http.MethodGet, "/tenants/{tenant}/inbox/list", s.handleInboxList())
	r.Method(http.MethodPost, "/tenants/{tenant}/inbox/search", s.kit.Protect(s.handleInboxSearch()))
	r.Method(http.MethodGet, "/conversations/{conversation}", s.handleConversation())
	r.Method(http.MethodGet, "/conversations/{conversation}/live", s.handleConversationLive())
	r.Method(http.MethodPost, "/conversations/{conversation}/reply", s.kit.Protect(s.handleReply()))
	r.Method(http.MethodPost, "/conversations/{conversation}/request-phone", s.kit.Protect(s.handleRequestPhone()))
	r.Method(http.MethodPost, "/conversations/{conversation}/assign", s.kit.Protect(s.handleAssign()))
	r.Method(http.MethodPost, "/conversations/{conversation}/handback", s.kit.Protect(s.handleHandBack()))
	r.Method(http.MethodPost, "/conversations/{conversation}/close", s.kit.Protect(s.handleClose()))
	r.Method(http.MethodGet, "/media/{tenant_id}/{media_id}", s.handleMedia()) // media.go
}
