package graphfake

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/wapipe/wapipe/internal/graph"
)

const (
	token = "EAAfake"
	pnid  = "106540352242922"
	to    = "16505551234"
)

func start(t *testing.T, opts ...Option) (*Fake, *httptest.Server) {
	t.Helper()
	f := New(opts...)
	srv := f.NewTestServer()
	t.Cleanup(srv.Close)
	return f, srv
}

func client(t *testing.T, base, tok string) *graph.Client {
	t.Helper()
	c, err := graph.NewClient(base, tok, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

var wamidRE = regexp.MustCompile(`^wamid\.[A-Za-z0-9+/=]+$`)

func TestSendAndRead(t *testing.T) {
	t.Parallel()
	at := time.Date(2025, 6, 9, 12, 0, 0, 0, time.UTC)
	f, srv := start(t, WithClock(func() time.Time { return at }))
	ctx := context.Background()
	for _, base := range []string{srv.URL + "/v24.0", srv.URL} { // with and without a version
		c := client(t, base, token)
		res, err := c.SendText(ctx, pnid, "+1 650-555-1234", graph.Text{Body: "hi"}, graph.SendOptions{BizOpaqueCallbackData: "idem-1"})
		if err != nil {
			t.Fatalf("SendText via %s: %v", base, err)
		}
		if !wamidRE.MatchString(res.MessageID) || res.WaID != to {
			t.Errorf("result = %+v; want a wamid and wa_id %s", res, to)
		}
		if err := c.MarkRead(ctx, pnid, "wamid.IN"); err != nil {
			t.Fatalf("MarkRead: %v", err)
		}
	}
	reqs := f.Requests()
	if len(reqs) != 4 {
		t.Fatalf("got %d requests; want 4", len(reqs))
	}
	sends := f.Sends()
	if len(sends) != 2 || sends[0].MessageID == sends[1].MessageID {
		t.Fatalf("sends = %+v; want 2 with distinct ids", sends)
	}
	want := Request{Method: "POST", Path: "/v24.0/" + pnid + "/messages", PhoneNumberID: pnid, Kind: KindSend, Time: at, Status: 200, Token: "EAAfake",
		Body: map[string]any{"messaging_product": "whatsapp", "to": "+1 650-555-1234", "type": "text", "text": map[string]any{"body": "hi"}, "biz_opaque_callback_data": "idem-1"}}
	if diff := cmp.Diff(want, sends[0], cmpopts.IgnoreFields(Request{}, "MessageID", "RawBody")); diff != "" {
		t.Errorf("send record (-want, +got):\n%s", diff)
	}
	var m graph.Message
	if err := json.Unmarshal(sends[0].RawBody, &m); err != nil || m.Text.Body != "hi" {
		t.Errorf("RawBody does not decode into graph.Message: %v %+v", err, m)
	}
	if reqs[1].Kind != KindRead || reqs[3].Path != "/"+pnid+"/messages" {
		t.Errorf("requests = %+v", reqs)
	}
	f.Reset()
	if len(f.Requests()) != 0 {
		t.Errorf("Reset left requests")
	}
}

func TestFailures(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		script   func(*Fake)
		wantKind graph.Kind
		wantCode int
		wantHTTP int
		wantRA   time.Duration
	}{
		{"throttled 130429", func(f *Fake) { f.FailNext(1, 400, 130429) }, graph.Throttled, 130429, 400, 0},
		{"pair limit 131056", func(f *Fake) { f.FailNext(1, 400, 131056) }, graph.Throttled, 131056, 400, 0},
		{"undeliverable 131026", func(f *Fake) { f.FailNext(1, 400, 131026) }, graph.Permanent, 131026, 400, 0},
		{"server 500", func(f *Fake) { f.FailNext(1, 500, 131000) }, graph.Temporary, 131000, 500, 0},
		{"default status of a known code", func(f *Fake) { f.FailNext(1, 0, 133004) }, graph.Temporary, 133004, 503, 0},
		{"token expired", func(f *Fake) { f.FailNext(1, 401, 190) }, graph.Auth, 190, 401, 0},
		{"with Retry-After", func(f *Fake) { f.FailWith(1, Failure{HTTPStatus: 429, Code: 4, RetryAfter: "7"}) }, graph.Throttled, 4, 429, 7 * time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f, srv := start(t)
			tc.script(f)
			c := client(t, srv.URL+"/v24.0", token)
			_, err := c.SendText(context.Background(), pnid, to, graph.Text{Body: "hi"}, graph.SendOptions{})
			var ge *graph.Error
			if !errors.As(err, &ge) {
				t.Fatalf("error = %v; want *graph.Error", err)
			}
			if ge.Kind != tc.wantKind || ge.Code != tc.wantCode || ge.HTTPStatus != tc.wantHTTP || ge.RetryAfter != tc.wantRA || ge.FBTraceID == "" {
				t.Errorf("got %+v; want kind %s code %d status %d retry-after %s", ge, tc.wantKind, tc.wantCode, tc.wantHTTP, tc.wantRA)
			}
			// The failure is used up: the next call succeeds.
			if _, err := c.SendText(context.Background(), pnid, to, graph.Text{Body: "hi"}, graph.SendOptions{}); err != nil {
				t.Errorf("second send: %v", err)
			}
			if rs := f.Requests(); len(rs) != 2 || rs[0].Status != tc.wantHTTP || rs[0].Kind != KindSend {
				t.Errorf("requests = %+v", rs)
			}
			if len(f.Sends()) != 1 {
				t.Errorf("Sends = %d; want only the accepted one", len(f.Sends()))
			}
		})
	}
}

