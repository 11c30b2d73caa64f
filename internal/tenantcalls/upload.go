package tenantcalls

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/wapipe/wapipe/internal/graph"
	"github.com/wapipe/wapipe/internal/httpserver"
	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/internal/refusal"
	"github.com/wapipe/wapipe/tenantroutes"
)

// UploadTimeout bounds one upload through the worker: the api cuts off a client slower than its
// floor rate (30 MiB at 256 KiB/s is two minutes), so this is a backstop well beyond it, under
// Cloud Run's request timeout.
const UploadTimeout = 4 * time.Minute

// MediaUploader uploads a file to Graph with a tenant's token; graphUploader implements it.
type MediaUploader interface {
	UploadMedia(ctx context.Context, token, phoneNumberID, mimeType, filename string, r io.Reader) (string, error)
}

// GraphUploader is the MediaUploader of a graph client with no token of its own, through an
// HTTP client whose timeout suits uploads (UploadTimeout), not single calls.
func GraphUploader(baseURL string, rt http.RoundTripper) (MediaUploader, error) {
	gc, err := graph.NewClient(baseURL, "", &http.Client{Timeout: UploadTimeout, Transport: rt})
	if err != nil {
		return nil, fmt.Errorf("graph.NewClient: %w", err)
	}
	return graphUploader{gc}, nil
}

type graphUploader struct{ gc *graph.Client }

func (u graphUploader) UploadMedia(ctx context.Context, token, phoneNumberID, mimeType, filename string, r io.Reader) (string, error) {
	return u.gc.WithToken(token).UploadMedia(ctx, phoneNumberID, mimeType, filename, r)
}

// errUploadTooLarge ends the read of an upload's body at its type's limit.
var errUploadTooLarge = errors.New("the file is over its type's limit")

// limitedHash reads at most limit bytes of r, hashing them; one more fails with
// errUploadTooLarge, so the upload is cut short and Graph keeps nothing.
type limitedHash struct {
	r     io.Reader
	limit int64
	n     int64
	sum   hash.Hash
	// err is r's last error other than io.EOF: the body broke off.
	err error
}

func (l *limitedHash) Read(p []byte) (int, error) {
	if int64(len(p)) > l.limit-l.n+1 {
		p = p[:l.limit-l.n+1]
	}
	n, err := l.r.Read(p)
	l.n += int64(n)
	if l.n > l.limit {
		return 0, errUploadTooLarge
	}
	l.sum.Write(p[:n])
	if err != nil && err != io.EOF {
		l.err = err
	}
	return n, err
}

// handleUpload answers POST /internal/tenants/{tenant_id}/media?phone_number_id=…&mime_type=…,
// whose body is the file, named by its Content-Disposition header (tenantroutes.UploadRequest): it
// streams the file to Graph's upload with the tenant's token, counting and hashing it as it
// goes, and answers 201 tenantroutes.Uploaded. The api has checked the type and size already; they
// are checked again here, where the token is.
func (s *Server) handleUpload(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	tenantID := chi.URLParam(r, "tenant_id")
	ctx, logger := logging.With(ctx, "tenant_id", tenantID)
	up := tenantroutes.UploadRequestOf(r)
	number := up.PhoneNumberID
	mimeType, ut, ok := graph.UploadTypeOf(up.MIMEType)
	if !ok {
		writeError(ctx, w, refusal.WithStatus(http.StatusUnsupportedMediaType, refusal.UnsupportedMediaType, "WhatsApp does not take files of this type"))
		return
	}
	rec, token, err := s.tenantToken(ctx, tenantID)
	if err != nil {
		writeError(ctx, w, err)
		return
	}
	if !rec.Tenant.OwnsNumber(number) {
		writeError(ctx, w, refusal.WithStatus(http.StatusBadRequest, refusal.InvalidRequest, "phone_number_id: not one of the tenant's numbers"))
		return
	}
	if r.ContentLength > ut.MaxBytes {
		writeError(ctx, w, refusal.WithStatus(http.StatusRequestEntityTooLarge, refusal.MediaTooLarge, tooLarge(ut)))
		return
	}
	// The server's read timeout is a backstop for small bodies; an upload takes as long as the
	// api's client takes, which the api bounds by its floor rate.
	_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(UploadTimeout))
	body := &limitedHash{r: r.Body, limit: ut.MaxBytes, sum: sha256.New()}
	id, err := s.deps.Uploads.UploadMedia(ctx, token, number, mimeType, up.Filename, body)
	var ge *graph.Error
	switch {
	case errors.Is(err, errUploadTooLarge):
		logger.InfoContext(ctx, "upload refused: too large", "event", "media_upload_refused", "reason", refusal.MediaTooLarge, "size", body.n)
		writeError(ctx, w, refusal.WithStatus(http.StatusRequestEntityTooLarge, refusal.MediaTooLarge, tooLarge(ut)))
		return
	case err != nil && !errors.As(err, &ge) && body.err != nil:
		// The api broke the body off (its client went away or sent a bad form): it answers.
		logger.InfoContext(ctx, "upload broken off by the caller", "event", "media_upload_refused", "reason", "body", "size", body.n)
		writeError(ctx, w, refusal.WithStatus(http.StatusBadRequest, refusal.InvalidRequest, "the file did not arrive whole"))
		return
	case err != nil && graph.Classify(err) == graph.Auth:
		logger.WarnContext(ctx, "upload refused: Meta refused the token", "event", "media_upload_failed", "error", err)
		s.tokenRefused(ctx, rec, err)
		writeError(ctx, w, refusal.WithStatus(http.StatusConflict, refusal.ReauthRequired, "Meta refused the tenant's access token: reconnect it"))
		return
	case err != nil && graph.Classify(err) == graph.Permanent:
		logger.WarnContext(ctx, "upload refused by Meta", "event", "media_upload_failed", "error", err)
		writeError(ctx, w, refusal.WithStatus(http.StatusBadGateway, refusal.WhatsAppRefused, "WhatsApp refused the file"))
		return
	case err != nil:
		writeError(ctx, w, fmt.Errorf("upload media: %w", err))
		return
	}
	digest := hex.EncodeToString(body.sum.Sum(nil))
	logger.InfoContext(ctx, "media uploaded", "event", "media_uploaded", "phone_number_id", number, "mime_type", mimeType, "size", body.n)
	httpserver.WriteJSON(w, http.StatusCreated, tenantroutes.Uploaded{ID: id, MIMEType: mimeType, FileSize: body.n, SHA256: digest})
}

// tooLarge says a type's limit.
func tooLarge(ut graph.UploadType) string {
	return fmt.Sprintf("a %s file may have at most %d bytes", ut.Kind, ut.MaxBytes)
}
