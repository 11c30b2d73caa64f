package inbox

import (
	"context"
	"errors"
	"io"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/wapipe/wapipe/internal/console/page"
	"github.com/wapipe/wapipe/internal/httpserver"
	"github.com/wapipe/wapipe/internal/refusal"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/workerclient"
)

// The console shows a message's image without holding the tenant's token or keeping the file:
// GET /media/{tenant_id}/{media_id}?c={conversation_id} asks the worker, which alone opens tenant
// tokens, to fetch it from Graph and streams the answer through. It is not an open proxy: the
// media id must be that of an image in the named conversation's messages, and the conversation
// the tenant's, before the worker is asked.

// WorkerCaller calls the worker's tenant routes; *workerclient.Client implements it. A refusal
// is a *refusal.Error.
type WorkerCaller interface {
	CopyMedia(ctx context.Context, tenantID, mediaID string) (workerclient.Media, error)
}

// imageURL is the console's URL of the image of message m in conversation c, or "" when m shows
// no image (no media id, not an image, or no worker to fetch it).
func (s *Server) imageURL(c store.Conversation, m *store.Media) string {
	if s.deps.Worker == nil || m == nil || m.ID == "" || !isImage(m.MIMEType) {
		return ""
	}
	return "/media/" + url.PathEscape(c.TenantID) + "/" + url.PathEscape(m.ID) + "?" + url.Values{"c": {c.ID}}.Encode()
}

// handleMedia answers GET /media/{tenant_id}/{media_id}?c={conversation_id}: the image, streamed
// from the worker.
func (s *Server) handleMedia() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		tenantID, mediaID := chi.URLParam(r, "tenant_id"), chi.URLParam(r, "media_id")
		ok, err := s.imageOf(ctx, tenantID, r.URL.Query().Get("c"), mediaID)
		switch {
		case err != nil && !errors.Is(err, store.ErrNotFound):
			s.kit.Fail(w, r, "Read the conversation", err)
			return
		case !ok || s.deps.Worker == nil:
			s.kit.RenderError(w, r, http.StatusNotFound, "No such image.")
			return
		}
		file, err := s.deps.Worker.CopyMedia(ctx, tenantID, mediaID)
		var refused *refusal.Error
		switch {
		case errors.As(err, &refused):
			// The worker's refusal (the file expired at Meta, the token was refused): the page
			// shows its placeholder instead.
			page.Logger(ctx).InfoContext(ctx, "image not available", "event", "console_media_failed", "tenant_id", tenantID, "status", refused.Status)
			status := http.StatusBadGateway
			if refused.Status == http.StatusNotFound {
				status = http.StatusNotFound
			}
			s.kit.RenderError(w, r, status, "The image is not available.")
			return
		case err != nil:
			page.Logger(ctx).WarnContext(ctx, "image not fetched", "event", "console_media_failed", "tenant_id", tenantID, "error", err)
			s.kit.RenderError(w, r, http.StatusBadGateway, "The image could not be fetched.")
			return
		}
		defer file.Body.Close()
		ct, ok := rasterImage(file.ContentType)
		if !ok {
			// Not a picture a browser only draws (an SVG may carry script): the placeholder.
			page.Logger(ctx).WarnContext(ctx, "media is not an image", "event", "console_media_failed", "tenant_id", tenantID)
			s.kit.RenderError(w, r, http.StatusNotFound, "The image is not available.")
			return
		}
		// A contact's file, whatever the worker says: the browser runs nothing in it and no
		// cache keeps it; only an image type is passed on.
		httpserver.SetSecurityHeaders(w.Header(), httpserver.ContactFile)
		w.Header().Set("Content-Type", ct)
		if file.ContentLength >= 0 {
			w.Header().Set("Content-Length", strconv.FormatInt(file.ContentLength, 10))
		}
		w.WriteHeader(http.StatusOK)
		if _, err := io.Copy(w, file.Body); err != nil {
			page.Logger(ctx).WarnContext(ctx, "image copy broke off", "event", "console_media_failed", "tenant_id", tenantID, "error", err)
		}
	})
}

// imageOf reports whether mediaID is an image of a message shown in conversation convID of
// tenantID.
func (s *Server) imageOf(ctx context.Context, tenantID, convID, mediaID string) (bool, error) {
	if convID == "" || mediaID == "" {
		return false, nil
	}
	c, err := s.deps.Conversations.Get(ctx, convID)
	if err != nil || c.TenantID != tenantID {
		return false, err
	}
	msgs, err := s.deps.Conversations.ListLatestMessages(ctx, convID, MessagesShown)
	if err != nil {
		return false, err
	}
	for _, m := range msgs {
		if m.Media != nil && m.Media.ID == mediaID && isImage(m.Media.MIMEType) {
			return true, nil
		}
	}
	return false, nil
}

// rasterImages are the image types the console passes on: pictures a browser only draws. An SVG
// may carry script, and anything else is no picture.
var rasterImages = []string{"image/jpeg", "image/png", "image/webp", "image/gif"}

// rasterImage is the media type of Content-Type ct, lower-cased without parameters, when it is
// one of rasterImages: types are case-insensitive, so "image/SVG+xml" is an SVG too.
func rasterImage(ct string) (string, bool) {
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil || !slices.Contains(rasterImages, mt) {
		return "", false
	}
	return mt, true
}

// isImage reports whether a stored MIME type (Meta's) names an image, in any case.
func isImage(mimeType string) bool {
	return strings.HasPrefix(strings.ToLower(strings.TrimSpace(mimeType)), "image/")
}
