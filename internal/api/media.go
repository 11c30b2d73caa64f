package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"strings"

	"github.com/wapipe/wapipe/internal/graph"
	"github.com/wapipe/wapipe/internal/httpserver"
	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/internal/outbox"
	"github.com/wapipe/wapipe/internal/refusal"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/tenantroutes"
)

// Uploads pass through the worker: Graph's upload takes the tenant's access token, which only the
// worker's service account can open. The api reads the form as it arrives and streams the file
// part to the worker's tenant route, which streams it into Graph's multipart upload: no whole
// file is held anywhere, so memory stays bounded whatever the number of uploads in flight.

// WorkerCaller calls the worker's tenant routes (package tenantroutes); *workerclient.Client
// implements it. A refusal is a *refusal.Error.
type WorkerCaller interface {
	ListTemplates(ctx context.Context, tenantID string) ([]tenantroutes.Template, error)
	CreateTemplate(ctx context.Context, tenantID string, body json.RawMessage) (tenantroutes.CreatedTemplate, error)
	DeleteTemplate(ctx context.Context, tenantID, name, wabaID string) error
	Upload(ctx context.Context, tenantID string, u tenantroutes.UploadRequest, file io.Reader) (tenantroutes.Uploaded, error)
}

// maxFormOverhead is what a media form may add to its file: the boundaries, the part headers and
// phone_number_id.
const maxFormOverhead = 64 << 10

// maxFieldBytes caps a form field before the file (phone_number_id).
const maxFieldBytes = 256

// MediaUpload is the answer of POST /v1/media: Meta's media id, the file's MIME type (without
// parameters), its size in bytes and its SHA-256, hex-encoded (as Meta's media lookup gives it).
type MediaUpload struct {
	ID       string `json:"id"`
	MIMEType string `json:"mime_type"`
	FileSize int64  `json:"file_size"`
	SHA256   string `json:"sha256"`
}

// errEmptyFile refuses a file of no bytes, which WhatsApp would not send.
var errEmptyFile = refusal.New(refusal.InvalidRequest, "file: empty")

// errFieldAfterFile refuses a form with a part after the file: the file is streamed on as it
// arrives, so what the upload needs must come before it.
var errFieldAfterFile = refusal.New(refusal.InvalidRequest, "form: the file must be the last part (put phone_number_id before file: curl -F phone_number_id=… -F file=@…)")

// handleUpload answers POST /v1/media: multipart/form-data with an optional phone_number_id and
// then file, whose part Content-Type is the file's MIME type.
func (s *Server) handleUpload(w http.ResponseWriter, r *http.Request) {
	r, tenantID, ok := s.workerTenant(w, r) // templates.go
	if !ok {
		return
	}
	ctx := r.Context()
	logger := logging.FromContext(ctx)
	up, err := s.upload(w, r, tenantID)
	if err != nil {
		if ref, ok := refusal.As(err); ok {
			logger.InfoContext(ctx, "upload refused", "event", "api_media_refused", "code", ref.Code)
		}
		fail(w, r, err)
		return
	}
	logger.InfoContext(ctx, "media uploaded", "event", "api_media_uploaded", "mime_type", up.MIMEType, "size", up.FileSize)
	writeJSON(w, http.StatusCreated, up)
}

// upload reads the form up to its file, then streams the file to the worker.
func (s *Server) upload(w http.ResponseWriter, r *http.Request, tenantID string) (MediaUpload, error) {
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "multipart/form-data" {
		return MediaUpload{}, refusal.New(codeWrongContentType, "Content-Type: must be multipart/form-data (curl -F file=@photo.jpg;type=image/jpeg)")
	}
	r.Body = http.MaxBytesReader(w, r.Body, graph.MaxUploadBytes+maxFormOverhead)
	mr, err := r.MultipartReader()
	if err != nil {
		return MediaUpload{}, refusal.New(refusal.InvalidRequest, "body: not a multipart form")
	}
	var number string
	for {
		p, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			return MediaUpload{}, refusal.New(refusal.InvalidRequest, "file: required (curl -F file=@photo.jpg;type=image/jpeg)")
		}
		if err != nil {
			return MediaUpload{}, bodyError(err)
		}
		switch p.FormName() {
		case "phone_number_id":
			v, err := io.ReadAll(io.LimitReader(p, maxFieldBytes+1))
			if err != nil {
				return MediaUpload{}, bodyError(err)
			}
			if len(v) > maxFieldBytes {
				return MediaUpload{}, refusal.New(refusal.InvalidRequest, "phone_number_id: too long")
			}
			number = strings.TrimSpace(string(v))
		case "file":
			return s.streamFile(r, tenantID, number, mr, p)
		default:
			return MediaUpload{}, refusal.New(refusal.InvalidRequest, fmt.Sprintf("form: unknown field %q (file and phone_number_id only)", p.FormName()))
		}
	}
}

