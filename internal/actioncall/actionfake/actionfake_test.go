package actionfake_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wapipe/wapipe/internal/actioncall"
	"github.com/wapipe/wapipe/internal/actioncall/actionfake"
)

const secret = "whsec_0123456789abcdefghijklmnopqrstuvwxyzABCDEFG"

func booking(id string) actioncall.Request {
	return actioncall.Request{
		ActionID: id, TenantID: "acme-bus", Intent: "create_booking",
		Data:           map[string]any{"bus": "01", "customer": "Pak Agus", "price": float64(15000000)},
		From:           actioncall.From{WaID: "6281234567890", Name: "Budi", Role: "admin"},
		ConversationID: "acme-bus_1234_6281234567890",
		RequestedAt:    time.Date(2026, 2, 20, 8, 4, 5, 0, time.UTC),
	}
}

// start serves f on 127.0.0.1 and returns its action URL.
func start(t *testing.T, f *actionfake.Fake) string {
	t.Helper()
	srv := f.NewTestServer()
	t.Cleanup(srv.Close)
	return srv.URL + "/wapipe/actions"
}

func call(t *testing.T, url string, req actioncall.Request) actioncall.Result {
	t.Helper()
	// The fake listens on loopback: the client of the local stack (APP_ENV=dev).
	res, _ := actioncall.NewClient(actioncall.WithDev(true)).Call(context.Background(), url, []byte(secret), req)
	return res
}

func TestDefaultAnswerAndRecord(t *testing.T) {
	t.Parallel()
	f := actionfake.New(secret)
	url := start(t, f)
	res := call(t, url, booking("act_1"))
	if diff := cmp.Diff(actioncall.Result{Kind: actioncall.Done, Reply: "Done: create_booking recorded", HTTPStatus: 200}, res); diff != "" {
		t.Errorf("result (-want, +got):\n%s", diff)
	}
	calls := f.Calls()
	if len(calls) != 1 {
		t.Fatalf("recorded %d calls, want 1", len(calls))
	}
	c := calls[0]
	want := booking("act_1")
	wantBody, _ := want.MarshalJSON()
	if c.Method != "POST" || c.Path != "/wapipe/actions" || !c.Verified || c.Replayed || c.Status != 200 ||
		c.Intent != "create_booking" || c.IdempotencyKey != "act_1" || c.Reply != "Done: create_booking recorded" ||
		c.Body != string(wantBody) || c.Header.Get(actioncall.HeaderSignature) == "" || c.Time.IsZero() {
		t.Errorf("recorded call = %+v", c)
	}
	if diff := cmp.Diff(&want, c.Request); diff != "" {
		t.Errorf("decoded request (-want, +got):\n%s", diff)
	}
	if n := len(f.Executed()); n != 1 {
		t.Errorf("executed %d, want 1", n)
	}
}

func TestWrongSignatureIs401AndKeepsTheScript(t *testing.T) {
	t.Parallel()
	f := actionfake.New("whsec_another")
	url := start(t, f)
	f.Script(actionfake.Answer{Status: 500})
	res := call(t, url, booking("act_1"))
	if res.Kind != actioncall.Refused || res.HTTPStatus != 401 {
		t.Errorf("result = %+v, want refused 401", res)
	}
	c := f.Calls()[0]
	if c.Verified || c.Request != nil || c.Status != 401 {
		t.Errorf("recorded call = %+v, want unverified 401 without request", c)
	}
	f.SetSecret(secret)
	if res := call(t, url, booking("act_1")); res.HTTPStatus != 500 {
		t.Errorf("after the right secret: status %d, want the scripted 500", res.HTTPStatus)
	}
	if n := len(f.Executed()); n != 0 {
		t.Errorf("executed %d, want 0", n)
	}
}

