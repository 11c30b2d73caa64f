package actioncall_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/wapipe/wapipe/internal/actioncall"
)

const testSecret = "whsec_0123456789abcdefghijklmnopqrstuvwxyzABCDEFG"

// devClient is a client as the worker builds it with APP_ENV=dev: the test servers listen on
// loopback (addr_test.go tests the address checks of the other environments).
func devClient(opts ...actioncall.Option) *actioncall.Client {
	return actioncall.NewClient(append(opts, actioncall.WithDev(true))...)
}

// received is what a test server saw of one call.
type received struct {
	method, path string
	header       http.Header
	body         []byte
}

// recordingServer answers every call with h after recording it.
func recordingServer(t *testing.T, h http.HandlerFunc) (*httptest.Server, func() []received) {
	t.Helper()
	var mu sync.Mutex
	var got []received
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, received{r.Method, r.URL.Path, r.Header.Clone(), b})
		mu.Unlock()
		if h != nil {
			h(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv, func() []received {
		mu.Lock()
		defer mu.Unlock()
		return append([]received(nil), got...)
	}
}

func TestCallSendsTheContractRequest(t *testing.T) {
	t.Parallel()
	srv, calls := recordingServer(t, nil)
	req := sampleRequest()
	sent := time.Unix(1767225600, 0)
	c0 := devClient(actioncall.WithClock(func() time.Time { return sent }))
	if _, err := c0.Call(context.Background(), srv.URL+"/wapipe/actions?v=1", []byte(testSecret), req); err != nil {
		t.Fatal(err)
	}
	got := calls()
	if len(got) != 1 {
		t.Fatalf("got %d calls, want 1", len(got))
	}
	c := got[0]
	if c.method != http.MethodPost || c.path != "/wapipe/actions" {
		t.Errorf("request line = %s %s, want POST /wapipe/actions", c.method, c.path)
	}
	wantHeader := map[string]string{
		"Content-Type":           "application/json",
		"Idempotency-Key":        "act_01HZX3K9",
		"X-Wapipe-Signature-256": actioncall.Sign([]byte(testSecret), sent, "act_01HZX3K9", c.body),
		"User-Agent":             actioncall.UserAgent,
	}
	gotHeader := map[string]string{}
	for k := range wantHeader {
		gotHeader[k] = c.header.Get(k)
	}
	if diff := cmp.Diff(wantHeader, gotHeader); diff != "" {
		t.Errorf("headers (-want, +got):\n%s", diff)
	}
	if !strings.Contains(c.header.Get("User-Agent"), "wapipe") {
		t.Errorf("User-Agent %q does not name wapipe", c.header.Get("User-Agent"))
	}
	wantBody, _ := req.MarshalJSON()
	if string(c.body) != string(wantBody) {
		t.Errorf("body = %s, want %s", c.body, wantBody)
	}
	var shape map[string]any
	if err := json.Unmarshal(c.body, &shape); err != nil {
		t.Fatal(err)
	}
	wantShape := map[string]any{
		"action_id": "act_01HZX3K9", "tenant_id": "acme-bus", "intent": "create_booking",
		"data":            map[string]any{"bus": "01", "customer": "Pak Agus & Co", "date": "2026-03-01", "price": float64(15000000)},
		"from":            map[string]any{"wa_id": "6281234567890", "name": "Budi", "role": "admin"},
		"conversation_id": "acme-bus_1234_6281234567890",
		"requested_at":    "2026-02-20T08:04:05Z",
	}
	if diff := cmp.Diff(wantShape, shape); diff != "" {
		t.Errorf("body (-want, +got):\n%s", diff)
	}
}

func TestCallSignatureVerifiesOnlyWithTheSecret(t *testing.T) {
	t.Parallel()
	srv, calls := recordingServer(t, nil)
	if _, err := devClient().Call(context.Background(), srv.URL, []byte(testSecret), sampleRequest()); err != nil {
		t.Fatal(err)
	}
	c := calls()[0]
	sig, key := c.header.Get(actioncall.HeaderSignature), c.header.Get(actioncall.HeaderIdempotencyKey)
	if err := actioncall.Verify([]byte(testSecret), c.body, key, sig, time.Now()); err != nil {
		t.Errorf("signature does not verify with the secret: %v", err)
	}
	other, _ := actioncall.NewSecret()
	if err := actioncall.Verify([]byte(other), c.body, key, sig, time.Now()); !errors.Is(err, actioncall.ErrSignatureInvalid) {
		t.Errorf("another secret: Verify = %v, want ErrSignatureInvalid", err)
	}
}

func TestCallClassifiesAnswers(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("é", actioncall.MaxReplyRunes+10)
	cases := []struct {
		name       string
		status     int
		header     map[string]string
		body       string
		want       actioncall.Result
		wantErr    error // errors.Is target; nil means no error
		wantReason string
	}{
		{name: "200 with reply", status: 200, body: `{"reply":"Booking B-17 recorded"}`,
			want: actioncall.Result{Kind: actioncall.Done, Reply: "Booking B-17 recorded", HTTPStatus: 200}},
		{name: "200 without body", status: 200,
			want: actioncall.Result{Kind: actioncall.Done, HTTPStatus: 200}},
		{name: "200 with other fields only", status: 200, body: `{"id":"B-17"}`,
			want: actioncall.Result{Kind: actioncall.Done, HTTPStatus: 200}},
		{name: "200 with null reply", status: 200, body: `{"reply":null}`,
			want: actioncall.Result{Kind: actioncall.Done, HTTPStatus: 200}},
		{name: "201 with reply trimmed", status: 201, body: "{\"reply\":\"  Noted.\\n\"}",
			want: actioncall.Result{Kind: actioncall.Done, Reply: "Noted.", HTTPStatus: 201}},
		{name: "204", status: 204,
			want: actioncall.Result{Kind: actioncall.Done, HTTPStatus: 204}},
		{name: "200 plain text", status: 200, body: "OK",
			want: actioncall.Result{Kind: actioncall.Done, HTTPStatus: 200, Note: "answer is not a JSON object: ignored"}},
		{name: "200 reply not a string", status: 200, body: `{"reply":42}`,
			want: actioncall.Result{Kind: actioncall.Done, HTTPStatus: 200, Note: "reply is not a string: ignored"}},
		{name: "200 reply too long is cut", status: 200, body: `{"reply":"` + long + `"}`,
			want: actioncall.Result{Kind: actioncall.Done, HTTPStatus: 200, Reply: strings.Repeat("é", actioncall.MaxReplyRunes),
				Note: fmt.Sprintf("reply cut to %d characters", actioncall.MaxReplyRunes)}},
		{name: "200 oversized answer", status: 200, body: `{"reply":"` + strings.Repeat("x", actioncall.MaxAnswerBytes) + `"}`,
			want: actioncall.Result{Kind: actioncall.Done, HTTPStatus: 200, Note: "answer over 64 KiB: ignored"}},
		{name: "409 with reply", status: 409, body: `{"reply":"Bus 03 is already booked on 1 March"}`,
			want: actioncall.Result{Kind: actioncall.Refused, Reply: "Bus 03 is already booked on 1 March", HTTPStatus: 409}},
		{name: "400 without body", status: 400,
			want: actioncall.Result{Kind: actioncall.Refused, HTTPStatus: 400}},
		{name: "401 wrong secret", status: 401, body: `{"error":"bad signature"}`,
			want: actioncall.Result{Kind: actioncall.Refused, HTTPStatus: 401}},
		{name: "404", status: 404, body: "<html>not found</html>",
			want: actioncall.Result{Kind: actioncall.Refused, HTTPStatus: 404, Note: "answer is not a JSON object: ignored"}},
		{name: "422 with reply", status: 422, body: `{"reply":"Price missing"}`,
			want: actioncall.Result{Kind: actioncall.Refused, Reply: "Price missing", HTTPStatus: 422}},
		{name: "413 oversized answer", status: 413, body: strings.Repeat("x", 2*actioncall.MaxAnswerBytes),
			want: actioncall.Result{Kind: actioncall.Refused, HTTPStatus: 413, Note: "answer over 64 KiB: ignored"}},
		{name: "500", status: 500, body: `{"reply":"oops"}`,
			want: actioncall.Result{Kind: actioncall.Retry, HTTPStatus: 500}, wantErr: actioncall.ErrRetryable},
		{name: "502 oversized", status: 502, body: strings.Repeat("x", 2*actioncall.MaxAnswerBytes),
			want: actioncall.Result{Kind: actioncall.Retry, HTTPStatus: 502}, wantErr: actioncall.ErrRetryable},
		{name: "503 with Retry-After", status: 503, header: map[string]string{"Retry-After": "7"},
			want: actioncall.Result{Kind: actioncall.Retry, HTTPStatus: 503, RetryAfter: 7 * time.Second}, wantErr: actioncall.ErrRetryable},
		{name: "429 with Retry-After", status: 429, header: map[string]string{"Retry-After": "30"}, body: `{"reply":"slow down"}`,
			want: actioncall.Result{Kind: actioncall.Retry, HTTPStatus: 429, RetryAfter: 30 * time.Second}, wantErr: actioncall.ErrRetryable},
		{name: "429 without Retry-After", status: 429,
			want: actioncall.Result{Kind: actioncall.Retry, HTTPStatus: 429}, wantErr: actioncall.ErrRetryable},
		{name: "408", status: 408,
			want: actioncall.Result{Kind: actioncall.Retry, HTTPStatus: 408}, wantErr: actioncall.ErrRetryable},
		{name: "302 not followed", status: 302, header: map[string]string{"Location": "https://elsewhere.example/"},
			want: actioncall.Result{Kind: actioncall.Failed, HTTPStatus: 302}, wantErr: actioncall.ErrRedirect},
		{name: "304", status: 304,
			want: actioncall.Result{Kind: actioncall.Failed, HTTPStatus: 304}, wantErr: actioncall.ErrRedirect},
		{name: "600", status: 600,
			want: actioncall.Result{Kind: actioncall.Failed, HTTPStatus: 600}, wantErr: actioncall.ErrUnexpectedStatus},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv, _ := recordingServer(t, func(w http.ResponseWriter, r *http.Request) {
				for k, v := range tc.header {
					w.Header().Set(k, v)
				}
				w.WriteHeader(tc.status)
				_, _ = io.WriteString(w, tc.body)
			})
			got, err := devClient().Call(context.Background(), srv.URL+"/a", []byte(testSecret), sampleRequest())
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("result (-want, +got):\n%s", diff)
			}
			switch {
			case tc.wantErr == nil && err != nil:
				t.Errorf("err = %v, want nil", err)
			case tc.wantErr != nil && !errors.Is(err, tc.wantErr):
				t.Errorf("err = %v, want errors.Is %v", err, tc.wantErr)
			}
			if !utf8.ValidString(got.Reply) {
				t.Errorf("reply is not valid UTF-8")
			}
			checkKindMatchesErr(t, got, err)
		})
	}
}