// streamFile checks the file's type and the tenant's number, then streams the part to the
// worker, at most its type's limit, and passes the worker's answer on.
func (s *Server) streamFile(r *http.Request, tenantID, number string, mr *multipart.Reader, p *multipart.Part) (MediaUpload, error) {
	ctx := r.Context()
	mimeType, ut, ok := graph.UploadTypeOf(p.Header.Get("Content-Type"))
	if !ok {
		return MediaUpload{}, refusal.New(refusal.UnsupportedMediaType, fmt.Sprintf("file: WhatsApp does not take %q files (the part's Content-Type is the file's type: curl -F 'file=@photo.jpg;type=image/jpeg')",
			p.Header.Get("Content-Type")))
	}
	tn, err := s.deps.Tenants.Get(ctx, tenantID)
	if errors.Is(err, store.ErrNotFound) {
		return MediaUpload{}, refusal.New(refusal.TenantNotFound, "the tenant no longer exists")
	}
	if err != nil {
		return MediaUpload{}, fmt.Errorf("read tenant %s: %w", tenantID, err)
	}
	if tn.AuthStatus == store.AuthNeedsReauth {
		return MediaUpload{}, refusal.New(refusal.ReauthRequired, "the tenant's WhatsApp access token was refused: reconnect (Embedded Signup) or set a new token")
	}
	if number, err = outbox.SenderNumber(tn.Tenant, number); err != nil {
		return MediaUpload{}, err
	}

	// The file's name is message content: the client names it in a header, never in the
	// worker's URL, which Cloud Run's request logs keep.
	u := tenantroutes.UploadRequest{PhoneNumberID: number, MIMEType: mimeType, Filename: p.FileName()}
	pr, pw := io.Pipe()
	type answer struct {
		up  tenantroutes.Uploaded
		err error
	}
	answered := make(chan answer, 1)
	go func() {
		up, err := s.deps.Worker.Upload(ctx, tenantID, u, pr)
		// The worker has answered: the copy below stops at its next write.
		pr.CloseWithError(errWorkerAnswered)
		answered <- answer{up, err}
	}()
	// The request's body is read here, in the handler's goroutine, as its pace limits expect.
	werr := copyFile(pw, p, mr, ut.MaxBytes)
	pw.CloseWithError(werr)
	a := <-answered
	switch {
	case werr == errFileTooLarge:
		return MediaUpload{}, refusal.New(refusal.MediaTooLarge, fmt.Sprintf("file: a %s file may have at most %d bytes", ut.Kind, ut.MaxBytes))
	case werr != nil && !errors.Is(werr, io.ErrClosedPipe) && !errors.Is(werr, errWorkerAnswered):
		return MediaUpload{}, werr
	}
	return workerAnswer(a.up, a.err)
}

var (
	errWorkerAnswered = errors.New("the worker answered the upload")
	errFileTooLarge   = errors.New("file over its type's limit")
)

// copyFile copies the file part to w, at most limit bytes (errFileTooLarge beyond; errEmptyFile
// for none), then checks that the form ends there (errFieldAfterFile). Refused, the copy is cut
// short: the worker's body never ends, so Graph's form is never complete and Meta keeps nothing.
func copyFile(w io.Writer, p *multipart.Part, mr *multipart.Reader, limit int64) error {
	n, err := io.Copy(pipeWriter{w}, io.LimitReader(p, limit+1))
	switch {
	case err != nil:
		var we *pipeError
		if errors.As(err, &we) {
			return we.err // the worker answered before the end
		}
		return bodyError(err)
	case n > limit:
		return errFileTooLarge
	case n == 0:
		return errEmptyFile
	}
	if _, err := mr.NextPart(); !errors.Is(err, io.EOF) {
		if err != nil {
			return bodyError(err)
		}
		return errFieldAfterFile
	}
	return nil
}

// pipeWriter marks its write errors, so that copyFile tells the worker's end of the pipe from
// the client's body.
type pipeWriter struct{ w io.Writer }

func (p pipeWriter) Write(b []byte) (int, error) {
	n, err := p.w.Write(b)
	if err != nil {
		err = &pipeError{err}
	}
	return n, err
}

type pipeError struct{ err error }

func (e *pipeError) Error() string { return e.err.Error() }
func (e *pipeError) Unwrap() error { return e.err }

// bodyError is the refusal of a body that could not be read: too large (413), too slow (408),
// cut off or malformed (400).
func bodyError(err error) error {
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return refusal.New(refusal.MediaTooLarge, fmt.Sprintf("body: at most %d bytes", tooBig.Limit))
	case errors.Is(err, httpserver.ErrBodyTimeout):
		return refusal.New(codeBodyTimeout, "body: did not arrive in time")
	}
	return refusal.New(refusal.InvalidRequest, "body: not a readable multipart form")
}

// workerAnswers maps the upload route's refusals (the codes the api's caller may read) to the
// api's: the same code where the api answers it as it is, another where the api's caller reads
// the tenant's state differently (no usable token: reconnect; no tenant: the key opens nothing;
// WhatsApp's refusal of a file of a type it takes: 422 media_refused). An answer the table does
// not name is the worker failing.
var workerAnswers = map[string]string{
	refusal.InvalidRequest:       refusal.InvalidRequest,
	refusal.MediaTooLarge:        refusal.MediaTooLarge,
	refusal.UnsupportedMediaType: refusal.UnsupportedMediaType,
	refusal.NoToken:              refusal.ReauthRequired,
	refusal.ReauthRequired:       refusal.ReauthRequired,
	refusal.NotFound:             refusal.TenantNotFound,
	refusal.WhatsAppRefused:      refusal.MediaRefused,
}

// workerAnswer is the api's answer of the worker's: the upload, or its refusal as the api's; an
// error that is no refusal (no answer) is the worker failing.
func workerAnswer(up tenantroutes.Uploaded, err error) (MediaUpload, error) {
	var ce *refusal.Error
	switch {
	case errors.As(err, &ce):
		if mapped, known := workerAnswers[ce.Code]; known {
			return MediaUpload{}, refusal.New(mapped, ce.Message)
		}
		return MediaUpload{}, fmt.Errorf("the worker refused the upload: status %d, code %q", ce.Status, ce.Code)
	case err != nil:
		return MediaUpload{}, fmt.Errorf("upload through the worker: %w", err)
	}
	return MediaUpload{ID: up.ID, MIMEType: up.MIMEType, FileSize: up.FileSize, SHA256: up.SHA256}, nil
}