// TestRefusesForgedSignatures: the fake checks what a business should (the contract's
// Stripe-style header): the key, the body, the Idempotency-Key and a t at most 5 minutes old.
func TestRefusesForgedSignatures(t *testing.T) {
	t.Parallel()
	now := time.Now()
	f := actionfake.New(secret, actionfake.WithClock(func() time.Time { return now }))
	url := start(t, f)
	body, _ := booking("act_1").MarshalJSON()
	otherBody, _ := booking("act_1").MarshalJSON()
	otherBody = bytes.Replace(otherBody, []byte(`"bus":"01"`), []byte(`"bus":"02"`), 1)
	cases := []struct {
		name      string
		key       string // the Idempotency-Key sent
		sig       string
		body      []byte
		status    int
		wantError error // the recorded signature error; nil when it verifies
	}{
		{"signed as sent", "act_1", actioncall.Sign([]byte(secret), now, "act_1", body), body, 200, nil},
		{"t 4 minutes old", "act_1", actioncall.Sign([]byte(secret), now.Add(-4*time.Minute), "act_1", body), body, 200, nil},
		{"wrong key", "act_1", actioncall.Sign([]byte("whsec_other"), now, "act_1", body), body, 401, actioncall.ErrSignatureInvalid},
		{"changed Idempotency-Key", "act_1-again", actioncall.Sign([]byte(secret), now, "act_1", body), body, 401, actioncall.ErrSignatureInvalid},
		{"changed body", "act_1", actioncall.Sign([]byte(secret), now, "act_1", body), otherBody, 401, actioncall.ErrSignatureInvalid},
		{"stale t (6 minutes)", "act_1", actioncall.Sign([]byte(secret), now.Add(-6*time.Minute), "act_1", body), body, 401, actioncall.ErrSignatureStale},
		{"t 6 minutes ahead", "act_1", actioncall.Sign([]byte(secret), now.Add(6*time.Minute), "act_1", body), body, 401, actioncall.ErrSignatureStale},
		{"t changed to now", "act_1", strings.Replace(actioncall.Sign([]byte(secret), now.Add(-time.Hour), "act_1", body),
			fmt.Sprint(now.Add(-time.Hour).Unix()), fmt.Sprint(now.Unix()), 1), body, 401, actioncall.ErrSignatureInvalid},
		{"the old body-only header", "act_1", "sha256=" + strings.Repeat("0", 64), body, 401, actioncall.ErrSignatureInvalid},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(tc.body))
			req.Header.Set(actioncall.HeaderSignature, tc.sig)
			req.Header.Set(actioncall.HeaderIdempotencyKey, tc.key)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.status {
				t.Errorf("status %d, want %d", resp.StatusCode, tc.status)
			}
			calls := f.Calls()
			c := calls[len(calls)-1]
			if c.Verified != (tc.wantError == nil) {
				t.Errorf("verified = %v (%s)", c.Verified, c.SignatureError)
			}
			if tc.wantError != nil && !strings.HasPrefix(c.SignatureError, tc.wantError.Error()) {
				t.Errorf("signature error %q, want %q", c.SignatureError, tc.wantError)
			}
		})
	}
	if n := len(f.Executed()); n != 2 {
		t.Errorf("executed %d, want 2 (the genuine calls only)", n)
	}
}

func TestEmptySecretVerifiesNothing(t *testing.T) {
	t.Parallel()
	f := actionfake.New("")
	url := start(t, f)
	if res := call(t, url, booking("act_1")); res.HTTPStatus != 401 {
		t.Errorf("status %d, want 401", res.HTTPStatus)
	}
}

func TestScriptedAnswers(t *testing.T) {
	t.Parallel()
	f := actionfake.New(secret)
	url := start(t, f)
	f.Script(
		actionfake.Answer{Status: 500},
		actionfake.Answer{Status: 503, RetryAfter: "2"},
		actionfake.Answer{Status: 409, Reply: "Bus 03 is already booked"},
		actionfake.Answer{Status: 400},
		actionfake.Answer{Status: 200},
		actionfake.Answer{Body: "OK"},
		actionfake.Answer{Status: 201, Reply: "Booked", Delay: time.Millisecond},
	)
	want := []actioncall.Result{
		{Kind: actioncall.Retry, HTTPStatus: 500},
		{Kind: actioncall.Retry, HTTPStatus: 503, RetryAfter: 2 * time.Second},
		{Kind: actioncall.Refused, HTTPStatus: 409, Reply: "Bus 03 is already booked"},
		{Kind: actioncall.Refused, HTTPStatus: 400},
		{Kind: actioncall.Done, HTTPStatus: 200},
		{Kind: actioncall.Done, HTTPStatus: 200, Note: "answer is not a JSON object: ignored"},
		{Kind: actioncall.Done, HTTPStatus: 201, Reply: "Booked"},
		{Kind: actioncall.Done, HTTPStatus: 200, Reply: "Done: create_booking recorded"}, // script used up
	}
	var got []actioncall.Result
	for i := range want {
		got = append(got, call(t, url, booking(fmt.Sprintf("act_%d", i))))
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("results (-want, +got):\n%s", diff)
	}
	if n := len(f.Executed()); n != 4 {
		t.Errorf("executed %d, want 4 (the 2xx answers)", n)
	}
}

