package tenantcalls_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"testing"

	"github.com/wapipe/wapipe/internal/devstack"
	"github.com/wapipe/wapipe/internal/graph/graphfake"
	"github.com/wapipe/wapipe/internal/logging/logcheck"
	"github.com/wapipe/wapipe/internal/media/mediasample"
	"github.com/wapipe/wapipe/internal/operator"
	"github.com/wapipe/wapipe/internal/secrets"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/taskqueue"
	"github.com/wapipe/wapipe/internal/testenv"
	"github.com/wapipe/wapipe/tasks"
	"github.com/wapipe/wapipe/tenantroutes"
)

func TestMain(m *testing.M) { os.Exit(testenv.RunWithFirestore(m)) }

// stack is one test's local pipeline (its own project in the shared Firestore emulator): the
// tenant routes as the worker serves them, behind its admission, against the fake Graph API.
type stack struct {
	*devstack.Stack
	t  *testing.T
	db *store.DB
}

func newStack(t *testing.T) *stack {
	t.Helper()
	host := testenv.FirestoreHost(t)
	fs, project := testenv.Firestore(t)
	logs := &testenv.LogBuffer{}
	st, err := devstack.Start(context.Background(), devstack.Options{
		FirestoreHost: host, Project: project, Queues: testenv.FastQueues(t),
		Logs: func(string) io.Writer { return logs }, NoTenants: true,
	})
	if err != nil {
		t.Fatalf("devstack.Start: %v", err)
	}
	t.Cleanup(st.Stop)
	// No wamid, nothing shaped like a person's id, in any log line (CONTRACT.md, Logs).
	t.Cleanup(func() { logcheck.Check(t, logs.String(), nil, nil) })
	return &stack{Stack: st, t: t, db: store.NewDB(fs)}
}

// tenantFile is a minimal tenant file.
func tenantFile(id, number string) []byte {
	return []byte(fmt.Sprintf("id: %s\nname: %s\nlanguage: en\naudience: public\nphone_numbers:\n  - {phone_number_id: %q, waba_id: \"300000000000001\"}\n",
		id, id, number))
}

// applyTenant applies file and sets the tenant's token, which the fake Graph API then accepts.
func (s *stack) applyTenant(file []byte, token string) string {
	s.t.Helper()
	ctx := context.Background()
	admin, err := taskqueue.NewAdmin(ctx, s.Project, s.Location, s.TasksAddr)
	if err != nil {
		s.t.Fatal(err)
	}
	defer admin.Close()
	keeper, err := secrets.New(ctx, secrets.Config{Dev: true})
	if err != nil {
		s.t.Fatal(err)
	}
	defer keeper.Close()
	ops := &operator.Tenants{Store: store.NewTenants(s.db, store.Options{}), Queues: admin, QueueFile: testenv.FastQueues(s.t), Sealer: keeper, Dev: true}
	rep, err := ops.Apply(ctx, file, false)
	if err != nil {
		s.t.Fatalf("apply: %v", err)
	}
	if _, err := ops.SetToken(ctx, rep.ID, token, false); err != nil {
		s.t.Fatalf("set-token: %v", err)
	}
	s.Graph.AcceptToken(token)
	return rep.ID
}

// call makes one request of a tenant route with internalToken, as the api and the console do,
// and returns the answer, its body read.
func (s *stack) call(internalToken, method, path string, body io.Reader, h http.Header) (*http.Response, []byte) {
	s.t.Helper()
	req, err := http.NewRequest(method, s.WorkerURL+path, body)
	if err != nil {
		s.t.Fatal(err)
	}
	for k, v := range h {
		req.Header[k] = v
	}
	req.Header.Set(tasks.HeaderInternalToken, internalToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		s.t.Fatal(err)
	}
	return resp, b
}

// TestMediaCopyStreamsTheFileWithTheTenantsToken: the console's image proxy. Asked as the
// console asks, the worker fetches a message's file from Graph with the
// tenant's own token and streams it through with its type, headers that keep a browser from
// running it or a cache from keeping it; a file Meta no longer has, an unknown tenant and a
// wrong internal token each get a clear refusal.
func TestMediaCopyStreamsTheFileWithTheTenantsToken(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	const number = "106540352242990"
	tid := s.applyTenant(tenantFile("copy-media", number), "token-copy-media")
	photo := mediasample.Photo().Data
	f := s.Graph.AddMedia(photo, "image/jpeg")
	gone := s.Graph.AddMedia([]byte("old"), "image/jpeg")
	s.Graph.ExpireMedia(gone.ID)

	get := func(internalToken, tenantID, mediaID string) (*http.Response, []byte) {
		t.Helper()
		return s.call(internalToken, http.MethodGet, tenantroutes.Path(tenantID, "media", mediaID), nil, nil)
	}

	resp, b := get(s.InternalToken, tid, f.ID)
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
		internalToken   string
		tenant, mediaID string
		wantStatus      int
		wantCode        string
	}{
		{"file Meta no longer has", s.InternalToken, tid, gone.ID, http.StatusNotFound, "media_gone"},
		{"unknown tenant", s.InternalToken, "no-such-tenant", f.ID, http.StatusNotFound, "not_found"},
		{"wrong internal token", "wrong", tid, f.ID, http.StatusUnauthorized, ""},
	}
	for _, tc := range refusals {
		resp, b := get(tc.internalToken, tc.tenant, tc.mediaID)
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
	s := newStack(t)
	const number = "106540352242991"
	tid := s.applyTenant(tenantFile("upload-name", number), "token-upload-name")
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
		h := tenantroutes.UploadRequest{Filename: tc.header}.Header()
		resp, b := s.call(s.InternalToken, http.MethodPost, tenantroutes.Path(tid, "media")+"?"+q.Encode(), bytes.NewReader(photo), h)
		var up struct{ ID string }
		err := json.Unmarshal(b, &up)
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
