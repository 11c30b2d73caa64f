package workerclient_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/wapipe/wapipe/internal/refusal"
	"github.com/wapipe/wapipe/internal/workerclient"
	"github.com/wapipe/wapipe/tasks"
	"github.com/wapipe/wapipe/tenantroutes"
)

// request is what the fake worker saw of a call.
type request struct {
	Method, URI, InternalToken, ContentType, Disposition, Body string
}

// fakeWorker answers every request with status and body, and records what it was asked.
func fakeWorker(t *testing.T, status int, header http.Header, body string) (*workerclient.Client, *request) {
	t.Helper()
	got := &request{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		*got = request{Method: r.Method, URI: r.URL.RequestURI(), InternalToken: r.Header.Get(tasks.HeaderInternalToken),
			ContentType: r.Header.Get("Content-Type"), Disposition: r.Header.Get("Content-Disposition"), Body: string(b)}
		for k, v := range header {
			w.Header()[k] = v
		}
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return workerclient.NewWithHTTPClient(srv.URL+"/", "internal-token", srv.Client()), got
}

// TestCallsFollowTheContract: each method sends its route's request (method, escaped path,
// query, the internal token, the body and its headers) and reads its route's answer.
func TestCallsFollowTheContract(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tests := []struct {
		name   string
		status int
		answer string
		call   func(c *workerclient.Client) (any, error)
		want   request
		result any
	}{
		{"list templates", http.StatusOK, `{"data":[{"id":"1","waba_id":"900","name":"hi","language":"en","status":"APPROVED","category":"UTILITY","components":[{"type":"BODY"}]}]}`,
			func(c *workerclient.Client) (any, error) { return c.ListTemplates(ctx, "acme") },
			request{Method: "GET", URI: "/internal/tenants/acme/templates"},
			[]tenantroutes.Template{{ID: "1", WABAID: "900", Name: "hi", Language: "en", Status: "APPROVED", Category: "UTILITY", Components: json.RawMessage(`[{"type":"BODY"}]`)}}},
		{"create a template", http.StatusCreated, `{"category":"UTILITY","id":"7","status":"PENDING"}`,
			func(c *workerclient.Client) (any, error) {
				return c.CreateTemplate(ctx, "acme", json.RawMessage(`{"name":"hi","waba_id":"901"}`))
			},
			request{Method: "POST", URI: "/internal/tenants/acme/templates", ContentType: "application/json", Body: `{"name":"hi","waba_id":"901"}`},
			tenantroutes.CreatedTemplate{Category: "UTILITY", ID: "7", Status: "PENDING"}},
		{"delete a template", http.StatusOK, `{"success":true}`,
			func(c *workerclient.Client) (any, error) { return nil, c.DeleteTemplate(ctx, "a/b", "../hi", "901") },
			request{Method: "DELETE", URI: "/internal/tenants/a%2Fb/templates/..%2Fhi?waba_id=901"}, nil},
		{"delete a template of the only account", http.StatusOK, `{"success":true}`,
			func(c *workerclient.Client) (any, error) { return nil, c.DeleteTemplate(ctx, "acme", "hi", "") },
			request{Method: "DELETE", URI: "/internal/tenants/acme/templates/hi"}, nil},
		{"upload", http.StatusCreated, `{"file_size":3,"id":"m1","mime_type":"image/jpeg","sha256":"ab"}`,
			func(c *workerclient.Client) (any, error) {
				return c.Upload(ctx, "acme", tenantroutes.UploadRequest{PhoneNumberID: "100", MIMEType: "image/jpeg", Filename: "été.jpg"}, strings.NewReader("jpg"))
			},
			request{Method: "POST", URI: "/internal/tenants/acme/media?mime_type=image%2Fjpeg&phone_number_id=100", ContentType: "application/octet-stream",
				Disposition: "attachment; filename*=utf-8''%C3%A9t%C3%A9.jpg", Body: "jpg"},
			tenantroutes.Uploaded{FileSize: 3, ID: "m1", MIMEType: "image/jpeg", SHA256: "ab"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, got := fakeWorker(t, tc.status, nil, tc.answer)
			res, err := tc.call(c)
			if err != nil {
				t.Fatalf("call: %v", err)
			}
			tc.want.InternalToken = "internal-token"
			if diff := cmp.Diff(tc.want, *got); diff != "" {
				t.Errorf("request (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.result, res); tc.result != nil && diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRefusalsCarryTheirCode: an answer other than the route's success is a *refusal.Error
// with its status and, when the body is a refusal, its code and message; a 201 upload without
// an id is no answer at all.
func TestRefusalsCarryTheirCode(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		status int
		body   string
		want   *refusal.Error
	}{
		{"refusal", http.StatusConflict, `{"error":{"code":"no_token","message":"m"}}`, &refusal.Error{Status: http.StatusConflict, Code: refusal.NoToken, Message: "m"}},
		{"not JSON", http.StatusInternalServerError, `oops`, &refusal.Error{Status: http.StatusInternalServerError}},
		{"success of another route", http.StatusOK, `{}`, &refusal.Error{Status: http.StatusOK}},
		{"created without an id", http.StatusCreated, `{}`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, _ := fakeWorker(t, tc.status, nil, tc.body)
			_, err := c.Upload(ctx, "acme", tenantroutes.UploadRequest{PhoneNumberID: "100", MIMEType: "image/jpeg"}, strings.NewReader("jpg"))
			var got *refusal.Error
			switch {
			case err == nil:
				t.Fatal("no error")
			case tc.want == nil && errors.As(err, &got):
				t.Errorf("%v: a refusal, want an error that is none", err)
			case tc.want != nil && !errors.As(err, &got):
				t.Errorf("%v: not a refusal", err)
			case tc.want != nil:
				if diff := cmp.Diff(tc.want, got); diff != "" {
					t.Errorf("refusal (-want +got):\n%s", diff)
				}
			}
		})
	}
}

// TestCopyMediaStreamsTheFile: the file comes with its type and length, the body for the caller
// to read; a refusal is its status.
func TestCopyMediaStreamsTheFile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, got := fakeWorker(t, http.StatusOK, http.Header{"Content-Type": {"image/png"}}, "\x89PNG")
	m, err := c.CopyMedia(ctx, "acme", "12 3")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(m.Body)
	m.Body.Close()
	if got.Method != http.MethodGet || got.URI != "/internal/tenants/acme/media/12%203" || m.ContentType != "image/png" ||
		m.ContentLength != 4 || string(b) != "\x89PNG" {
		t.Errorf("%s %s: %q, %d bytes %q", got.Method, got.URI, m.ContentType, m.ContentLength, b)
	}

	c, _ = fakeWorker(t, http.StatusNotFound, nil, `{"error":{"code":"media_gone","message":"m"}}`)
	_, err = c.CopyMedia(ctx, "acme", "1")
	var refused *refusal.Error
	if !errors.As(err, &refused) || refused.Status != http.StatusNotFound || refused.Code != refusal.MediaGone {
		t.Errorf("refused copy: %v, want 404 media_gone", err)
	}
}
