package console

import (
	"context"
	"embed"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/wapipe/wapipe/internal/console/failures"
	"github.com/wapipe/wapipe/internal/console/inbox"
	"github.com/wapipe/wapipe/internal/console/overview"
	"github.com/wapipe/wapipe/internal/console/page"
	"github.com/wapipe/wapipe/internal/console/tenants"
	"github.com/wapipe/wapipe/internal/httpserver"
	"github.com/wapipe/wapipe/internal/keyedid"
	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/internal/operator"
)

//go:embed static
var staticFS embed.FS

//go:embed templates
var templateFS embed.FS

// Deps are the console's dependencies: each room's (overview, tenants, inbox, failures), and
// who may ask. NewDeps builds the real ones; tests give fakes.
type Deps struct {
	Health        overview.HealthChecker
	Sends         overview.SendSeries
	Tenants       tenants.TenantReader
	Usage         tenants.UsageReader
	Queues        tenants.QueueStatser
	Conversations inbox.Conversations
	// Actions reads the actions a conversation ran and their answers; the page shows none when nil.
	Actions inbox.ActionReader
	// Preferences reads the contacts' marketing preferences; the page shows none when nil.
	Preferences inbox.PreferenceReader
	// Templates lists the tenants' templates; the page says "not available" when nil.
	Templates   tenants.TemplateLister
	Outbound    inbox.OutboundReader
	DeadLetters failures.DeadLetterReader
	Replayer    failures.Replayer
	Inspector   failures.Inspector
	Audit       page.AuditLog
	// APIKeys lists and revokes the tenants' API keys; the page says "not available" when nil.
	APIKeys operator.APIKeyAdmin
	// Members lists and removes the members who joined a tenant by invite; the tenant page says
	// "not available" when nil.
	Members tenants.MemberAdmin
	// Replier sends an operator's reply; LinkMaker makes a tenant's Embedded Signup link.
	// NotAvailable stands in for either when it is not wired.
	Replier   inbox.Replier
	LinkMaker tenants.LinkMaker
	Logger    *slog.Logger
	// Hasher keys the refs of phone numbers the pages and logs carry (LOG_HASH_KEY); the dev
	// key when nil.
	Hasher *logging.Hasher
	// Keyer makes the keyed ids of people and replies (LOG_HASH_KEY's); the dev key's when nil.
	Keyer *keyedid.Keyer
	// Contacts finds a tenant's contacts by any identifier: the searches by number or BSUID, the
	// failures' conversations, a conversation's contact (how it is shown and answered), the file
	// members whose BSUID is unknown. When nil, none are found and a conversation shows what it
	// recorded of its contact.
	Contacts page.ContactFinder
	// Now is time.Now when nil.
	Now func() time.Time
	// Worker calls the worker's tenant routes: a message's image. Without it, the page shows
	// no images.
	Worker inbox.WorkerCaller
	// Identity verifies who the operator is; with none, every request is refused (401).
	Identity Authenticator
	// Hosts are the host names the console answers; the zero policy refuses every request (421).
	Hosts HostPolicy
}

// room is one group of pages the console mounts.
type room interface{ Routes(r chi.Router) }

// Server is the console's HTTP server: the rooms behind the host, operator and CSRF checks.
type Server struct {
	deps  Deps
	kit   *page.Kit
	rooms []room
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
	kit := &page.Kit{Pages: page.MustParse(templateFS), Audit: deps.Audit, Now: deps.Now}
	ts := tenants.New(kit, tenants.Deps{Tenants: deps.Tenants, Usage: deps.Usage, Queues: deps.Queues, Templates: deps.Templates,
		APIKeys: deps.APIKeys, Members: deps.Members, LinkMaker: deps.LinkMaker, Contacts: deps.Contacts, Hasher: deps.Hasher, Now: deps.Now})
	return &Server{deps: deps, kit: kit, rooms: []room{
		overview.New(kit, overview.Deps{Health: deps.Health, Sends: deps.Sends, Tenants: ts, Now: deps.Now}),
		ts,
		inbox.New(kit, inbox.Deps{Tenants: deps.Tenants, Conversations: deps.Conversations, Outbound: deps.Outbound,
			Actions: deps.Actions, Preferences: deps.Preferences, Contacts: deps.Contacts, Replier: deps.Replier,
			Worker: deps.Worker, Now: deps.Now}),
		failures.New(kit, failures.Deps{Tenants: deps.Tenants, Outbound: deps.Outbound, DeadLetters: deps.DeadLetters,
			Replayer: deps.Replayer, Inspector: deps.Inspector, Contacts: deps.Contacts, Keyer: deps.Keyer, Hasher: deps.Hasher}),
	}}
}

// Routes returns the console's handler: pages are GETs, actions POSTs behind cross-origin
// protection and the CSRF token.
func (s *Server) Routes() http.Handler {
	r := chi.NewRouter()
	r.Use(s.withHost, s.withOperator, page.WithCSRFCookie)
	r.Get(healthPath, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, "ok")
	})
	static, _ := fs.Sub(staticFS, "static")
	r.Handle("/static/*", http.StripPrefix("/static/", cacheStatic(http.FileServerFS(static))))
	for _, room := range s.rooms {
		room.Routes(r)
	}
	r.NotFound(func(w http.ResponseWriter, r *http.Request) {
		s.kit.RenderError(w, r, http.StatusNotFound, "No such page.")
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

// NotAvailable stands in for the Replier and the LinkMaker when the send path or connect links
// are not wired into the console: every call fails with page.ErrNotAvailable.
type NotAvailable struct{}

// Reply fails with page.ErrNotAvailable.
func (NotAvailable) Reply(context.Context, inbox.ReplyRequest) (inbox.ReplyResult, error) {
	return inbox.ReplyResult{}, page.ErrNotAvailable
}

// ConnectLink fails with page.ErrNotAvailable.
func (NotAvailable) ConnectLink(context.Context, string) (string, error) {
	return "", page.ErrNotAvailable
}