func TestDedupe(t *testing.T) {
	t.Parallel()
	done := actioncall.Result{Kind: actioncall.Done, HTTPStatus: 200, Reply: "Done: create_booking recorded"}
	cases := []struct {
		name         string
		dedupe       bool
		script       []actionfake.Answer
		calls        int
		want         []actioncall.Result
		wantReplayed []bool
		wantExecuted int
	}{
		{"repeat gets the stored answer", true, nil, 3,
			[]actioncall.Result{done, done, done}, []bool{false, true, true}, 1},
		{"5xx is not stored", true, []actionfake.Answer{{Status: 500}, {Status: 500}}, 4,
			[]actioncall.Result{{Kind: actioncall.Retry, HTTPStatus: 500}, {Kind: actioncall.Retry, HTTPStatus: 500}, done, done},
			[]bool{false, false, false, true}, 1},
		{"429 is not stored", true, []actionfake.Answer{{Status: 429}}, 2,
			[]actioncall.Result{{Kind: actioncall.Retry, HTTPStatus: 429}, done}, []bool{false, false}, 1},
		{"refusal is stored", true, []actionfake.Answer{{Status: 409, Reply: "Already booked"}, {Status: 200, Reply: "unused"}}, 2,
			[]actioncall.Result{{Kind: actioncall.Refused, HTTPStatus: 409, Reply: "Already booked"}, {Kind: actioncall.Refused, HTTPStatus: 409, Reply: "Already booked"}},
			[]bool{false, true}, 0},
		{"without dedupe every call runs", false, nil, 2,
			[]actioncall.Result{done, done}, []bool{false, false}, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var opts []actionfake.Option
			if tc.dedupe {
				opts = append(opts, actionfake.WithDedupe())
			}
			f := actionfake.New(secret, opts...)
			url := start(t, f)
			f.Script(tc.script...)
			var got []actioncall.Result
			for range tc.calls {
				got = append(got, call(t, url, booking("act_same")))
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("results (-want, +got):\n%s", diff)
			}
			var replayed []bool
			for _, c := range f.Calls() {
				replayed = append(replayed, c.Replayed)
			}
			if diff := cmp.Diff(tc.wantReplayed, replayed); diff != "" {
				t.Errorf("replayed (-want, +got):\n%s", diff)
			}
			if n := len(f.Executed()); n != tc.wantExecuted {
				t.Errorf("executed %d, want %d", n, tc.wantExecuted)
			}
		})
	}
}

// TestDedupeStoresTheAnswerTheCallerMissed: the business ran the action but the caller gave up
// waiting; the retry gets the stored answer and the action does not run twice. The caller
// gives up only once the call has reached the fake: a fixed short timeout could expire before
// a loaded machine even delivers the request, and then there is nothing to store.
func TestDedupeStoresTheAnswerTheCallerMissed(t *testing.T) {
	t.Parallel()
	f := actionfake.New(secret, actionfake.WithDedupe())
	reached := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case reached <- struct{}{}:
		default:
		}
		f.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	url := srv.URL + "/wapipe/actions"
	f.Script(actionfake.Answer{Status: 200, Reply: "Booked B-17", Delay: time.Minute})

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	callCtx, giveUp := context.WithCancel(ctx)
	go func() {
		select {
		case <-reached:
			giveUp()
		case <-ctx.Done():
		}
	}()
	res, err := actioncall.NewClient(actioncall.WithDev(true)).Call(callCtx, url, []byte(secret), booking("act_1"))
	if res.Kind != actioncall.Retry || !errors.Is(err, context.Canceled) {
		t.Fatalf("first call = %s, %v; want retry after the caller gave up", res.Kind, err)
	}
	if _, err := f.WaitForCalls(ctx, 1); err != nil {
		t.Fatal(err)
	}
	res = call(t, url, booking("act_1"))
	if diff := cmp.Diff(actioncall.Result{Kind: actioncall.Done, HTTPStatus: 200, Reply: "Booked B-17"}, res); diff != "" {
		t.Errorf("retry (-want, +got):\n%s", diff)
	}
	if n := len(f.Executed()); n != 1 {
		t.Errorf("executed %d, want 1", n)
	}
}