// checkKindMatchesErr checks the promise of Call: an error exactly for Retry and Failed, of
// the matching kind, whose text carries neither the secret nor the URL's query.
func checkKindMatchesErr(t *testing.T, got actioncall.Result, err error) {
	t.Helper()
	switch got.Kind {
	case actioncall.Done, actioncall.Refused:
		if err != nil {
			t.Errorf("%s with err %v", got.Kind, err)
		}
	case actioncall.Retry:
		if !errors.Is(err, actioncall.ErrRetryable) || errors.Is(err, actioncall.ErrPermanent) {
			t.Errorf("retry with err %v", err)
		}
	case actioncall.Failed:
		if !errors.Is(err, actioncall.ErrPermanent) || errors.Is(err, actioncall.ErrRetryable) {
			t.Errorf("failed with err %v", err)
		}
	default:
		t.Errorf("kind %s", got.Kind)
	}
	var ae *actioncall.Error
	if err != nil && !errors.As(err, &ae) {
		t.Errorf("err %T is not an *actioncall.Error", err)
	}
	if err != nil && (strings.Contains(err.Error(), testSecret) || strings.Contains(err.Error(), "token=")) {
		t.Errorf("err text leaks the secret or the query: %v", err)
	}
}

func TestCallTimeoutIsRetry(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	srv, _ := recordingServer(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	defer close(release)
	c := devClient(actioncall.WithTimeout(50 * time.Millisecond))
	got, err := c.Call(context.Background(), srv.URL+"?token=s3cr3t", []byte(testSecret), sampleRequest())
	if diff := cmp.Diff(actioncall.Result{Kind: actioncall.Retry}, got); diff != "" {
		t.Errorf("result (-want, +got):\n%s", diff)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want errors.Is context.DeadlineExceeded", err)
	}
	checkKindMatchesErr(t, got, err)
}

func TestCallNetworkErrorIsRetry(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	got, err := devClient().Call(context.Background(), "http://"+addr+"/a?token=s3cr3t", []byte(testSecret), sampleRequest())
	if got.Kind != actioncall.Retry {
		t.Errorf("kind = %s, want retry", got.Kind)
	}
	var ne net.Error
	if !errors.As(err, &ne) {
		t.Errorf("err = %v, want a net.Error in its chain", err)
	}
	checkKindMatchesErr(t, got, err)
}

func TestCallCanceledIsRetry(t *testing.T) {
	t.Parallel()
	srv, _ := recordingServer(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	got, err := devClient().Call(ctx, srv.URL, []byte(testSecret), sampleRequest())
	if got.Kind != actioncall.Retry || !errors.Is(err, context.Canceled) {
		t.Errorf("Call = %v, %v; want retry, context.Canceled", got.Kind, err)
	}
	checkKindMatchesErr(t, got, err)
}

func TestCallDoesNotFollowRedirects(t *testing.T) {
	t.Parallel()
	for _, status := range []int{301, 302, 303, 307, 308} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			t.Parallel()
			target, targetCalls := recordingServer(t, nil)
			// Another host: localhost instead of 127.0.0.1, another port.
			elsewhere := strings.Replace(target.URL, "127.0.0.1", "localhost", 1) + "/steal"
			origin, _ := recordingServer(t, func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, elsewhere, status)
			})
			got, err := devClient().Call(context.Background(), origin.URL, []byte(testSecret), sampleRequest())
			if diff := cmp.Diff(actioncall.Result{Kind: actioncall.Failed, HTTPStatus: status}, got); diff != "" {
				t.Errorf("result (-want, +got):\n%s", diff)
			}
			if !errors.Is(err, actioncall.ErrRedirect) {
				t.Errorf("err = %v, want ErrRedirect", err)
			}
			if n := len(targetCalls()); n != 0 {
				t.Errorf("the redirect target got %d calls, want 0", n)
			}
			checkKindMatchesErr(t, got, err)
		})
	}
}

