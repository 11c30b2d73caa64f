package tenantcalls

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/wapipe/wapipe/internal/delivery"
	"github.com/wapipe/wapipe/internal/graph"
	"github.com/wapipe/wapipe/internal/httpserver"
	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/internal/media"
	"github.com/wapipe/wapipe/internal/refusal"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/tenantroutes"
)

// TokenOpener opens a tenant's access token, or says why it cannot (delivery's reasons: no such
// tenant, no token, a token that cannot be opened); *delivery.Deliverer implements it.
type TokenOpener interface {
	TenantToken(ctx context.Context, tenantID string) (rec store.TenantRecord, token, reason string, err error)
}

// RefusalMarker is told that Graph refused rec's token on a tenant route: it marks the tenant
// needs_reauth and parks its sends, as a refused send does; *delivery.Deliverer implements it.
type RefusalMarker interface {
	TokenRefused(ctx context.Context, rec store.TenantRecord, authErr error) error
}

// MediaCopier streams a media file (media.Fetcher).
type MediaCopier interface {
	Copy(ctx context.Context, token, mediaID string, w io.Writer, head func(media.Head)) (int64, error)
}

// Deps are the tenant routes' dependencies, all required (NewDeps builds them).
type Deps struct {
	Tokens   TokenOpener
	Refusals RefusalMarker
	// Templates records the tenants' templates and TemplateAPI calls Graph for them.
	Templates   TemplateStore
	TemplateAPI TemplateAPI
	// Uploads streams files to Graph's upload; MediaFiles streams Graph's files to the console.
	Uploads    MediaUploader
	MediaFiles MediaCopier
	// Now is the time of a listing or a creation; time.Now when nil.
	Now func() time.Time
}

// Server serves the tenant routes.
type Server struct {
	deps Deps
}

// New returns the tenant routes' server. A missing dependency is a wiring defect: it panics.
func New(deps Deps) *Server {
	if deps.Tokens == nil || deps.Refusals == nil || deps.Templates == nil || deps.TemplateAPI == nil ||
		deps.Uploads == nil || deps.MediaFiles == nil {
		panic("tenantcalls.New: Tokens, Refusals, Templates, TemplateAPI, Uploads and MediaFiles are required")
	}
	if deps.Now == nil {
		deps.Now = time.Now
	}
	return &Server{deps: deps}
}

// Routes returns the tenant routes, patterns relative to tenantroutes.Prefix, where the worker mounts
// them behind its admission.
func (s *Server) Routes() http.Handler {
	r := chi.NewRouter()
	for _, c := range []struct {
		route   tenantroutes.Route
		handler http.HandlerFunc
	}{
		{tenantroutes.MediaCopy, s.handleMediaCopy},
		{tenantroutes.ListTemplates, s.handleTemplatesList},   // templates.go
		{tenantroutes.CreateTemplate, s.handleTemplateCreate}, // templates.go
		{tenantroutes.DeleteTemplate, s.handleTemplateDelete}, // templates.go
		{tenantroutes.Upload, s.handleUpload},                 // upload.go
	} {
		r.Method(c.route.Method, c.route.Pattern, c.handler)
	}
	return r
}

// writeError answers err: a route's refusal (a *refusal.Error with its status) as it says,
// anything else as 503 unavailable (the caller may try again; the detail is logged, never sent).
func writeError(ctx context.Context, w http.ResponseWriter, err error) {
	ce, ok := refusal.As(err)
	if !ok || ce.Status == 0 {
		logging.FromContext(ctx).ErrorContext(ctx, "tenant call failed", "event", "tenant_call_failed", "error", err)
		ce = refusal.WithStatus(http.StatusServiceUnavailable, refusal.Unavailable, "try again later")
	}
	httpserver.WriteJSON(w, ce.Status, refusal.Body{Error: ce})
}

