package loadgen_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wapipe/wapipe/internal/graph/graphfake"
	"github.com/wapipe/wapipe/internal/keyedid"
	"github.com/wapipe/wapipe/internal/loadgen"
	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/internal/whatsapp"
	"github.com/wapipe/wapipe/tasks"
)

func TestSummarize(t *testing.T) {
	t.Parallel()
	ms := func(ns ...int) []time.Duration {
		out := make([]time.Duration, len(ns))
		for i, n := range ns {
			out[i] = time.Duration(n) * time.Millisecond
		}
		return out
	}
	hundred := make([]int, 100)
	for i := range hundred {
		hundred[i] = 100 - i // 100 … 1, unsorted on purpose
	}
	tests := []struct {
		name string
		in   []time.Duration
		want loadgen.Summary
	}{
		{name: "empty", in: nil, want: loadgen.Summary{}},
		{name: "one", in: ms(7), want: loadgen.Summary{Count: 1, Min: 7 * time.Millisecond, Mean: 7 * time.Millisecond,
			P50: 7 * time.Millisecond, P95: 7 * time.Millisecond, P99: 7 * time.Millisecond, Max: 7 * time.Millisecond}},
		{name: "1 to 100", in: ms(hundred...), want: loadgen.Summary{Count: 100, Min: time.Millisecond, Mean: 50500 * time.Microsecond,
			P50: 50 * time.Millisecond, P95: 95 * time.Millisecond, P99: 99 * time.Millisecond, Max: 100 * time.Millisecond}},
		{name: "outlier", in: ms(1, 1, 1, 1, 1, 1, 1, 1, 1, 1000), want: loadgen.Summary{Count: 10, Min: time.Millisecond,
			Mean: 100900 * time.Microsecond, P50: time.Millisecond, P95: time.Second, P99: time.Second, Max: time.Second}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, loadgen.Summarize(tt.in)); diff != "" {
				t.Errorf("Summarize (-want, +got):\n%s", diff)
			}
		})
	}
}

func TestCheckLocal(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		url string
		ok  bool
	}{
		{"http://127.0.0.1:8080/webhooks/whatsapp", true},
		{"http://127.3.2.1/x", true},
		{"http://localhost:8080", true},
		{"http://[::1]:8080/", true},
		{"http://10.0.0.5:8080/", false},
		{"http://192.168.1.1/", false},
		{"https://example.com/webhooks/whatsapp", false},
		{"127.0.0.1:8080", false},
		{"", false},
	} {
		if err := loadgen.CheckLocal(tt.url); (err == nil) != tt.ok {
			t.Errorf("CheckLocal(%q) = %v, want ok=%v", tt.url, err, tt.ok)
		}
	}
}

// fakePipeline is a webhook that checks signatures and, for every accepted message, has the fake
// Graph API receive the reply wapipe would send, keyed with keyer (the development key's when
// nil, as the worker's); every tenth request is answered 503.
type fakePipeline struct {
	t       *testing.T
	graph   *graphfake.Fake
	keyer   *keyedid.Keyer
	n       atomic.Int64
	replies atomic.Int64
}

