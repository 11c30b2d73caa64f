package worker

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
	"github.com/wapipe/wapipe/internal/httpjson"
	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/internal/workerclient"
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

// Codes of the upload route's refusals (the api's names).
const (
	callUnsupportedType = "unsupported_media_type"
	callRefused         = "whatsapp_refused"
)

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
// whose body is the file, named by its Content-Disposition header (workerclient.UploadDisposition): it streams the file to Graph's upload with the tenant's
// token, counting and hashing it as it goes, and answers 201 {"id","mime_type","file_size",
// "sha256"} (sha256 hex-encoded, as Meta's media lookup gives it). The api has checked the type
// and size already; they are checked again here, where the token is.
func (s *Server) handleUpload(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	tenantID := chi.URLParam(r, "tenant_id")
	ctx, logger := logging.With(ctx, "tenant_id", tenantID)
	q := r.URL.Query()
	number, filename := q.Get("phone_number_id"), workerclient.UploadFilename(r.Header)
	mimeType, ut, ok := graph.UploadTypeOf(q.Get("mime_type"))
	if !ok {
		writeCallError(ctx, w, &callError{http.StatusUnsupportedMediaType, callUnsupportedType, "WhatsApp does not take files of this type"})
		return
	}
	if s.deps.Uploads == nil {
		writeCallError(ctx, w, &callError{http.StatusNotFound, callNotFound, "this worker uploads no media"})
		return
	}
	rec, token, err := s.tenantToken(ctx, tenantID)
	if err != nil {
		writeCallError(ctx, w, err)
		return
	}
	if !rec.Tenant.OwnsNumber(number) {
		writeCallError(ctx, w, &callError{http.StatusBadRequest, callInvalid, "phone_number_id: not one of the tenant's numbers"})
		return
	}
	if r.ContentLength > ut.MaxBytes {
		writeCallError(ctx, w, &callError{http.StatusRequestEntityTooLarge, callTooLarge, tooLarge(ut)})
		return
	}
	// The server's read timeout is a backstop for small bodies; an upload takes as long as the
	// api's client takes, which the api bounds by its floor rate.
	_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(UploadTimeout))
	body := &limitedHash{r: r.Body, limit: ut.MaxBytes, sum: sha256.New()}
	id, err := s.deps.Uploads.UploadMedia(ctx, token, number, mimeType, filename, body)
	var ge *graph.Error
	switch {
	case errors.Is(err, errUploadTooLarge):
		logger.InfoContext(ctx, "upload refused: too large", "event", "media_upload_refused", "reason", callTooLarge, "size", body.n)
		writeCallError(ctx, w, &callError{http.StatusRequestEntityTooLarge, callTooLarge, tooLarge(ut)})
		return
	case err != nil && !errors.As(err, &ge) && body.err != nil:
		// The api broke the body off (its client went away or sent a bad form): it answers.
		logger.InfoContext(ctx, "upload broken off by the caller", "event", "media_upload_refused", "reason", "body", "size", body.n)
		writeCallError(ctx, w, &callError{http.StatusBadRequest, callInvalid, "the file did not arrive whole"})
		return
	case err != nil && graph.Classify(err) == graph.Auth:
		logger.WarnContext(ctx, "upload refused: Meta refused the token", "event", "media_upload_failed", "error", err)
		s.tokenRefused(ctx, rec, err)
		writeCallError(ctx, w, &callError{http.StatusConflict, callReauthRequired, "Meta refused the tenant's access token: reconnect it"})
		return
	case err != nil && graph.Classify(err) == graph.Permanent:
		logger.WarnContext(ctx, "upload refused by Meta", "event", "media_upload_failed", "error", err)
		writeCallError(ctx, w, &callError{http.StatusBadGateway, callRefused, "WhatsApp refused the file"})
		return
	case err != nil:
		writeCallError(ctx, w, fmt.Errorf("upload media: %w", err))
		return
	}
	digest := hex.EncodeToString(body.sum.Sum(nil))
	logger.InfoContext(ctx, "media uploaded", "event", "media_uploaded", "phone_number_id", number, "mime_type", mimeType, "size", body.n)
	httpjson.Write(w, http.StatusCreated, map[string]any{"id": id, "mime_type": mimeType, "file_size": body.n, "sha256": digest})
}

// tooLarge says a type's limit.
func tooLarge(ut graph.UploadType) string {
	return fmt.Sprintf("a %s file may have at most %d bytes", ut.Kind, ut.MaxBytes)
}
