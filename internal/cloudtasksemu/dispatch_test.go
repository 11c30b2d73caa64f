package cloudtasksemu

import (
	"context"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"cloud.google.com/go/cloudtasks/apiv2/cloudtaskspb"
	cloudtasksbeta "cloud.google.com/go/cloudtasks/apiv2beta3"
	betapb "cloud.google.com/go/cloudtasks/apiv2beta3/cloudtaskspb"
	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/fieldmaskpb"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// fast is a retry config with short backoffs for tests.
func fast(attempts int32, minB, maxB time.Duration, doublings int32) *cloudtaskspb.RetryConfig {
	return &cloudtaskspb.RetryConfig{MaxAttempts: attempts, MinBackoff: dur(minB), MaxBackoff: dur(maxB), MaxDoublings: doublings}
}

func TestDispatchHeaders(t *testing.T) {
	t.Parallel()
	c := client(t, shared(t))
	tg := newTarget(t, func(n int, w http.ResponseWriter, r *http.Request) {
		if n == 0 {
			w.WriteHeader(http.StatusBadRequest) // a handler answer: counts as an execution
			return
		}
		if n == 1 {
			w.WriteHeader(http.StatusInternalServerError) // 5xx: not an execution
			return
		}
	})
	q := mkQueue(t, c, parent(), "hdr", nil, fast(5, 10*time.Millisecond, 10*time.Millisecond, 0))
	tk := httpTask(q, "task-1", tg.URL+"/internal/process_inbound")
	tk.GetHttpRequest().Body = []byte(`{"x":1}`)
	tk.GetHttpRequest().Headers = map[string]string{
		"Content-Type":          "application/json",
		"X-Internal-Token":      "secret",
		"X-Correlation-ID":      "corr-1",
		"User-Agent":            "not-me",
		"X-CloudTasks-TaskName": "spoofed",
	}
	created := mkTask(t, c, q, tk)
	eta := formatETA(created.GetScheduleTime().AsTime().UnixNano())
	hits := tg.waitHits(t, 3, 10*time.Second)

	pick := func(h http.Header) map[string]string {
		out := map[string]string{}
		for _, k := range []string{"Content-Type", "X-Internal-Token", "X-Correlation-Id", "User-Agent",
			"X-Cloudtasks-Queuename", "X-Cloudtasks-Taskname", "X-Cloudtasks-Taskretrycount",
			"X-Cloudtasks-Taskexecutioncount", "X-Cloudtasks-Tasketa", "X-Cloudtasks-Taskpreviousresponse",
			"X-Cloudtasks-Taskretryreason"} {
			if v := h.Values(k); len(v) > 0 {
				out[k] = v[0]
				if len(v) > 1 {
					out[k] += " (repeated)"
				}
			}
		}
		return out
	}
	base := map[string]string{
		"Content-Type":           "application/json",
		"X-Internal-Token":       "secret",
		"X-Correlation-Id":       "corr-1",
		"User-Agent":             "Google-Cloud-Tasks",
		"X-Cloudtasks-Queuename": "hdr",
		"X-Cloudtasks-Taskname":  "task-1",
	}
	with := func(kv ...string) map[string]string {
		m := map[string]string{}
		for k, v := range base {
			m[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	if hits[0].method != http.MethodPost || hits[0].path != "/internal/process_inbound" || hits[0].body != `{"x":1}` {
		t.Errorf("first request = %s %s %q, want POST /internal/process_inbound {\"x\":1}", hits[0].method, hits[0].path, hits[0].body)
	}
	want := []map[string]string{
		with("X-Cloudtasks-Taskretrycount", "0", "X-Cloudtasks-Taskexecutioncount", "0", "X-Cloudtasks-Tasketa", eta),
		with("X-Cloudtasks-Taskretrycount", "1", "X-Cloudtasks-Taskexecutioncount", "1",
			"X-Cloudtasks-Taskpreviousresponse", "400", "X-Cloudtasks-Taskretryreason", "InvalidArgument"),
		with("X-Cloudtasks-Taskretrycount", "2", "X-Cloudtasks-Taskexecutioncount", "1",
			"X-Cloudtasks-Taskpreviousresponse", "500", "X-Cloudtasks-Taskretryreason", "Internal"),
	}
	var got []map[string]string
	for i, h := range hits[:3] {
		m := pick(h.header)
		if i > 0 {
			// A retry's ETA is its own schedule time; check it parses and moves forward.
			prev, _ := strconv.ParseFloat(got[i-1]["X-Cloudtasks-Tasketa"], 64)
			cur, err := strconv.ParseFloat(m["X-Cloudtasks-Tasketa"], 64)
			if err != nil || cur <= prev {
				t.Errorf("attempt %d: ETA %q not after %v", i+1, m["X-Cloudtasks-Tasketa"], prev)
			}
			want[i]["X-Cloudtasks-Tasketa"] = m["X-Cloudtasks-Tasketa"]
		}
		got = append(got, m)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("headers per attempt (-want, +got):\n%s", diff)
	}
}

func TestRetryScheduleAndMaxAttempts(t *testing.T) {
	t.Parallel()
	c := client(t, shared(t))
	tg := newTarget(t, func(_ int, w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) })
	policy := retryPolicy{maxAttempts: 6, minBackoff: 40 * time.Millisecond, maxBackoff: 250 * time.Millisecond, maxDoublings: 2}
	q := mkQueue(t, c, parent(), "retry", nil, fast(policy.maxAttempts, policy.minBackoff, policy.maxBackoff, policy.maxDoublings))
	mkTask(t, c, q, httpTask(q, "doomed", tg.URL))

	// After the sixth failure the task is given up, and its name is then "recently" gone.
	eventually(t, 10*time.Second, func() bool {
		_, err := c.GetTask(context.Background(), &cloudtaskspb.GetTaskRequest{Name: q + "/tasks/doomed"})
		return status.Code(err) == codes.NotFound
	})
	hits := tg.snapshot()
	if len(hits) != 6 {
		t.Fatalf("attempts = %d, want max_attempts = 6", len(hits))
	}
	for i := 1; i < len(hits); i++ {
		// Each retry's schedule time (its X-CloudTasks-TaskETA) is the failed attempt's end plus the
		// backoff. Measured from when the target received the failed attempt, it holds the backoff
		// plus only the failure answer's way back: unlike the arrival of the retry, it does not
		// depend on how soon a loaded machine gets round to dispatching it.
		eta, err := strconv.ParseFloat(hits[i].header.Get("X-Cloudtasks-Tasketa"), 64)
		if err != nil {
			t.Fatalf("attempt %d: ETA %q: %v", i+1, hits[i].header.Get("X-Cloudtasks-Tasketa"), err)
		}
		gap := time.Unix(0, int64(eta*1e9)).Sub(hits[i-1].at)
		want := backoff(policy, i) // 40, 80, 160, 250 (capped from 320), 250 ms
		if gap < want-3*time.Millisecond || gap > want+60*time.Millisecond {
			t.Errorf("retry %d scheduled %v after the failed attempt, want %v (+ the answer's way back)", i, gap, want)
		}
		if arrived := hits[i].at.Sub(hits[i-1].at); arrived < want-3*time.Millisecond {
			t.Errorf("attempt %d arrived %v after the previous one, sooner than its backoff %v", i+1, arrived, want)
		}
	}
}

func TestRetryAfterIsHonoured(t *testing.T) {
	t.Parallel()
	for _, code := range []int{http.StatusTooManyRequests, http.StatusServiceUnavailable} {
		t.Run(strconv.Itoa(code), func(t *testing.T) {
			t.Parallel()
			c := client(t, shared(t))
			tg := newTarget(t, func(n int, w http.ResponseWriter, _ *http.Request) {
				if n == 0 {
					w.Header().Set("Retry-After", "1")
					w.WriteHeader(code)
				}
			})
			q := mkQueue(t, c, parent(), "ra", nil, fast(5, 10*time.Millisecond, 10*time.Millisecond, 0))
			mkTask(t, c, q, httpTask(q, "", tg.URL))
			hits := tg.waitHits(t, 2, 10*time.Second)
			if gap := hits[1].at.Sub(hits[0].at); gap < time.Second {
				t.Errorf("retry came after %v, want at least the 1s of Retry-After", gap)
			}
		})
	}
}

func TestDispatchDeadlineRetries(t *testing.T) {
	t.Parallel()
	c := client(t, shared(t))
	cancelled := make(chan struct{}, 1)
	tg := newTarget(t, func(n int, w http.ResponseWriter, r *http.Request) {
		if n == 0 {
			select {
			case <-r.Context().Done():
				cancelled <- struct{}{}
			case <-time.After(5 * time.Second):
			}
		}
	})
	q := mkQueue(t, c, parent(), "deadline", nil, fast(3, 10*time.Millisecond, 10*time.Millisecond, 0))
	tk := httpTask(q, "slow", tg.URL)
	tk.DispatchDeadline = dur(150 * time.Millisecond)
	mkTask(t, c, q, tk)
	hits := tg.waitHits(t, 2, 10*time.Second)
	select {
	case <-cancelled:
	case <-time.After(5 * time.Second):
		t.Fatal("the first attempt's request was not cancelled at the dispatch deadline")
	}
	if gap := hits[1].at.Sub(hits[0].at); gap < 150*time.Millisecond || gap > 2*time.Second {
		t.Errorf("retry after %v, want the 150ms deadline plus the 10ms backoff", gap)
	}
	if got := hits[1].header.Get(headerRetryReason); got != "DeadlineExceeded" {
		t.Errorf("retry reason = %q, want DeadlineExceeded", got)
	}
	if got := hits[1].header.Get(headerPreviousResponse); got != "" {
		t.Errorf("previous response = %q, want none: there was no response", got)
	}
}

func TestRateLimitAndBurst(t *testing.T) {
	t.Parallel()
	c := client(t, shared(t))
	tg := newTarget(t, nil)
	const rate, n = 40.0, 100 // burst derived: 40
	q := mkQueue(t, c, parent(), "rate", &cloudtaskspb.RateLimits{MaxDispatchesPerSecond: rate, MaxConcurrentDispatches: 100}, nil)
	// Create every task before the queue may dispatch them, so the burst is observable.
	if _, err := c.PauseQueue(context.Background(), &cloudtaskspb.PauseQueueRequest{Name: q}); err != nil {
		t.Fatalf("PauseQueue: %v", err)
	}
	for range n {
		mkTask(t, c, q, httpTask(q, "", tg.URL))
	}
	if _, err := c.ResumeQueue(context.Background(), &cloudtaskspb.ResumeQueueRequest{Name: q}); err != nil {
		t.Fatalf("ResumeQueue: %v", err)
	}
	hits := tg.waitHits(t, n, 20*time.Second)
	burst := int(maxBurstSize(rate))
	start := hits[0].at
	// Token bucket: by time d after the first dispatch, at most burst + rate*d dispatches. Times are
	// taken where requests arrive, so a loaded machine's delivery jitter (a late first arrival makes
	// the rest look early) is allowed for: 100 ms of it.
	const jitter = 0.1
	for i, h := range hits {
		d := h.at.Sub(start).Seconds()
		if allowed := float64(burst) + rate*(d+jitter) + 1; float64(i+1) > allowed {
			t.Fatalf("dispatch %d at +%.3fs exceeds burst %d + rate %v/s", i+1, d, burst, rate)
		}
	}
	// And the bucket was actually used: the burst left at once, the rest at the rate.
	if d := hits[burst-1].at.Sub(start); d > 500*time.Millisecond {
		t.Errorf("the first %d dispatches took %v, want a burst", burst, d)
	}
	total := hits[n-1].at.Sub(start).Seconds()
	if want := float64(n-burst) / rate; total < want*0.9 || total > want*1.5 {
		t.Errorf("%d dispatches took %.2fs, want about %.2fs", n, total, want)
	}
}

func TestConcurrencyCap(t *testing.T) {
	t.Parallel()
	c := client(t, shared(t))
	var inflight, peak atomic.Int32
	tg := newTarget(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		cur := inflight.Add(1)
		defer inflight.Add(-1)
		for {
			p := peak.Load()
			if cur <= p || peak.CompareAndSwap(p, cur) {
				break
			}
		}
		time.Sleep(15 * time.Millisecond) // the handler's work
	})
	q := mkQueue(t, c, parent(), "conc", &cloudtaskspb.RateLimits{MaxDispatchesPerSecond: 500, MaxConcurrentDispatches: 3}, nil)
	for range 30 {
		mkTask(t, c, q, httpTask(q, "", tg.URL))
	}
	tg.waitHits(t, 30, 20*time.Second)
	eventually(t, 5*time.Second, func() bool { return inflight.Load() == 0 })
	if p := peak.Load(); p != 3 {
		t.Errorf("peak concurrency = %d, want max_concurrent_dispatches = 3", p)
	}
}

func TestNameReservation(t *testing.T) {
	t.Parallel()
	c := client(t, shared(t))
	ctx := context.Background()
	tg := newTarget(t, nil)
	q := mkQueue(t, c, parent(), "names", nil, nil)

	mkTask(t, c, q, httpTask(q, "done", tg.URL))
	eventually(t, 5*time.Second, func() bool {
		_, err := c.GetTask(ctx, &cloudtaskspb.GetTaskRequest{Name: q + "/tasks/done"})
		return status.Code(err) == codes.NotFound
	})
	_, err := c.GetTask(ctx, &cloudtaskspb.GetTaskRequest{Name: q + "/tasks/done"})
	if got := status.Convert(err).Message(); got != msgTaskRecentlyGone {
		t.Errorf("GetTask of a completed task: %q, want %q", got, msgTaskRecentlyGone)
	}

	later := httpTask(q, "deleted", tg.URL)
	later.ScheduleTime = timestamppb.New(time.Now().Add(time.Hour))
	mkTask(t, c, q, later)
	if err := c.DeleteTask(ctx, &cloudtaskspb.DeleteTaskRequest{Name: q + "/tasks/deleted"}); err != nil {
		t.Fatalf("DeleteTask: %v", err)
	}

	for _, id := range []string{"done", "deleted"} {
		_, err := c.CreateTask(ctx, &cloudtaskspb.CreateTaskRequest{Parent: q, Task: httpTask(q, id, tg.URL)})
		if status.Code(err) != codes.AlreadyExists {
			t.Errorf("re-creating %s: %v, want AlreadyExists", id, err)
		}
	}
	if n := tg.count(); n != 1 {
		t.Errorf("target got %d requests, want 1", n)
	}
}

func TestNameReservationExpires(t *testing.T) {
	t.Parallel()
	emu, err := Start(context.Background(), Options{NameReservation: 300 * time.Millisecond})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(emu.Stop)
	c := client(t, emu)
	q := mkQueue(t, c, parent(), "names", nil, nil)
	later := func() *cloudtaskspb.Task {
		tk := httpTask(q, "again", "http://127.0.0.1:1/")
		tk.ScheduleTime = timestamppb.New(time.Now().Add(time.Hour))
		return tk
	}
	mkTask(t, c, q, later())
	if err := c.DeleteTask(context.Background(), &cloudtaskspb.DeleteTaskRequest{Name: q + "/tasks/again"}); err != nil {
		t.Fatalf("DeleteTask: %v", err)
	}
	start := time.Now()
	eventually(t, 5*time.Second, func() bool {
		_, err := c.CreateTask(context.Background(), &cloudtaskspb.CreateTaskRequest{Parent: q, Task: later()})
		return err == nil
	})
	if waited := time.Since(start); waited < 250*time.Millisecond {
		t.Errorf("name was free again after %v, want the 300ms reservation", waited)
	}
}

func TestOIDCToken(t *testing.T) {
	t.Parallel()
	emu := shared(t)
	c := client(t, emu)
	tg := newTarget(t, nil)
	q := mkQueue(t, c, parent(), "oidc", nil, nil)
	const email = "tasks@wapipe-local.iam.gserviceaccount.com"
	tests := []struct {
		name, audience, wantAud string
	}{
		{"audience defaults to the url", "", tg.URL + "/internal/process_outbound"},
		{"explicit audience", "https://worker.example", "https://worker.example"},
	}
	ctx := context.Background()
	provider, err := oidc.NewProvider(ctx, emu.IssuerURL())
	if err != nil {
		t.Fatalf("oidc.NewProvider(%s): %v", emu.IssuerURL(), err)
	}
	for i, tt := range tests {
		tk := httpTask(q, "", tg.URL+"/internal/process_outbound")
		tk.GetHttpRequest().AuthorizationHeader = &cloudtaskspb.HttpRequest_OidcToken{
			OidcToken: &cloudtaskspb.OidcToken{ServiceAccountEmail: email, Audience: tt.audience}}
		mkTask(t, c, q, tk)
		hits := tg.waitHits(t, i+1, 5*time.Second)
		raw, ok := cutPrefix(hits[i].header.Get("Authorization"), "Bearer ")
		if !ok {
			t.Fatalf("%s: Authorization = %q, want a bearer token", tt.name, hits[i].header.Get("Authorization"))
		}
		tok, err := provider.Verifier(&oidc.Config{ClientID: tt.wantAud}).Verify(ctx, raw)
		if err != nil {
			t.Fatalf("%s: Verify: %v", tt.name, err)
		}
		var claims struct {
			Email         string `json:"email"`
			EmailVerified bool   `json:"email_verified"`
		}
		if err := tok.Claims(&claims); err != nil {
			t.Fatalf("Claims: %v", err)
		}
		if claims.Email != email || !claims.EmailVerified || tok.Subject == "" || tok.Issuer != emu.IssuerURL() {
			t.Errorf("%s: token iss=%q sub=%q email=%q verified=%v", tt.name, tok.Issuer, tok.Subject, claims.Email, claims.EmailVerified)
		}
		if exp := time.Until(tok.Expiry); exp < 50*time.Minute || exp > time.Hour {
			t.Errorf("%s: token expires in %v, want about an hour", tt.name, exp)
		}
	}
	// A token for another audience does not verify.
	raw, _ := cutPrefix(tg.snapshot()[1].header.Get("Authorization"), "Bearer ")
	if _, err := provider.Verifier(&oidc.Config{ClientID: "https://elsewhere"}).Verify(ctx, raw); err == nil {
		t.Error("a token verified for an audience it was not issued for")
	}
}

func cutPrefix(s, prefix string) (string, bool) {
	if len(s) < len(prefix) || s[:len(prefix)] != prefix {
		return "", false
	}
	return s[len(prefix):], true
}

func TestPauseResumePurge(t *testing.T) {
	t.Parallel()
	c := client(t, shared(t))
	ctx := context.Background()
	tg := newTarget(t, nil)
	q := mkQueue(t, c, parent(), "pause", nil, nil)
	if _, err := c.PauseQueue(ctx, &cloudtaskspb.PauseQueueRequest{Name: q}); err != nil {
		t.Fatalf("PauseQueue: %v", err)
	}
	for i := range 3 {
		mkTask(t, c, q, httpTask(q, "t"+strconv.Itoa(i), tg.URL))
	}
	consistently(t, 200*time.Millisecond, func() bool { return tg.count() == 0 })
	if _, err := c.ResumeQueue(ctx, &cloudtaskspb.ResumeQueueRequest{Name: q}); err != nil {
		t.Fatalf("ResumeQueue: %v", err)
	}
	tg.waitHits(t, 3, 5*time.Second)

	// Purge drops every waiting task; none is dispatched once the queue runs again.
	if _, err := c.PauseQueue(ctx, &cloudtaskspb.PauseQueueRequest{Name: q}); err != nil {
		t.Fatalf("PauseQueue: %v", err)
	}
	for i := range 4 {
		mkTask(t, c, q, httpTask(q, "p"+strconv.Itoa(i), tg.URL))
	}
	purged, err := c.PurgeQueue(ctx, &cloudtaskspb.PurgeQueueRequest{Name: q})
	if err != nil || purged.GetPurgeTime() == nil {
		t.Fatalf("PurgeQueue = %v, %v; want a purge_time", purged, err)
	}
	if _, err := c.ListTasks(ctx, &cloudtaskspb.ListTasksRequest{Parent: q}).Next(); err == nil {
		t.Error("ListTasks after purge returned a task")
	}
	if _, err := c.ResumeQueue(ctx, &cloudtaskspb.ResumeQueueRequest{Name: q}); err != nil {
		t.Fatalf("ResumeQueue: %v", err)
	}
	consistently(t, 200*time.Millisecond, func() bool { return tg.count() == 3 })
	// Purged names stay reserved like deleted ones.
	if _, err := c.CreateTask(ctx, &cloudtaskspb.CreateTaskRequest{Parent: q, Task: httpTask(q, "p0", tg.URL)}); status.Code(err) != codes.AlreadyExists {
		t.Errorf("re-creating a purged task: %v, want AlreadyExists", err)
	}
}

func TestRunTask(t *testing.T) {
	t.Parallel()
	c := client(t, shared(t))
	ctx := context.Background()
	tg := newTarget(t, nil)
	q := mkQueue(t, c, parent(), "run", nil, nil)
	if _, err := c.PauseQueue(ctx, &cloudtaskspb.PauseQueueRequest{Name: q}); err != nil {
		t.Fatalf("PauseQueue: %v", err)
	}
	tk := httpTask(q, "later", tg.URL)
	tk.ScheduleTime = timestamppb.New(time.Now().Add(time.Hour))
	mkTask(t, c, q, tk)
	// Paused and scheduled an hour ahead: RunTask dispatches it anyway, as Cloud Tasks does.
	ran, err := c.RunTask(ctx, &cloudtaskspb.RunTaskRequest{Name: q + "/tasks/later"})
	if err != nil {
		t.Fatalf("RunTask: %v", err)
	}
	if ran.GetDispatchCount() != 1 || ran.GetFirstAttempt().GetDispatchTime() == nil {
		t.Errorf("RunTask answered dispatch_count %d, first_attempt %v; want the started attempt", ran.GetDispatchCount(), ran.GetFirstAttempt())
	}
	tg.waitHits(t, 1, 5*time.Second)
	eventually(t, 5*time.Second, func() bool {
		_, err := c.RunTask(ctx, &cloudtaskspb.RunTaskRequest{Name: q + "/tasks/later"})
		return status.Code(err) == codes.NotFound
	})
}

func TestAttemptsVisibleWhilePending(t *testing.T) {
	t.Parallel()
	c := client(t, shared(t))
	ctx := context.Background()
	tg := newTarget(t, func(_ int, w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusInternalServerError) })
	q := mkQueue(t, c, parent(), "attempts", nil, fast(10, time.Hour, time.Hour, 0))
	mkTask(t, c, q, httpTask(q, "fails", tg.URL))
	var got *cloudtaskspb.Task
	eventually(t, 5*time.Second, func() bool {
		var err error
		got, err = c.GetTask(ctx, &cloudtaskspb.GetTaskRequest{Name: q + "/tasks/fails"})
		return err == nil && got.GetResponseCount() == 1
	})
	la := got.GetLastAttempt()
	if got.GetDispatchCount() != 1 || got.GetFirstAttempt().GetDispatchTime() == nil || la.GetResponseTime() == nil {
		t.Fatalf("task after one failure = %v", got)
	}
	if code := codes.Code(la.GetResponseStatus().GetCode()); code != codes.Internal {
		t.Errorf("last_attempt.response_status = %v, want Internal for HTTP 500", code)
	}
	// The retry waits min_backoff (an hour) from the failure.
	if d := got.GetScheduleTime().AsTime().Sub(la.GetResponseTime().AsTime()); d < time.Hour-time.Second || d > time.Hour+time.Second {
		t.Errorf("next schedule_time is %v after the response, want 1h", d)
	}
}

func TestQueueStats(t *testing.T) {
	t.Parallel()
	emu := shared(t)
	c := client(t, emu)
	ctx := context.Background()
	beta, err := cloudtasksbeta.NewClient(ctx, ClientOptions(emu.Addr())...)
	if err != nil {
		t.Fatalf("cloudtasksbeta.NewClient: %v", err)
	}
	t.Cleanup(func() { beta.Close() })

	release := make(chan struct{})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	tg := newTarget(t, func(_ int, w http.ResponseWriter, _ *http.Request) { <-release })
	q := mkQueue(t, c, parent(), "stats", &cloudtaskspb.RateLimits{MaxDispatchesPerSecond: 100, MaxConcurrentDispatches: 2}, nil)
	for range 5 {
		mkTask(t, c, q, httpTask(q, "", tg.URL))
	}
	stats := func() *betapb.QueueStats {
		got, err := beta.GetQueue(ctx, &betapb.GetQueueRequest{Name: q, ReadMask: &fieldmaskpb.FieldMask{Paths: []string{"stats"}}})
		if err != nil {
			t.Fatalf("GetQueue with stats: %v", err)
		}
		return got.GetStats()
	}
	eventually(t, 5*time.Second, func() bool {
		s := stats()
		return s.GetTasksCount() == 5 && s.GetConcurrentDispatchesCount() == 2 && s.GetOldestEstimatedArrivalTime() != nil
	})
	if s := stats(); s.GetEffectiveExecutionRate() != 100 {
		t.Errorf("effective_execution_rate = %v, want 100", s.GetEffectiveExecutionRate())
	}

	// Stats are returned only when the read mask asks for them, as in production.
	plain, err := beta.GetQueue(ctx, &betapb.GetQueueRequest{Name: q})
	if err != nil {
		t.Fatalf("GetQueue: %v", err)
	}
	if plain.GetStats() != nil || plain.GetRateLimits().GetMaxBurstSize() != 100 {
		t.Errorf("GetQueue without mask: stats %v, burst %d; want no stats, burst 100", plain.GetStats(), plain.GetRateLimits().GetMaxBurstSize())
	}

	once.Do(func() { close(release) })
	eventually(t, 5*time.Second, func() bool {
		s := stats()
		return s.GetTasksCount() == 0 && s.GetExecutedLastMinuteCount() == 5 && s.GetConcurrentDispatchesCount() == 0
	})
}

// TestStopEndsEverything checks that no task is dispatched after Stop returns and that every
// goroutine the emulator started has ended.
func TestStopEndsEverything(t *testing.T) {
	// Not parallel: it counts the process's goroutines.
	tg := newTarget(t, func(_ int, w http.ResponseWriter, r *http.Request) {
		select { // a slow handler, so Stop finds requests in flight
		case <-r.Context().Done():
		case <-time.After(200 * time.Millisecond):
		}
	})
	before := runtime.NumGoroutine()

	emu, err := Start(context.Background(), Options{})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	c, err := NewClient(context.Background(), emu.Addr())
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	q := mkQueue(t, c, parent(), "stop", &cloudtaskspb.RateLimits{MaxDispatchesPerSecond: 20, MaxConcurrentDispatches: 5}, fast(100, 10*time.Millisecond, 10*time.Millisecond, 0))
	for range 50 {
		mkTask(t, c, q, httpTask(q, "", tg.URL))
	}
	tg.waitHits(t, 3, 5*time.Second)
	// A client that connects and says nothing must not hold Stop up.
	silent, err := net.Dial("tcp", emu.Addr())
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	defer silent.Close()
	stopStart := time.Now()
	emu.Stop()
	if d := time.Since(stopStart); d > 2*time.Second {
		t.Errorf("Stop took %v", d)
	}
	c.Close()
	n := tg.count()
	consistently(t, 300*time.Millisecond, func() bool { return tg.count() == n })

	eventually(t, 5*time.Second, func() bool {
		tg.CloseClientConnections()
		return runtime.NumGoroutine() <= before
	})
}

func TestRetryLimits(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	tests := []struct {
		name      string
		queue     *cloudtaskspb.RetryConfig
		task      *cloudtaskspb.RetryConfig
		wantCount func(n int) bool
		minSpan   time.Duration
	}{
		{
			// max_attempts is used up after 2, but retrying stops only once max_retry_duration
			// has passed as well.
			name:      "age limit keeps retrying after max_attempts",
			queue:     &cloudtaskspb.RetryConfig{MaxAttempts: 2, MinBackoff: dur(40 * ms), MaxBackoff: dur(40 * ms), MaxRetryDuration: dur(300 * ms)},
			wantCount: func(n int) bool { return n > 2 },
			minSpan:   300 * ms,
		},
		{
			name:      "a task's retry_config overrides the queue's",
			queue:     fast(100, 10*ms, 10*ms, 0),
			task:      &cloudtaskspb.RetryConfig{MaxAttempts: 2, MinBackoff: dur(10 * ms), MaxBackoff: dur(10 * ms)},
			wantCount: func(n int) bool { return n == 2 },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := client(t, shared(t))
			tg := newTarget(t, func(_ int, w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusInternalServerError) })
			q := mkQueue(t, c, parent(), "limits", nil, tt.queue)
			tk := httpTask(q, "t", tg.URL)
			tk.RetryConfig = tt.task
			mkTask(t, c, q, tk)
			eventually(t, 10*time.Second, func() bool {
				_, err := c.GetTask(context.Background(), &cloudtaskspb.GetTaskRequest{Name: q + "/tasks/t"})
				return status.Code(err) == codes.NotFound
			})
			hits := tg.snapshot()
			if !tt.wantCount(len(hits)) {
				t.Errorf("attempts = %d", len(hits))
			}
			// Times are taken where attempts arrive: a first attempt delivered late under load
			// shortens the span seen here by that delay, so 50 ms of jitter is allowed for.
			if span := hits[len(hits)-1].at.Sub(hits[0].at); tt.minSpan > 0 && span < tt.minSpan-50*ms {
				t.Errorf("attempts spanned %v, want at least %v", span, tt.minSpan)
			}
		})
	}
}
