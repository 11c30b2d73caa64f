package graph

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestMediaInfoFileSize(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		body string
		want int64
		ok   bool
	}{
		{"number", `{"url":"https://x/y","mime_type":"image/jpeg","sha256":"ab","file_size":1234,"id":"1"}`, 1234, true},
		{"string", `{"url":"https://x/y","mime_type":"image/jpeg","sha256":"ab","file_size":"1234","id":"1"}`, 1234, true},
		{"absent", `{"url":"https://x/y","mime_type":"image/jpeg","id":"1"}`, 0, true},
		{"not a size", `{"url":"https://x/y","file_size":"big"}`, 0, false},
		{"no url", `{"mime_type":"image/jpeg","file_size":1}`, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Header.Get("Authorization") != "Bearer tok" || r.URL.Path != "/v24.0/123" {
					w.WriteHeader(http.StatusTeapot)
					return
				}
				w.Write([]byte(tc.body))
			}))
			defer srv.Close()
			c, err := NewClient(srv.URL+"/v24.0", "tok", nil)
			if err != nil {
				t.Fatal(err)
			}
			info, err := c.MediaInfo(context.Background(), "123")
			if (err == nil) != tc.ok || info.FileSize != tc.want {
				t.Fatalf("MediaInfo = %+v, %v; want size %d, ok %v", info, err, tc.want, tc.ok)
			}
			if tc.ok && (info.URL != "https://x/y" || info.ID != "1") {
				t.Errorf("info = %+v", info)
			}
		})
	}
}

func TestDownloadMediaCap(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/gone":
			w.WriteHeader(http.StatusNotFound)
		case "/announced":
			w.Header().Set("Content-Length", "100")
			w.Write(bytes.Repeat([]byte{1}, 100))
		default:
			w.Write(bytes.Repeat([]byte{1}, 100))
		}
	}))
	defer srv.Close()
	c, err := NewClient(srv.URL, "tok", nil)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if n, err := c.DownloadMedia(context.Background(), srv.URL+"/x", &buf, 100); err != nil || n != 100 {
		t.Errorf("at the cap: %d, %v", n, err)
	}
	for _, path := range []string{"/x", "/announced"} {
		if _, err := c.DownloadMedia(context.Background(), srv.URL+path, &bytes.Buffer{}, 99); !errors.Is(err, ErrMediaTooLarge) {
			t.Errorf("%s over the cap: %v", path, err)
		}
	}
	_, err = c.DownloadMedia(context.Background(), srv.URL+"/gone", &buf, 100)
	if !IsMediaGone(err) || IsRetryable(err) {
		t.Errorf("404: %v; want gone, not retryable", err)
	}
	if _, err := c.DownloadMedia(context.Background(), "ftp://x/y", &buf, 100); !errors.Is(err, ErrInvalidMessage) {
		t.Errorf("ftp URL: %v", err)
	}
	// A transport error does not quote the URL: a download URL is a capability.
	srv2 := httptest.NewServer(http.NotFoundHandler())
	u := srv2.URL + "/secret-path?mid=1"
	srv2.Close()
	if _, err := c.DownloadMedia(context.Background(), u, &buf, 100); err == nil || strings.Contains(err.Error(), "secret-path") || !IsRetryable(err) {
		t.Errorf("closed server: %v; want a retryable error without the URL", err)
	}
}