func TestCallRefusesInsecureURLs(t *testing.T) {
	t.Parallel()
	srv, calls := recordingServer(t, nil)
	port := srv.URL[strings.LastIndex(srv.URL, ":")+1:]
	cases := []struct {
		name    string
		url     string
		wantErr error // nil: the call is made
	}{
		{"http to 127.0.0.1", srv.URL + "/a", nil},
		{"http to localhost", "http://localhost:" + port + "/a", nil},
		{"http to LOCALHOST", "http://LOCALHOST:" + port + "/a", nil},
		{"http to a public host", "http://ops.example.com/a?token=s3cr3t", actioncall.ErrInvalidURL},
		{"http to a private address", "http://10.0.0.8/a", actioncall.ErrInvalidURL},
		{"http to localhost-like name", "http://localhost.example.com/a", actioncall.ErrInvalidURL},
		{"ftp", "ftp://ops.example.com/a", actioncall.ErrInvalidURL},
		{"relative", "/wapipe/actions", actioncall.ErrInvalidURL},
		{"no host", "https:///a", actioncall.ErrInvalidURL},
		{"empty", "", actioncall.ErrInvalidURL},
		{"user and password", "https://u:p@ops.example.com/a", actioncall.ErrInvalidURL},
		{"user and password on loopback", "http://u:p@127.0.0.1:" + port + "/a", actioncall.ErrInvalidURL},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := devClient().Call(context.Background(), tc.url, []byte(testSecret), sampleRequest())
			if tc.wantErr == nil {
				if err != nil || got.Kind != actioncall.Done {
					t.Errorf("Call = %s, %v; want done", got.Kind, err)
				}
				return
			}
			if got.Kind != actioncall.Failed || !errors.Is(err, tc.wantErr) {
				t.Errorf("Call = %s, %v; want failed, %v", got.Kind, err, tc.wantErr)
			}
			if err := actioncall.CheckURL(tc.url); !errors.Is(err, tc.wantErr) {
				t.Errorf("CheckURL = %v, want %v", err, tc.wantErr)
			}
			checkKindMatchesErr(t, got, err)
		})
	}
	// The parallel subtests run after this function returns; Cleanup runs after them.
	t.Cleanup(func() {
		if n := len(calls()); n != 3 {
			t.Errorf("server got %d calls, want 3 (only the loopback ones)", n)
		}
	})
}