func TestDedupeConcurrentSameKey(t *testing.T) {
	t.Parallel()
	f := actionfake.New(secret, actionfake.WithDedupe())
	url := start(t, f)
	f.Script(actionfake.Answer{Status: 200, Reply: "Booked B-17", Delay: 20 * time.Millisecond})
	const n = 20
	results := make([]actioncall.Result, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { results[i] = call(t, url, booking("act_same")) })
	}
	wg.Wait()
	for i, r := range results {
		if diff := cmp.Diff(actioncall.Result{Kind: actioncall.Done, HTTPStatus: 200, Reply: "Booked B-17"}, r); diff != "" {
			t.Errorf("call %d (-want, +got):\n%s", i, diff)
		}
	}
	calls := f.Calls()
	if len(calls) != n || len(f.Executed()) != 1 || calls[0].Replayed {
		t.Errorf("%d calls, %d executed, first replayed %v; want %d, 1, false", len(calls), len(f.Executed()), calls[0].Replayed, n)
	}
}

func TestConcurrentCalls(t *testing.T) {
	t.Parallel()
	f := actionfake.New(secret)
	url := start(t, f)
	const n = 50
	for range n / 2 {
		f.Script(actionfake.Answer{Status: 500})
	}
	kinds := make(chan actioncall.Kind, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { kinds <- call(t, url, booking(fmt.Sprintf("act_%d", i))).Kind })
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := f.WaitForCalls(ctx, n); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	close(kinds)
	count := map[actioncall.Kind]int{}
	for k := range kinds {
		count[k]++
	}
	if diff := cmp.Diff(map[actioncall.Kind]int{actioncall.Retry: n / 2, actioncall.Done: n / 2}, count); diff != "" {
		t.Errorf("kinds (-want, +got):\n%s", diff)
	}
	if got := len(f.Executed()); got != n/2 {
		t.Errorf("executed %d, want %d", got, n/2)
	}
}

func TestRejectsMalformedCalls(t *testing.T) {
	t.Parallel()
	f := actionfake.New(secret)
	url := start(t, f)
	body, _ := booking("act_1").MarshalJSON()
	cases := []struct {
		name   string
		method string
		body   []byte
		key    string
		want   int
	}{
		{"GET", http.MethodGet, nil, "act_1", http.StatusMethodNotAllowed},
		{"signed but not JSON", http.MethodPost, []byte("hello"), "act_1", http.StatusBadRequest},
		{"no Idempotency-Key", http.MethodPost, body, "", http.StatusBadRequest},
		{"Idempotency-Key differs from action_id", http.MethodPost, body, "act_2", http.StatusBadRequest},
		{"well-formed", http.MethodPost, body, "act_1", http.StatusOK},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			req, _ := http.NewRequest(tc.method, url, bytes.NewReader(tc.body))
			req.Header.Set(actioncall.HeaderSignature, actioncall.Sign([]byte(secret), time.Now(), tc.key, tc.body))
			if tc.key != "" {
				req.Header.Set(actioncall.HeaderIdempotencyKey, tc.key)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Errorf("status %d, want %d", resp.StatusCode, tc.want)
			}
		})
	}
}

