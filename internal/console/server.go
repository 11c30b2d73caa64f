package console

import (
	"context"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/wapipe/wapipe/internal/httpserver"
	"github.com/wapipe/wapipe/internal/keyedid"
	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/internal/operator"
)

// Deps are the console's dependencies. NewDeps builds the real ones; tests give fakes.
type Deps struct {
	Health        HealthChecker
	Sends         SendSeries
	Tenants       TenantReader
	Usage         UsageReader
	Queues        QueueStatser
	Conversations Conversations
	// Actions reads the actions a conversation ran and their answers; the page shows none when nil.
	Actions ActionReader
	// Preferences reads the contacts' marketing preferences; the page shows none when nil.
	Preferences PreferenceReader
	// Templates lists the tenants' templates (templates.go); the page says "not available" when nil.
	Templates   TemplateLister
	Outbound    OutboundReader
	DeadLetters DeadLetterReader
	Replayer    Replayer
	Inspector   Inspector
	Audit       AuditLog
	// APIKeys lists and revokes the tenants' API keys (apikeys.go); the page says "not
	// available" when nil.
	APIKeys operator.APIKeyAdmin
	// Members lists and removes the members who joined a tenant by invite (members.go); the
	// tenant page says "not available" when nil.
	Members MemberAdmin
	// Replier sends an operator's reply; LinkMaker makes a tenant's Embedded Signup link. Both
	// belong to the api service's code: NotAvailable stands in until they are wired.
	Replier   Replier
	LinkMaker LinkMaker
	Logger    *slog.Logger
	// Hasher keys the refs of phone numbers the pages and logs carry (LOG_HASH_KEY); the dev
	// key when nil.
	Hasher *logging.Hasher
	// Keyer makes the keyed ids of people and replies (LOG_HASH_KEY's); the dev key's when nil.
	Keyer *keyedid.Keyer
	// Contacts finds a tenant's contacts by any identifier (contacts.go): the searches by number
	// or BSUID, the failures' conversations, a conversation's contact (how it is shown and
	// answered), the file members whose BSUID is unknown. When nil, none are found and a
	// conversation shows what it recorded of its contact.
	Contacts ContactFinder
	// Now is time.Now when nil.
	Now func() time.Time
	// Worker calls the worker's tenant routes: a message's image (media.go). Without it, the
	// page shows no images.
	Worker WorkerCaller
	// Identity verifies who the operator is; with none, every request is refused (401).
	Identity Authenticator
	// Hosts are the host names the console answers; the zero policy refuses every request (421).
	Hosts HostPolicy
}

// Server is the console's HTTP server.
type Server struct {
	deps  Deps
	pages *pages
}

// NewServer returns the console over deps. It panics when the embedded templates do not parse,
// which the package's tests rule out.
func NewServer(deps Deps) *Server {
	if deps.Now == nil {
		deps.Now = time.Now
	}
	if deps.Logger == nil {
		deps.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if deps.Hasher == nil {
		deps.Hasher = logging.DevHasher()
	}
	if deps.Keyer == nil {
		deps.Keyer = keyedid.Dev()
	}
	if deps.Replier == nil {
		deps.Replier = NotAvailable{}
	}
	if deps.LinkMaker == nil {
		deps.LinkMaker = NotAvailable{}
	}
	return &Server{deps: deps, pages: mustParsePages()}
}

// Routes returns the console's handler: pages are GETs, actions POSTs behind cross-origin
// protection and the CSRF token.
func (s *Server) Routes() http.Handler {
	r := chi.NewRouter()
	r.Use(s.withHost, s.withOperator, s.withCSRFCookie)
	r.Get(healthPath, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, "ok")
	})
	static, _ := fs.Sub(staticFS, "static")
	r.Handle("/static/*", http.StripPrefix("/static/", cacheStatic(http.FileServerFS(static))))

	r.Method(http.MethodGet, "/", s.handleOverview())
	r.Method(http.MethodGet, "/overview/live", s.handleOverviewLive())
	r.Method(http.MethodGet, "/tenants", s.handleTenants())
	r.Method(http.MethodGet, "/tenants/{tenant}", s.handleTenant())
	r.Method(http.MethodPost, "/tenants/{tenant}/reconnect", s.protect(s.handleReconnect()))
	r.Method(http.MethodPost, "/tenants/{tenant}/members/remove", s.protect(s.handleRemoveMember()))
	r.Method(http.MethodGet, "/tenants/{tenant}/inbox", s.handleInbox())
	r.Method(http.MethodGet, "/tenants/{tenant}/inbox/list", s.handleInboxList())
	r.Method(http.MethodPost, "/tenants/{tenant}/inbox/search", s.protect(s.handleInboxSearch()))
	r.Mount("/tenants/{tenant}/api-keys", s.apiKeysRoutes())
	r.Method(http.MethodGet, "/conversations/{conversation}", s.handleConversation())
	r.Method(http.MethodGet, "/conversations/{conversation}/live", s.handleConversationLive())
	r.Method(http.MethodPost, "/conversations/{conversation}/reply", s.protect(s.handleReply()))
	r.Method(http.MethodPost, "/conversations/{conversation}/request-phone", s.protect(s.handleRequestPhone()))
	r.Method(http.MethodPost, "/conversations/{conversation}/assign", s.protect(s.handleAssign()))
	r.Method(http.MethodPost, "/conversations/{conversation}/close", s.protect(s.handleClose()))
	r.Method(http.MethodGet, "/media/{tenant_id}/{media_id}", s.handleMedia()) // media.go
	r.Method(http.MethodGet, "/failures", s.handleFailures())
	r.Method(http.MethodPost, "/failures/{deadletter}/replay", s.protect(s.handleReplay()))
	r.Method(http.MethodGet, "/search", s.handleSearch())
	r.Method(http.MethodPost, "/search", s.protect(s.handleSearch()))
	r.NotFound(func(w http.ResponseWriter, r *http.Request) {
		s.renderError(w, r, http.StatusNotFound, "No such page.")
	})
	return httpserver.Middleware{Service: "console", Logger: s.deps.Logger}.Wrap(r)
}

// cacheStatic lets browsers keep the embedded assets: they change only with a new binary.
func cacheStatic(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=3600")
		h.ServeHTTP(w, r)
	})
}

// logger returns the request's logger (withOperator puts it in the context).
func (s *Server) logger(ctx context.Context) *slog.Logger { return logging.FromContext(ctx) }