func TestCheckURLAcceptsHTTPSAndLoopback(t *testing.T) {
	t.Parallel()
	for _, u := range []string{
		"https://ops.example.com/wapipe/actions",
		"https://ops.example.com:8443/a?x=1",
		"http://127.0.0.1:8095/wapipe/actions",
		"http://127.1.2.3/a",
		"http://[::1]:8095/a",
		"http://localhost:8095/a",
	} {
		if err := actioncall.CheckURL(u); err != nil {
			t.Errorf("CheckURL(%s) = %v, want nil", u, err)
		}
	}
}

func TestCallRefusesInvalidRequests(t *testing.T) {
	t.Parallel()
	srv, calls := recordingServer(t, nil)
	with := func(f func(*actioncall.Request)) actioncall.Request {
		r := sampleRequest()
		f(&r)
		return r
	}
	cases := []struct {
		name   string
		secret string
		req    actioncall.Request
	}{
		{"empty secret", "", sampleRequest()},
		{"no action_id", testSecret, with(func(r *actioncall.Request) { r.ActionID = "" })},
		{"action_id with a space", testSecret, with(func(r *actioncall.Request) { r.ActionID = "a b" })},
		{"action_id with a newline", testSecret, with(func(r *actioncall.Request) { r.ActionID = "a\r\nX-Evil: 1" })},
		{"action_id too long", testSecret, with(func(r *actioncall.Request) { r.ActionID = strings.Repeat("a", 256) })},
		{"no tenant_id", testSecret, with(func(r *actioncall.Request) { r.TenantID = "" })},
		{"no intent", testSecret, with(func(r *actioncall.Request) { r.Intent = "" })},
		{"no requested_at", testSecret, with(func(r *actioncall.Request) { r.RequestedAt = time.Time{} })},
		{"data not encodable", testSecret, with(func(r *actioncall.Request) { r.Data = map[string]any{"c": make(chan int)} })},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := devClient().Call(context.Background(), srv.URL, []byte(tc.secret), tc.req)
			if got.Kind != actioncall.Failed || !errors.Is(err, actioncall.ErrInvalidRequest) {
				t.Errorf("Call = %s, %v; want failed, ErrInvalidRequest", got.Kind, err)
			}
			checkKindMatchesErr(t, got, err)
		})
	}
	t.Cleanup(func() {
		if n := len(calls()); n != 0 {
			t.Errorf("server got %d calls, want 0", n)
		}
	})
}