func TestAdminEndpoints(t *testing.T) {
	t.Parallel()
	f := actionfake.New("whsec_wrong")
	srv := f.NewTestServer()
	defer srv.Close()
	post := func(path, body string) int {
		t.Helper()
		resp, err := http.Post(srv.URL+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, tc := range []struct {
		path, body string
		want       int
	}{
		{"/_fake/config", `{"secret":"` + secret + `","dedupe":true}`, 200},
		{"/_fake/script", `{"n":2,"status":500}`, 200},
		{"/_fake/script", `{"answers":[{"status":409,"reply":"Already booked","delay":"1ms"}]}`, 200},
		{"/_fake/script", `{"n":1,"statsu":500}`, 400},
		{"/_fake/script", `{"n":1,"answers":[{"status":500}]}`, 400},
		{"/_fake/script", `{}`, 400},
		{"/_fake/script", `{"n":1,"delay":"soon"}`, 400},
		{"/_fake/script", `{"n":1,"status":99}`, 400},
		{"/_fake/config", `{"secret":1}`, 400},
		{"/_fake/nothing", `{}`, 404},
	} {
		if got := post(tc.path, tc.body); got != tc.want {
			t.Errorf("POST %s %s = %d, want %d", tc.path, tc.body, got, tc.want)
		}
	}
	// The config took effect (secret, dedupe) and the script is 500, 500, 409.
	url := srv.URL + "/a"
	var statuses []int
	for i := range 4 {
		statuses = append(statuses, call(t, url, booking(fmt.Sprintf("act_%d", i))).HTTPStatus)
	}
	statuses = append(statuses, call(t, url, booking("act_2")).HTTPStatus) // replayed refusal
	if diff := cmp.Diff([]int{500, 500, 409, 200, 409}, statuses); diff != "" {
		t.Errorf("statuses (-want, +got):\n%s", diff)
	}

	resp, err := http.Get(srv.URL + "/_fake/calls")
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Calls []struct {
			IdempotencyKey string              `json:"idempotency_key"`
			Status         int                 `json:"status"`
			Verified       bool                `json:"verified"`
			Replayed       bool                `json:"replayed"`
			Request        *actioncall.Request `json:"request"`
		} `json:"calls"`
	}
	err = json.NewDecoder(resp.Body).Decode(&got)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Calls) != 5 || !got.Calls[4].Replayed || got.Calls[4].Status != 409 ||
		!got.Calls[0].Verified || got.Calls[0].Request == nil || got.Calls[0].Request.Intent != "create_booking" {
		t.Errorf("GET /_fake/calls = %+v", got.Calls)
	}

	if got := post("/_fake/reset", ""); got != 200 {
		t.Fatalf("reset = %d", got)
	}
	if n := len(f.Calls()); n != 0 {
		t.Errorf("%d calls after reset, want 0", n)
	}
	// The stored answers went with the reset; the secret and dedupe stayed.
	if res := call(t, url, booking("act_2")); res.HTTPStatus != 200 || f.Calls()[0].Replayed {
		t.Errorf("after reset: %+v, replayed %v; want a fresh 200", res, f.Calls()[0].Replayed)
	}
}

func TestWaitForCallsHonoursContext(t *testing.T) {
	t.Parallel()
	f := actionfake.New(secret)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	calls, err := f.WaitForCalls(ctx, 1)
	if !errors.Is(err, context.DeadlineExceeded) || len(calls) != 0 {
		t.Errorf("WaitForCalls = %d calls, %v; want 0, deadline exceeded", len(calls), err)
	}
}

func TestServeAndLogLine(t *testing.T) {
	t.Parallel()
	var logs syncBuffer
	f := actionfake.New(secret, actionfake.WithLogger(slog.New(slog.NewJSONHandler(&logs, nil))))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- f.Serve(ctx, l) }()

	res := call(t, "http://"+l.Addr().String()+"/a", booking("act_log_1"))
	if res.Kind != actioncall.Done {
		t.Errorf("call = %+v, want done", res)
	}
	cancel()
	if err := <-served; err != nil {
		t.Errorf("Serve = %v, want nil after the context ended", err)
	}

	out := logs.String()
	for _, want := range []string{`"intent":"create_booking"`, `"action_id":"act_log_1"`, `"status":200`} {
		if !strings.Contains(out, want) {
			t.Errorf("log %s lacks %s", out, want)
		}
	}
	sig := f.Calls()[0].Header.Get(actioncall.HeaderSignature)
	for _, secretish := range []string{secret, "6281234567890", "Budi", "Pak Agus", sig, "Done: create_booking"} {
		if strings.Contains(out, secretish) {
			t.Errorf("log %s contains %q", out, secretish)
		}
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