func TestFailNextCountsCalls(t *testing.T) {
	t.Parallel()
	f, srv := start(t)
	f.FailNext(2, 503, 2)
	c := client(t, srv.URL, token)
	ctx := context.Background()
	if err := c.MarkRead(ctx, pnid, "wamid.X"); graph.Classify(err) != graph.Temporary {
		t.Errorf("first call = %v; want temporary", err)
	}
	if _, err := c.SendText(ctx, pnid, to, graph.Text{Body: "x"}, graph.SendOptions{}); graph.Classify(err) != graph.Temporary {
		t.Errorf("second call = %v; want temporary", err)
	}
	if _, err := c.SendText(ctx, pnid, to, graph.Text{Body: "x"}, graph.SendOptions{}); err != nil {
		t.Errorf("third call: %v", err)
	}
}

func TestFailureKindOnlyHitsThatKind(t *testing.T) {
	t.Parallel()
	f, srv := start(t)
	f.FailWith(1, Failure{HTTPStatus: 500, Code: 1, Kind: KindSend})
	c := client(t, srv.URL, token)
	ctx := context.Background()
	if err := c.MarkRead(ctx, pnid, "wamid.X"); err != nil {
		t.Errorf("mark-as-read took a send-only failure: %v", err)
	}
	if _, err := c.SendText(ctx, pnid, to, graph.Text{Body: "x"}, graph.SendOptions{}); graph.Classify(err) != graph.Temporary {
		t.Errorf("send = %v; want the temporary failure", err)
	}
	if _, err := c.SendText(ctx, pnid, to, graph.Text{Body: "x"}, graph.SendOptions{}); err != nil {
		t.Errorf("second send: %v", err)
	}
}

func TestRejects(t *testing.T) {
	t.Parallel()
	_, srv := start(t, WithToken(token))
	cases := []struct {
		name, method, path, auth, body string
		wantStatus, wantCode           int
	}{
		{"no token", "POST", "/v24.0/" + pnid + "/messages", "", `{"messaging_product":"whatsapp","to":"1","type":"text"}`, 401, 190},
		{"not bearer", "POST", "/v24.0/" + pnid + "/messages", "Basic abc", `{}`, 401, 190},
		{"wrong token", "POST", "/v24.0/" + pnid + "/messages", "Bearer other", `{}`, 401, 190},
		{"not JSON", "POST", "/v24.0/" + pnid + "/messages", "Bearer " + token, `hello`, 400, 100},
		{"no messaging_product", "POST", "/v24.0/" + pnid + "/messages", "Bearer " + token, `{"to":"1","type":"text"}`, 400, 100},
		{"no recipient", "POST", "/v24.0/" + pnid + "/messages", "Bearer " + token, `{"messaging_product":"whatsapp","type":"text"}`, 400, 100},
		{"GET", "GET", "/v24.0/" + pnid + "/messages", "Bearer " + token, ``, 400, 100},
		{"unknown path", "POST", "/v24.0/" + pnid + "/media", "Bearer " + token, `{}`, 400, 100},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			req, _ := http.NewRequest(tc.method, srv.URL+tc.path, strings.NewReader(tc.body))
			if tc.auth != "" {
				req.Header.Set("Authorization", tc.auth)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var body struct {
				Error struct {
					Code      int    `json:"code"`
					Type      string `json:"type"`
					Message   string `json:"message"`
					FBTraceID string `json:"fbtrace_id"`
				} `json:"error"`
			}
			if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
				t.Fatalf("decode: %v", err)
			}
			if resp.StatusCode != tc.wantStatus || body.Error.Code != tc.wantCode || body.Error.Message == "" || body.Error.FBTraceID == "" {
				t.Errorf("got %d %+v; want %d with code %d", resp.StatusCode, body.Error, tc.wantStatus, tc.wantCode)
			}
		})
	}
}

