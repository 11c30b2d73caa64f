package cloudtasksemu

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	cloudtasks "cloud.google.com/go/cloudtasks/apiv2"
	"cloud.google.com/go/cloudtasks/apiv2/cloudtaskspb"
	"google.golang.org/protobuf/types/known/durationpb"
)

var (
	sharedOnce sync.Once
	sharedEmu  *Server
	sharedErr  error
	projectSeq atomic.Int64
)

// shared returns the emulator most tests use, isolated from each other by project id. It accepts
// short dispatch deadlines so deadline tests stay fast.
func shared(t testing.TB) *Server {
	t.Helper()
	sharedOnce.Do(func() {
		sharedEmu, sharedErr = Start(context.Background(), Options{MinDispatchDeadline: 10 * time.Millisecond})
	})
	if sharedErr != nil {
		t.Fatalf("Start: %v", sharedErr)
	}
	return sharedEmu
}

// client returns an official client for emu, closed with the test.
func client(t testing.TB, emu *Server) *cloudtasks.Client {
	t.Helper()
	c, err := NewClient(context.Background(), emu.Addr())
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// parent returns a location under a project no other test uses.
func parent() string {
	return "projects/p" + strconv.FormatInt(projectSeq.Add(1), 10) + "/locations/us-central1"
}

// mkQueue creates a queue through the API.
func mkQueue(t testing.TB, c *cloudtasks.Client, parent, id string, rl *cloudtaskspb.RateLimits, rc *cloudtaskspb.RetryConfig) string {
	t.Helper()
	q, err := c.CreateQueue(context.Background(), &cloudtaskspb.CreateQueueRequest{
		Parent: parent,
		Queue:  &cloudtaskspb.Queue{Name: parent + "/queues/" + id, RateLimits: rl, RetryConfig: rc},
	})
	if err != nil {
		t.Fatalf("CreateQueue %s: %v", id, err)
	}
	return q.GetName()
}

// httpTask is a task to url, named when id is not empty.
func httpTask(queue, id, url string) *cloudtaskspb.Task {
	t := &cloudtaskspb.Task{MessageType: &cloudtaskspb.Task_HttpRequest{HttpRequest: &cloudtaskspb.HttpRequest{Url: url}}}
	if id != "" {
		t.Name = queue + "/tasks/" + id
	}
	return t
}

func mkTask(t testing.TB, c *cloudtasks.Client, queue string, task *cloudtaskspb.Task) *cloudtaskspb.Task {
	t.Helper()
	out, err := c.CreateTask(context.Background(), &cloudtaskspb.CreateTaskRequest{Parent: queue, Task: task})
	if err != nil {
		t.Fatalf("CreateTask: %v", err)
	}
	return out
}

func dur(d time.Duration) *durationpb.Duration { return durationpb.New(d) }

// hit is one request the target received.
type hit struct {
	at     time.Time
	method string
	path   string
	header http.Header
	body   string
}

// target is an httptest server that records every request and answers with respond (200 when
// nil). respond sees the 0-based index of the request.
type target struct {
	*httptest.Server
	mu      sync.Mutex
	hits    []hit
	arrived chan struct{}
}

func newTarget(t testing.TB, respond func(n int, w http.ResponseWriter, r *http.Request)) *target {
	t.Helper()
	tg := &target{arrived: make(chan struct{}, 100000)}
	tg.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		now := time.Now()
		body, _ := io.ReadAll(r.Body)
		tg.mu.Lock()
		n := len(tg.hits)
		tg.hits = append(tg.hits, hit{at: now, method: r.Method, path: r.URL.Path, header: r.Header.Clone(), body: string(body)})
		tg.mu.Unlock()
		tg.arrived <- struct{}{}
		if respond != nil {
			respond(n, w, r)
		}
	}))
	t.Cleanup(tg.Close)
	return tg
}

func (tg *target) count() int {
	tg.mu.Lock()
	defer tg.mu.Unlock()
	return len(tg.hits)
}

func (tg *target) snapshot() []hit {
	tg.mu.Lock()
	defer tg.mu.Unlock()
	return append([]hit(nil), tg.hits...)
}

// waitHits waits until the target has received n requests.
func (tg *target) waitHits(t testing.TB, n int, timeout time.Duration) []hit {
	t.Helper()
	eventually(t, timeout, func() bool { return tg.count() >= n })
	return tg.snapshot()
}

// eventually polls cond until it holds, failing the test at the deadline.
func eventually(t testing.TB, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %v", timeout)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// consistently checks that cond holds for the whole of d: how a test shows something does not
// happen (no dispatch while paused, none after Stop).
func consistently(t testing.TB, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if !cond() {
			t.Fatalf("condition stopped holding")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
