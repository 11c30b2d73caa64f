package worker

import (
	"context"
	"errors"
	"io"
	"net/http"
	"slices"
	"strconv"

	"github.com/go-chi/chi/v5"

	"github.com/wapipe/wapipe/internal/delivery"
	"github.com/wapipe/wapipe/internal/graph"
	"github.com/wapipe/wapipe/internal/httpjson"
	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/internal/media"
	"github.com/wapipe/wapipe/internal/store"
)

// The tenant routes (/internal/tenants/{tenant_id}/…) are the Graph calls the api and the
// console need answered at once and that take a tenant's access token: only the worker may open
// one (its service account alone can decrypt), so the public api and the console ask it. They
// are called directly with the caller's ID token, never through Cloud Tasks, and answer
// {"error":{"code","message"}} as the api does, so a caller can pass a refusal on as it is.

// tenantCall is one tenant route: method and pattern under /internal/tenants/{tenant_id}.
type tenantCall struct {
	method, pattern string
	handler         http.Handler
}

// tenantCalls is the table of tenant routes.
func (s *Server) tenantCalls() []tenantCall {
	return []tenantCall{
		{http.MethodGet, "/media/{media_id}", http.HandlerFunc(s.handleMediaCopy)},
		{http.MethodGet, "/templates", http.HandlerFunc(s.handleTemplatesList)},            // templates.go
		{http.MethodPost, "/templates", http.HandlerFunc(s.handleTemplateCreate)},          // templates.go
		{http.MethodDelete, "/templates/{name}", http.HandlerFunc(s.handleTemplateDelete)}, // templates.go
		{http.MethodPost, "/media", http.HandlerFunc(s.handleUpload)},                      // upload.go
	}
}

// isInternalCaller reports whether email is a service account allowed to call tenant routes.
func (s *Server) isInternalCaller(email string) bool {
	return email != "" && slices.Contains(s.cfg.InternalCallers, email)
}

// Codes of the tenant routes' refusals, beside the api's where they mean the same.
const (
	callNotFound       = "not_found"
	callNoToken        = "no_token"
	callReauthRequired = "WHATSAPP_REAUTH_REQUIRED"
	callUnavailable    = "unavailable"
	callTooLarge       = "media_too_large"
	callGone           = "media_gone"
)

// callError is a tenant route's refusal.
type callError struct {
	status        int
	code, message string
}

func (e *callError) Error() string { return e.code + ": " + e.message }

// writeCallError answers err: a *callError as it says, anything else as 503 unavailable (the
// caller may try again; the detail is logged, never sent).
func writeCallError(ctx context.Context, w http.ResponseWriter, err error) {
	var ce *callError
	if !errors.As(err, &ce) {
		logging.FromContext(ctx).ErrorContext(ctx, "tenant call failed", "event", "tenant_call_failed", "error", err)
		ce = &callError{status: http.StatusServiceUnavailable, code: callUnavailable, message: "try again later"}
	}
	httpjson.Write(w, ce.status, map[string]any{"error": map[string]string{"code": ce.code, "message": ce.message}})
}

// tenantToken opens the access token of the route's tenant, or says why it cannot.
func (s *Server) tenantToken(ctx context.Context, tenantID string) (store.TenantRecord, string, error) {
	rec, token, reason, err := s.deliver.TenantToken(ctx, tenantID)
	switch {
	case reason == delivery.ReasonTenantNotFound:
		return rec, "", &callError{http.StatusNotFound, callNotFound, "no such tenant"}
	case reason == delivery.ReasonNoToken || reason == delivery.ReasonTokenUnreadable:
		return rec, "", &callError{http.StatusConflict, callNoToken, "the tenant has no usable access token"}
	case err != nil:
		return rec, "", err
	case rec.AuthStatus == store.AuthNeedsReauth:
		return rec, "", &callError{http.StatusConflict, callReauthRequired, "the tenant's access token was refused by Meta: reconnect it"}
	}
	return rec, token, nil
}

// tokenRefused marks rec's tenant needs_reauth after Graph refused its token on a tenant route,
// as a refused send does; a failure to mark is logged (the caller is answered 409 either way, and
// the tenant's next send meets the refusal again).
func (s *Server) tokenRefused(ctx context.Context, rec store.TenantRecord, err error) {
	if merr := s.deliver.TokenRefused(ctx, rec, err); merr != nil {
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
	if s.deps.MediaFiles == nil {
		writeCallError(ctx, w, &callError{http.StatusNotFound, callNotFound, "this worker fetches no media"})
		return
	}
	rec, token, err := s.tenantToken(ctx, tenantID)
	if err != nil {
		writeCallError(ctx, w, err)
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
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Content-Security-Policy", "sandbox")
		w.Header().Set("Cache-Control", "private, no-store")
		w.WriteHeader(http.StatusOK)
	})
	switch {
	case err == nil:
		logger.InfoContext(ctx, "media copied", "event", "media_copied", "size", n)
	case started:
		// The status is out: the caller sees a short body.
		logger.WarnContext(ctx, "media copy broke off", "event", "media_copy_failed", "size", n, "error", err)
	case errors.Is(err, media.ErrTooLarge):
		writeCallError(ctx, w, &callError{http.StatusRequestEntityTooLarge, callTooLarge, "the file is larger than MEDIA_MAX_BYTES"})
	case errors.Is(err, media.ErrAuth):
		s.tokenRefused(ctx, rec, err)
		writeCallError(ctx, w, &callError{http.StatusConflict, callReauthRequired, "Meta refused the tenant's access token"})
	case errors.Is(err, media.ErrGone):
		writeCallError(ctx, w, &callError{http.StatusNotFound, callGone, "Meta no longer has this file"})
	default:
		writeCallError(ctx, w, err)
	}
}

// MediaCopier streams a media file (media.Fetcher).
type MediaCopier interface {
	Copy(ctx context.Context, token, mediaID string, w io.Writer, head func(media.Head)) (int64, error)
}