func TestWaitForSends(t *testing.T) {
	t.Parallel()
	f, srv := start(t)
	c := client(t, srv.URL, token)
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			if _, err := c.SendText(context.Background(), pnid, to, graph.Text{Body: "x"}, graph.SendOptions{}); err != nil {
				t.Errorf("send: %v", err)
			}
		})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got, err := f.WaitForSends(ctx, 3)
	if err != nil || len(got) != 3 {
		t.Fatalf("WaitForSends = %d, %v; want 3", len(got), err)
	}
	wg.Wait()

	// Waiting for more than will come ends with the context, returning what there is.
	short, cancel2 := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel2()
	got, err = f.WaitForSends(short, 4)
	if !errors.Is(err, context.DeadlineExceeded) || len(got) != 3 {
		t.Errorf("WaitForSends(4) = %d, %v; want 3 and DeadlineExceeded", len(got), err)
	}
	if rs, err := f.WaitForRequests(ctx, 3); err != nil || len(rs) != 3 {
		t.Errorf("WaitForRequests = %d, %v", len(rs), err)
	}
}

func TestAdminEndpoints(t *testing.T) {
	t.Parallel()
	f, srv := start(t)
	post := func(path, body string) int {
		t.Helper()
		resp, err := http.Post(srv.URL+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := post("/_fake/fail", `{"n":1,"http_status":400,"code":131056,"retry_after":"2"}`); code != 200 {
		t.Fatalf("POST /_fake/fail = %d", code)
	}
	for _, bad := range []string{`{"n":0,"code":1}`, `{"n":1,"cod":1}`, `nope`} {
		if code := post("/_fake/fail", bad); code != 400 {
			t.Errorf("POST /_fake/fail %s = %d; want 400", bad, code)
		}
	}
	c := client(t, srv.URL+"/v24.0", token)
	_, err := c.SendText(context.Background(), pnid, to, graph.Text{Body: "x"}, graph.SendOptions{})
	if graph.Classify(err) != graph.Throttled || graph.RetryAfter(err) != 2*time.Second {
		t.Errorf("scripted failure = %v; want throttled, retry after 2s", err)
	}
	if _, err := c.SendText(context.Background(), pnid, to, graph.Text{Body: "x"}, graph.SendOptions{}); err != nil {
		t.Fatal(err)
	}

	resp, err := http.Get(srv.URL + "/_fake/requests")
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Requests []Request `json:"requests"`
	}
	err = json.NewDecoder(resp.Body).Decode(&got)
	resp.Body.Close()
	if err != nil || len(got.Requests) != 2 || got.Requests[0].Status != 400 || got.Requests[1].MessageID == "" || got.Requests[1].Body["to"] != to {
		t.Errorf("GET /_fake/requests = %+v, %v", got, err)
	}
	if code := post("/_fake/reset", ``); code != 200 || len(f.Requests()) != 0 {
		t.Errorf("POST /_fake/reset = %d, %d requests left", code, len(f.Requests()))
	}
	if resp, _ := http.Get(srv.URL + "/_fake/nope"); resp.StatusCode != 404 {
		t.Errorf("unknown control = %d; want 404", resp.StatusCode)
	}
}

func TestServe(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := New()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.Serve(ctx, l) }()
	c := client(t, "http://"+l.Addr().String()+"/v24.0", token)
	if _, err := c.SendText(context.Background(), pnid, to, graph.Text{Body: "x"}, graph.SendOptions{}); err != nil {
		t.Fatalf("send: %v", err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Serve: %v", err)
	}
}

// TestAcceptToken: one fake serves several tenants' tokens, records which token each call
// carried, and still refuses the others.
func TestAcceptToken(t *testing.T) {
	t.Parallel()
	f, srv := start(t, WithToken(token))
	f.AcceptToken("EAAtenant-b")
	for _, tc := range []struct {
		tok  string
		want int
	}{{token, 200}, {"EAAtenant-b", 200}, {"EAAother", 401}} {
		req, _ := http.NewRequest("POST", srv.URL+"/v24.0/"+pnid+"/messages",
			strings.NewReader(`{"messaging_product":"whatsapp","to":"1","type":"text","text":{"body":"hi"}}`))
		req.Header.Set("Authorization", "Bearer "+tc.tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("token %s: %d, want %d", tc.tok, resp.StatusCode, tc.want)
		}
	}
	var got []string
	for _, r := range f.Requests() {
		got = append(got, r.Token)
	}
	if diff := cmp.Diff([]string{token, "EAAtenant-b", "EAAother"}, got); diff != "" {
		t.Errorf("recorded tokens (-want, +got):\n%s", diff)
	}
}