func TestCallConcurrent(t *testing.T) {
	t.Parallel()
	srv, calls := recordingServer(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = fmt.Fprintf(w, `{"reply":"done %s"}`, r.Header.Get(actioncall.HeaderIdempotencyKey))
	})
	c := devClient()
	const n = 40
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			req := sampleRequest()
			req.ActionID = fmt.Sprintf("act_%d", i)
			got, err := c.Call(context.Background(), srv.URL, []byte(testSecret), req)
			if err != nil || got.Reply != "done "+req.ActionID {
				errs <- fmt.Errorf("call %d = %+v, %v", i, got, err)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	got := calls()
	if len(got) != n {
		t.Fatalf("server got %d calls, want %d", len(got), n)
	}
	for _, r := range got {
		key := r.header.Get(actioncall.HeaderIdempotencyKey)
		if err := actioncall.Verify([]byte(testSecret), r.body, key, r.header.Get(actioncall.HeaderSignature), time.Now()); err != nil {
			t.Errorf("call %s: signature does not verify: %v", key, err)
		}
	}
}

func TestErrorText(t *testing.T) {
	t.Parallel()
	e := &actioncall.Error{Kind: actioncall.ErrRetryable, HTTPStatus: 503, RetryAfter: 7 * time.Second,
		Reason: "the business could not answer now"}
	const want = "action call retryable (HTTP 503): the business could not answer now (retry after 7s)"
	if e.Error() != want {
		t.Errorf("Error() = %q, want %q", e.Error(), want)
	}
}

func TestCallOverHTTPSWithTransportStillRefusesRedirects(t *testing.T) {
	t.Parallel()
	var hits sync.Map
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Store(r.URL.Path, true)
		if r.URL.Path == "/old" {
			http.Redirect(w, r, "/new", http.StatusPermanentRedirect)
			return
		}
		_, _ = io.WriteString(w, `{"reply":"ok"}`)
	}))
	defer srv.Close()
	// The test server's certificate is trusted through the wrapper, which gets the client's
	// own transport.
	c := devClient(actioncall.WithTransportWrapper(func(rt http.RoundTripper) http.RoundTripper {
		tr := rt.(*http.Transport)
		tr.TLSClientConfig = srv.Client().Transport.(*http.Transport).TLSClientConfig
		return tr
	}))

	got, err := c.Call(context.Background(), srv.URL+"/new", []byte(testSecret), sampleRequest())
	if diff := cmp.Diff(actioncall.Result{Kind: actioncall.Done, Reply: "ok", HTTPStatus: 200}, got); diff != "" || err != nil {
		t.Errorf("https call: err %v, result (-want, +got):\n%s", err, diff)
	}
	hits.Delete("/new")
	got, err = c.Call(context.Background(), srv.URL+"/old", []byte(testSecret), sampleRequest())
	if got.Kind != actioncall.Failed || !errors.Is(err, actioncall.ErrRedirect) {
		t.Errorf("redirect = %s, %v; want failed, ErrRedirect", got.Kind, err)
	}
	if _, ok := hits.Load("/new"); ok {
		t.Error("the redirect was followed")
	}
}
