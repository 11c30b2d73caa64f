package api

import (
	"bytes"
	"context"
	"errors"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/textproto"
	"net/url"
	"strings"
	"testing"

	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/tenant"
	"github.com/wapipe/wapipe/internal/workerclient"
	"github.com/wapipe/wapipe/tenantroutes"
)

// fakeWorker is a client of a worker whose every answer is h's.
func fakeWorker(t *testing.T, h http.HandlerFunc) *workerclient.Client {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return workerclient.NewWithHTTPClient(srv.URL, "internal-token", srv.Client())
}

// TestWorkerAnswer: each answer of the worker's upload route becomes the api's: the upload, or
// the refusal under the api's code and status; anything else is a failed dependency (503).
func TestWorkerAnswer(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		status     int
		body       string
		wantStatus int
		wantCode   string
	}{
		{"uploaded", http.StatusCreated, `{"id":"1","mime_type":"image/jpeg","file_size":3,"sha256":"ab"}`, http.StatusCreated, ""},
		{"too large", http.StatusRequestEntityTooLarge, `{"error":{"code":"media_too_large","message":"m"}}`, http.StatusRequestEntityTooLarge, "media_too_large"},
		{"type refused", http.StatusUnsupportedMediaType, `{"error":{"code":"unsupported_media_type","message":"m"}}`, http.StatusUnsupportedMediaType, "unsupported_media_type"},
		{"not the tenant's number", http.StatusBadRequest, `{"error":{"code":"invalid_request","message":"m"}}`, http.StatusBadRequest, "invalid_request"},
		{"no token", http.StatusConflict, `{"error":{"code":"no_token","message":"m"}}`, http.StatusConflict, "WHATSAPP_REAUTH_REQUIRED"},
		{"token refused", http.StatusConflict, `{"error":{"code":"WHATSAPP_REAUTH_REQUIRED","message":"m"}}`, http.StatusConflict, "WHATSAPP_REAUTH_REQUIRED"},
		{"tenant gone", http.StatusNotFound, `{"error":{"code":"not_found","message":"m"}}`, http.StatusUnauthorized, "unauthenticated"},
		{"Meta refused the file", http.StatusBadGateway, `{"error":{"code":"whatsapp_refused","message":"m"}}`, http.StatusUnprocessableEntity, "media_refused"},
		{"worker unavailable", http.StatusServiceUnavailable, `{"error":{"code":"unavailable","message":"m"}}`, http.StatusServiceUnavailable, "unavailable"},
		{"not JSON", http.StatusInternalServerError, `oops`, http.StatusServiceUnavailable, "unavailable"},
		{"created without an id", http.StatusCreated, `{}`, http.StatusServiceUnavailable, "unavailable"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			wk := fakeWorker(t, func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				w.WriteHeader(tc.status)
				_, _ = io.WriteString(w, tc.body)
			})
			up, err := workerAnswer(wk.Upload(context.Background(), "t1", tenantroutes.UploadRequest{PhoneNumberID: "100", MIMEType: "image/jpeg"}, strings.NewReader("jpg")))
			w := httptest.NewRecorder()
			if err != nil {
				fail(w, httptest.NewRequest(http.MethodPost, "/v1/media", nil), err)
			} else {
				writeJSON(w, http.StatusCreated, up)
			}
			if w.Code != tc.wantStatus || (tc.wantCode != "" && !strings.Contains(w.Body.String(), `"code":"`+tc.wantCode+`"`)) {
				t.Errorf("answer %d %s, want %d %s", w.Code, w.Body, tc.wantStatus, tc.wantCode)
			}
		})
	}
}

// TestCopyFileLimits: the file is copied up to its type's limit and no further; a part after the
// file is refused; the bytes go through unchanged.
func TestCopyFileLimits(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		size    int
		limit   int64
		after   bool
		wantErr error
	}{
		{"under the limit", 99, 100, false, nil},
		{"at the limit", 100, 100, false, nil},
		{"one byte over", 101, 100, false, errFileTooLarge},
		{"far over", 10_000, 100, false, errFileTooLarge},
		{"a field after the file", 10, 100, true, errFieldAfterFile},
		{"empty file", 0, 100, false, errEmptyFile},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var form bytes.Buffer
			mw := multipart.NewWriter(&form)
			data := bytes.Repeat([]byte{7}, tc.size)
			fw, _ := mw.CreateFormFile("file", "f.jpg")
			fw.Write(data)
			if tc.after {
				mw.WriteField("phone_number_id", "1")
			}
			mw.Close()
			mr := multipart.NewReader(&form, mw.Boundary())
			p, err := mr.NextPart()
			if err != nil {
				t.Fatal(err)
			}
			var got bytes.Buffer
			err = copyFile(&got, p, mr, tc.limit)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("copyFile: %v, want %v", err, tc.wantErr)
			}
			if err == nil && !bytes.Equal(got.Bytes(), data) {
				t.Errorf("copied %d bytes, want the %d of the file", got.Len(), len(data))
			}
			if int64(got.Len()) > tc.limit+1 {
				t.Errorf("copied %d bytes past a limit of %d", got.Len(), tc.limit)
			}
		})
	}
}

// uploadTenants is a TenantStore with one tenant, "t1", and one number.
type uploadTenants struct{ TenantStore }

func (uploadTenants) Get(_ context.Context, id string) (store.TenantRecord, error) {
	return store.TenantRecord{Tenant: &tenant.Tenant{ID: id, PhoneNumbers: []tenant.PhoneNumber{{PhoneNumberID: "100"}}}}, nil
}

// recordingWorker answers every upload 201 and keeps the path and headers it was called with.
type recordingWorker struct {
	path   string
	header http.Header
}

func (wk *recordingWorker) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	wk.path, wk.header = r.URL.RequestURI(), r.Header
	_, _ = io.Copy(io.Discard, r.Body)
	w.WriteHeader(http.StatusCreated)
	_, _ = io.WriteString(w, `{"id":"m1","mime_type":"image/jpeg","file_size":3}`)
}

// TestUploadKeepsTheFileNameOutOfTheWorkersURL: the file's name is message content; Cloud Run
// logs the worker's request URLs, so the api names the file to the worker in a header only.
func TestUploadKeepsTheFileNameOutOfTheWorkersURL(t *testing.T) {
	t.Parallel()
	const name = "payslip ana 2026.jpg"
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	h := textproto.MIMEHeader{}
	h.Set("Content-Disposition", `form-data; name="file"; filename="`+name+`"`)
	h.Set("Content-Type", "image/jpeg")
	part, _ := mw.CreatePart(h)
	_, _ = part.Write([]byte("jpg"))
	_ = mw.Close()
	r := httptest.NewRequest(http.MethodPost, "/v1/media", &body)
	r.Header.Set("Content-Type", mw.FormDataContentType())

	wk := &recordingWorker{}
	s := &Server{deps: Deps{Tenants: uploadTenants{}, Worker: fakeWorker(t, wk.ServeHTTP)}}
	if _, err := s.upload(httptest.NewRecorder(), r, "t1"); err != nil {
		t.Fatalf("upload: %v", err)
	}
	if u, err := url.Parse(wk.path); err != nil || u.Query().Has("filename") || strings.Contains(wk.path, "payslip") {
		t.Errorf("the worker's URL %q names the file", wk.path)
	}
	if got := tenantroutes.UploadFilename(wk.header); got != name {
		t.Errorf("the worker's headers name the file %q, want %q", got, name)
	}
}
