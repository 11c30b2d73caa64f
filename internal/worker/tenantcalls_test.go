package worker_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"testing"

	"github.com/wapipe/wapipe/internal/graph/graphfake"
	"github.com/wapipe/wapipe/internal/media/mediasample"
	"github.com/wapipe/wapipe/internal/workerclient"
)

// TestMediaCopyStreamsTheFileWithTheTenantsToken: the console's image proxy. Asked through
// workerclient (as the console asks), the worker fetches a message's file from Graph with the
// tenant's own token and streams it through with its type, headers that keep a browser from
// running it or a cache from keeping it; a file Meta no longer has, an unknown tenant and a
// wrong internal token each get a clear refusal.
func TestMediaCopyStreamsTheFileWithTheTenantsToken(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{})
	const number = "106540352242990"
	tid := s.applyTenant(s.ops(), tenantFile("copy-media", number, "en", "public", ""), "token-copy-media")
	photo := mediasample.Photo().Data
	f := s.Graph.AddMedia(photo, "image/jpeg")
	gone := s.Graph.AddMedia([]byte("old"), "image/jpeg")
	s.Graph.ExpireMedia(gone.ID)

	c := workerclient.NewWithHTTPClient(s.WorkerURL, s.InternalToken, http.DefaultClient)
	get := func(c *workerclient.Client, tenantID, mediaID string) (*http.Response, []byte) {
		t.Helper()
		resp, err := c.Do(context.Background(), http.MethodGet, workerclient.Path(tenantID, "media", mediaID), nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp, b
	}

	resp, b := get(c, tid, f.ID)
	if resp.StatusCode != http.StatusOK || !bytes.Equal(b, photo) {
		t.Fatalf("copy: status %d, %d bytes (want 200 and the %d bytes of the file)", resp.StatusCode, len(b), len(photo))
	}
	for h, want := range map[string]string{"Content-Type": "image/jpeg", "X-Content-Type-Options": "nosniff",
		"Content-Security-Policy": "sandbox", "Cache-Control": "private, no-store"} {
		if got := resp.Header.Get(h); got != want {
			t.Errorf("%s: %q, want %q", h, got, want)
		}
	}
	var tokens []string
	for _, r := range s.Graph.Requests() {
		if r.MediaID == f.ID && (r.Kind == graphfake.KindMedia || r.Kind == graphfake.KindDownload) {
			tokens = append(tokens, r.Token)
		}
	}
	if len(tokens) != 2 || tokens[0] != "token-copy-media" || tokens[1] != "token-copy-media" {
		t.Errorf("Graph calls for the file carried tokens %q, want the tenant's on the lookup and the download", tokens)
	}

	refusals := []struct {
		name            string
		client          *workerclient.Client
		tenant, mediaID string
		wantStatus      int
		wantCode        string
	}{
		{"file Meta no longer has", c, tid, gone.ID, http.StatusNotFound, "media_gone"},
		{"unknown tenant", c, "no-such-tenant", f.ID, http.StatusNotFound, "not_found"},
		{"wrong internal token", workerclient.NewWithHTTPClient(s.WorkerURL, "wrong", http.DefaultClient), tid, f.ID, http.StatusUnauthorized, ""},
	}
	for _, tc := range refusals {
		resp, b := get(tc.client, tc.tenant, tc.mediaID)
		if resp.StatusCode != tc.wantStatus {
			t.Errorf("%s: status %d, want %d (%s)", tc.name, resp.StatusCode, tc.wantStatus, b)
			continue
		}
		if tc.wantCode == "" {
			continue
		}
		var e struct {
			Error struct{ Code string } `json:"error"`
		}
		if err := json.Unmarshal(b, &e); err != nil || e.Error.Code != tc.wantCode {
			t.Errorf("%s: body %s, want error code %s", tc.name, b, tc.wantCode)
		}
	}
}

// TestUploadNamesTheFileInAHeaderNotTheURL: the upload route takes the file's name (message
// content, never logged) from the request's Content-Disposition header, where the api puts it,
// never from the URL, whose query Cloud Run's request logs keep; a name in the query is ignored.
// The name reaches Graph's upload form, non-ASCII letters and quotes included.
func TestUploadNamesTheFileInAHeaderNotTheURL(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{})
	const number = "106540352242991"
	tid := s.applyTenant(s.ops(), tenantFile("upload-name", number, "en", "public", ""), "token-upload-name")
	c := workerclient.NewWithHTTPClient(s.WorkerURL, s.InternalToken, http.DefaultClient)
	photo := mediasample.Photo().Data

	tests := []struct {
		name, header, query, want string
	}{
		{"name in the header", `facture "été" 12.jpg`, "", `facture "été" 12.jpg`},
		{"name in the query only", "", "query-name.jpg", "file"},
	}
	for _, tc := range tests {
		q := url.Values{"phone_number_id": {number}, "mime_type": {"image/jpeg"}}
		if tc.query != "" {
			q.Set("filename", tc.query)
		}
		h := http.Header{"Content-Type": {"application/octet-stream"}}
		if tc.header != "" {
			h.Set("Content-Disposition", workerclient.UploadDisposition(tc.header))
		}
		resp, err := c.Do(context.Background(), http.MethodPost, workerclient.Path(tid, "media")+"?"+q.Encode(), bytes.NewReader(photo), h)
		if err != nil {
			t.Fatal(err)
		}
		var up struct{ ID string }
		err = json.NewDecoder(resp.Body).Decode(&up)
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated || err != nil || up.ID == "" {
			t.Fatalf("%s: status %d (%v), want 201 with an id", tc.name, resp.StatusCode, err)
		}
		var names []string
		for _, r := range s.Graph.Requests() {
			if r.Kind == graphfake.KindUpload && r.MediaID == up.ID {
				n, _ := r.Body["filename"].(string)
				names = append(names, n)
			}
		}
		if len(names) != 1 || names[0] != tc.want {
			t.Errorf("%s: Graph's upload of %s was named %q, want [%q]", tc.name, up.ID, names, tc.want)
		}
	}
}