// tenantToken opens the access token of the route's tenant, or says why it cannot.
func (s *Server) tenantToken(ctx context.Context, tenantID string) (store.TenantRecord, string, error) {
	rec, token, reason, err := s.deps.Tokens.TenantToken(ctx, tenantID)
	switch {
	case reason == delivery.ReasonTenantNotFound:
		return rec, "", refusal.WithStatus(http.StatusNotFound, refusal.NotFound, "no such tenant")
	case reason == delivery.ReasonNoToken || reason == delivery.ReasonTokenUnreadable:
		return rec, "", refusal.WithStatus(http.StatusConflict, refusal.NoToken, "the tenant has no usable access token")
	case err != nil:
		return rec, "", err
	case rec.AuthStatus == store.AuthNeedsReauth:
		return rec, "", refusal.WithStatus(http.StatusConflict, refusal.ReauthRequired, "the tenant's access token was refused by Meta: reconnect it")
	}
	return rec, token, nil
}

// tokenRefused marks rec's tenant needs_reauth after Graph refused its token on a tenant route,
// as a refused send does; a failure to mark is logged (the caller is answered 409 either way, and
// the tenant's next send meets the refusal again).
func (s *Server) tokenRefused(ctx context.Context, rec store.TenantRecord, err error) {
	if merr := s.deps.Refusals.TokenRefused(ctx, rec, err); merr != nil {
		logging.FromContext(ctx).WarnContext(ctx, "tenant not marked needs_reauth", "event", "tenant_reauth_mark_failed", "error", merr)
	}
}

// graphFailed is the refusal a tenant route answers for a failed Graph call of rec's tenant
// (graphCallError), after marking the tenant needs_reauth when Graph refused its token.
func (s *Server) graphFailed(ctx context.Context, rec store.TenantRecord, err error) error {
	if graph.Classify(err) == graph.Auth {
		s.tokenRefused(ctx, rec, err)
	}
	return graphCallError(err)
}

// handleMediaCopy answers GET /internal/tenants/{tenant_id}/media/{media_id}: the file, fetched
// from Graph with the tenant's token and streamed through, never stored (the console's view of a
// message's image).
func (s *Server) handleMediaCopy(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	tenantID, mediaID := chi.URLParam(r, "tenant_id"), chi.URLParam(r, "media_id")
	ctx, logger := logging.With(ctx, "tenant_id", tenantID)
	rec, token, err := s.tenantToken(ctx, tenantID)
	if err != nil {
		writeError(ctx, w, err)
		return
	}
	started := false
	n, err := s.deps.MediaFiles.Copy(ctx, token, mediaID, w, func(h media.Head) {
		started = true
		w.Header().Set("Content-Type", h.MIMEType)
		if h.Size > 0 {
			w.Header().Set("Content-Length", strconv.FormatInt(h.Size, 10))
		}
		// A file a contact sent: the browser must not run it, and no cache may keep it.
		httpserver.SetSecurityHeaders(w.Header(), httpserver.ContactFile)
		w.WriteHeader(http.StatusOK)
	})
	switch {
	case err == nil:
		logger.InfoContext(ctx, "media copied", "event", "media_copied", "size", n)
	case started:
		// The status is out: the caller sees a short body.
		logger.WarnContext(ctx, "media copy broke off", "event", "media_copy_failed", "size", n, "error", err)
	case errors.Is(err, media.ErrTooLarge):
		writeError(ctx, w, refusal.WithStatus(http.StatusRequestEntityTooLarge, refusal.MediaTooLarge, "the file is larger than MEDIA_MAX_BYTES"))
	case errors.Is(err, media.ErrAuth):
		s.tokenRefused(ctx, rec, err)
		writeError(ctx, w, refusal.WithStatus(http.StatusConflict, refusal.ReauthRequired, "Meta refused the tenant's access token"))
	case errors.Is(err, media.ErrGone):
		writeError(ctx, w, refusal.WithStatus(http.StatusNotFound, refusal.MediaGone, "Meta no longer has this file"))
	default:
		writeError(ctx, w, err)
	}
}
