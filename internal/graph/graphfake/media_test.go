package graphfake_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/wapipe/wapipe/internal/graph"
	"github.com/wapipe/wapipe/internal/graph/graphfake"
)

// TestMediaOverHTTP drives the media controls as the CLI does and fetches the file through
// graph's client: lookup, download, then an expired id.
func TestMediaOverHTTP(t *testing.T) {
	t.Parallel()
	fake := graphfake.New(graphfake.WithToken("tok"))
	srv := fake.NewTestServer()
	t.Cleanup(srv.Close)
	data := []byte("OggS voice")
	resp, err := srv.Client().Post(srv.URL+"/_fake/media", "audio/ogg; codecs=opus", bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	var mf graphfake.MediaFile
	err = json.NewDecoder(resp.Body).Decode(&mf)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusCreated || mf.ID == "" || mf.FileSize != int64(len(data)) || mf.MIMEType != "audio/ogg; codecs=opus" {
		t.Fatalf("POST /_fake/media: %d %+v %v", resp.StatusCode, mf, err)
	}
	c, err := graph.NewClient(srv.URL+"/"+graph.Version, "tok", srv.Client())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	info, err := c.MediaInfo(ctx, mf.ID)
	if err != nil || info.SHA256 != mf.SHA256Hex || info.FileSize != int64(len(data)) || !strings.HasPrefix(info.URL, srv.URL+"/") {
		t.Fatalf("MediaInfo = %+v, %v", info, err)
	}
	var buf bytes.Buffer
	if _, err := c.DownloadMedia(ctx, info.URL, &buf, 1<<20); err != nil || buf.String() != string(data) {
		t.Fatalf("DownloadMedia = %q, %v", buf.String(), err)
	}
	if _, err := c.WithToken("other").DownloadMedia(ctx, info.URL, io.Discard, 1<<20); graph.Classify(err) != graph.Auth {
		t.Errorf("download with another token: %v; want auth", err)
	}

	for _, tc := range []struct {
		path, ctype, body string
		want              int
	}{
		{"/_fake/media/expire", "application/json", `{"id":"` + mf.ID + `"}`, http.StatusOK},
		{"/_fake/media/expire", "application/json", `{"ids":["x"]}`, http.StatusBadRequest},
		{"/_fake/media", "", "data", http.StatusBadRequest},
		{"/_fake/media", "image/png", "", http.StatusBadRequest},
	} {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+tc.path, strings.NewReader(tc.body))
		if tc.ctype != "" {
			req.Header.Set("Content-Type", tc.ctype)
		}
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("POST %s %q: %d, want %d", tc.path, tc.body, resp.StatusCode, tc.want)
		}
	}
	if _, err := c.MediaInfo(ctx, mf.ID); !graph.IsMediaGone(err) {
		t.Errorf("lookup of an expired id: %v; want gone", err)
	}
	if _, err := c.DownloadMedia(ctx, info.URL, io.Discard, 1<<20); !graph.IsMediaGone(err) {
		t.Errorf("download of an expired id: %v; want gone", err)
	}
}