func (p *fakePipeline) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if r.Header.Get("X-Hub-Signature-256") != whatsapp.Sign(body, "s3cret") {
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	if p.n.Add(1)%10 == 0 {
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	pl, err := whatsapp.Parse(body)
	if err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	msgs, _ := whatsapp.Normalize(pl)
	for _, m := range msgs {
		// Half the replies carry the key, half only quote the message: both must match.
		send := map[string]any{"messaging_product": "whatsapp", "to": m.From, "type": "text",
			"text": map[string]any{"body": "ack"}}
		if p.replies.Add(1)%2 == 0 {
			k := p.keyer
			if k == nil {
				k = keyedid.Dev()
			}
			send["biz_opaque_callback_data"] = tasks.IdempotencyKey(k, m.ID)
		} else {
			send["context"] = map[string]any{"message_id": m.ID}
		}
		b, _ := json.Marshal(send)
		req := httptest.NewRequest(http.MethodPost, "/v24.0/"+m.PhoneNumberID+"/messages", bytes.NewReader(b))
		req.Header.Set("Authorization", "Bearer x")
		rec := httptest.NewRecorder()
		p.graph.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			p.t.Errorf("fake graph answered %d: %s", rec.Code, rec.Body)
		}
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprint(w, `{"status":"accepted"}`)
}

func TestRunAndWaitReplies(t *testing.T) {
	t.Parallel()
	graph := graphfake.New()
	graphSrv := graph.NewTestServer()
	defer graphSrv.Close()
	// The stack's worker keys its replies with its LOG_HASH_KEY: the wait must key them alike.
	h, err := logging.NewHasher("a-stack-key-of-at-least-thirty-two-bytes")
	if err != nil {
		t.Fatal(err)
	}
	keyer := keyedid.New(h)
	hook := httptest.NewServer(&fakePipeline{t: t, graph: graph, keyer: keyer})
	defer hook.Close()

	var progress atomic.Int64
	ctx := context.Background()
	res, err := loadgen.Run(ctx, loadgen.Config{
		URL: hook.URL, Secret: "s3cret", N: 40, Concurrency: 4, Duration: 20 * time.Second,
		Progress: func(loadgen.Progress) { progress.Add(1) }, ProgressEvery: time.Millisecond,
	})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if diff := cmp.Diff(map[int]int{200: 36, 503: 4}, res.Codes); diff != "" {
		t.Errorf("status codes (-want, +got):\n%s", diff)
	}
	if res.Started != 40 || res.Answered != 40 || res.Errors != 0 || res.StoppedEarly != "" {
		t.Errorf("started %d, answered %d, errors %d, stopped %q; want 40, 40, 0, \"\"", res.Started, res.Answered, res.Errors, res.StoppedEarly)
	}
	if res.Latency.Count != 40 || res.Latency.P50 <= 0 || res.Latency.P50 > res.Latency.P99 || res.Latency.P99 > res.Latency.Max {
		t.Errorf("latency summary %+v is not ordered", res.Latency)
	}
	if res.Throughput <= 0 || len(res.Sent) != 36 {
		t.Errorf("throughput %.1f/s, %d accepted; want > 0 and 36", res.Throughput, len(res.Sent))
	}

	replies, err := loadgen.WaitReplies(ctx, loadgen.ReplyConfig{GraphURL: graphSrv.URL + "/v24.0", Sent: res.Sent,
		Timeout: 10 * time.Second, Poll: 10 * time.Millisecond, Keyer: keyer})
	if err != nil {
		t.Fatalf("WaitReplies: %v", err)
	}
	if replies.Want != 36 || replies.Seen != 36 || replies.Duplicates != 0 || len(replies.Missing) != 0 {
		t.Errorf("replies: want %d, seen %d, duplicates %d, missing %v; want 36 seen, none duplicate or missing",
			replies.Want, replies.Seen, replies.Duplicates, replies.Missing)
	}
	if replies.Latency.Count != 36 || replies.Latency.Min < 0 {
		t.Errorf("end-to-end latency %+v: want 36 non-negative samples", replies.Latency)
	}
}

func TestRunStopsAtDurationCap(t *testing.T) {
	t.Parallel()
	graph := graphfake.New()
	hook := httptest.NewServer(&fakePipeline{t: t, graph: graph})
	defer hook.Close()
	start := time.Now()
	res, err := loadgen.Run(context.Background(), loadgen.Config{
		URL: hook.URL, Secret: "s3cret", N: 10_000, Concurrency: 2, Rate: 100, Duration: 300 * time.Millisecond,
	})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("run took %v, want it to stop soon after the 300ms cap", took)
	}
	// 100/s for 0.3 s starts about 30; how many exactly depends on the machine's load, so only the
	// cause and a bound far from N are asserted.
	if res.StoppedEarly != "duration cap" || res.Started >= 100 || res.Started < 1 {
		t.Errorf("stopped %q after starting %d; want the duration cap after roughly 30 (100/s for 0.3s)", res.StoppedEarly, res.Started)
	}
	if res.Answered+res.Errors != res.Started {
		t.Errorf("answered %d + errors %d != started %d: a request was lost", res.Answered, res.Errors, res.Started)
	}
}

func TestRunRefusesBadConfig(t *testing.T) {
	t.Parallel()
	for _, cfg := range []loadgen.Config{
		{URL: "http://127.0.0.1:1", N: 0, Concurrency: 1, Duration: time.Second},
		{URL: "http://127.0.0.1:1", N: 1, Concurrency: 0, Duration: time.Second},
		{URL: "http://127.0.0.1:1", N: 1, Concurrency: 1},
		{URL: "http://127.0.0.1:1", N: loadgen.MaxMessages + 1, Concurrency: 1, Duration: time.Second},
	} {
		if _, err := loadgen.Run(context.Background(), cfg); err == nil {
			t.Errorf("Run(%+v) succeeded, want a configuration error", cfg)
		}
	}
}

// TestRunCalls: every call is made once, at most concurrency at a time, and failures are counted
// apart from the latencies.
func TestRunCalls(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	seen := map[int]int{}
	inFlight, most := 0, 0
	res := loadgen.RunCalls(context.Background(), 50, 4, func(_ context.Context, i int) error {
		mu.Lock()
		seen[i]++
		inFlight++
		most = max(most, inFlight)
		mu.Unlock()
		time.Sleep(time.Millisecond)
		mu.Lock()
		inFlight--
		mu.Unlock()
		if i%10 == 0 {
			return errors.New("boom")
		}
		return nil
	})
	if len(seen) != 50 || res.Calls != 50 || res.Errors != 5 || res.Latency.Count != 45 {
		t.Errorf("calls %d (distinct %d), errors %d, latencies %d; want 50, 50, 5, 45", res.Calls, len(seen), res.Errors, res.Latency.Count)
	}
	for i, n := range seen {
		if n != 1 {
			t.Errorf("call %d made %d times", i, n)
		}
	}
	if most > 4 {
		t.Errorf("%d calls in flight at once, want at most 4", most)
	}
}

// TestCallResultAdd: rounds folded together count as one run of all their calls.
func TestCallResultAdd(t *testing.T) {
	t.Parallel()
	var r loadgen.CallResult
	r.Add(loadgen.CallResult{Calls: 2, Elapsed: time.Second, Latencies: []time.Duration{time.Millisecond, 3 * time.Millisecond}})
	r.Add(loadgen.CallResult{Calls: 3, Errors: 1, Elapsed: time.Second, Latencies: []time.Duration{2 * time.Millisecond, 4 * time.Millisecond}, FirstErrors: []string{"boom"}})
	if r.Calls != 5 || r.Errors != 1 || r.Latency.Count != 4 || r.Latency.P50 != 2*time.Millisecond || r.Throughput != 2 || len(r.FirstErrors) != 1 {
		t.Errorf("folded result = %+v", r)
	}
}
