package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/wapipe/wapipe/tasks"
)

// The chaos run's faults at the edges (issue 35): kills that land on tasks' last attempts, a
// Meta outage shaped as timeouts and gateway pages, and Cloud Scheduler's sweep.

// writeQueues writes the run's queues.yaml for the worker (TASKS_QUEUES_FILE), so that it knows
// the same last attempts as the emulator it was given.
func writeQueues(t *testing.T, dir string, f *tasks.QueueFile) string {
	t.Helper()
	b, err := yaml.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "queues.yaml")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// lastAttempts stands between Cloud Tasks and the worker and makes kills land on last attempts:
// it picks the first `per` conversation tasks and the first `per` send tasks of the tenant's
// queue it sees, hands each to the worker as its last attempt (X-CloudTasks-TaskRetryCount is
// max_attempts-1, so the worker does what it does on a last attempt), kills the worker while
// that attempt runs, and answers Cloud Tasks' retry of it 200 without passing it on: the task is
// gone, as after a real last attempt killed, and only the sweep is left to finish the work (the
// conversation's inbox is stranded, the send's record has no task). Other tasks pass untouched.
// An action's last attempt is never killed (a lost action task is not recoverable yet): random
// kills wait for it to end.
type lastAttempts struct {
	next    http.Handler
	queues  *tasks.QueueFile
	worker  *service
	per     int
	stopped atomic.Bool

	mu      sync.Mutex
	picked  map[string]bool   // task names picked; true once the worker was killed during their last attempt
	armed   map[string]string // contacts whose next reply send kills the worker → the picked task's name
	byPath  map[string]int
	busy    bool         // a picked task's attempt (or its kill) is under way: one at a time
	kills   atomic.Int64 // picked tasks whose last attempt the worker was killed during
	landed  atomic.Int64 // of those, the attempts that never got the worker's answer
	actions atomic.Int64 // action tasks on their last attempt, in flight
}

func newLastAttempts(t *testing.T, workerURL string, queues *tasks.QueueFile, worker *service, per int) *lastAttempts {
	u, err := url.Parse(workerURL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(u)
	proxy.ErrorLog = log.New(io.Discard, "", 0) // a killed worker's attempts end in 502: expected
	return &lastAttempts{next: proxy, queues: queues, worker: worker, per: per,
		picked: map[string]bool{}, byPath: map[string]int{}, armed: map[string]string{}}
}

func (l *lastAttempts) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if l.isLast(r) && r.URL.Path == tasks.ProcessActionPath {
		l.actions.Add(1)
		defer l.actions.Add(-1)
	}
	first, again := l.pick(r)
	switch {
	case again:
		// The retry of a last attempt killed: Cloud Tasks would have none.
		w.WriteHeader(http.StatusOK)
		return
	case !first:
		l.next.ServeHTTP(w, r)
		return
	}
	q, _ := l.queues.Queue(tasks.QueueID(r.Header.Get(tasks.HeaderQueueName)))
	r.Header.Set(tasks.HeaderTaskRetryCount, strconv.Itoa(int(q.RetryConfig.MaxAttempts)-1))
	name := r.Header.Get(tasks.HeaderTaskName)
	if r.URL.Path == tasks.ProcessSendPath {
		// The api made the record before the task: a kill at any moment strands it.
		l.killed(name)
		go func() {
			defer l.done()
			time.Sleep(rand.N(50 * time.Millisecond))
			l.worker.restart()
		}()
	} else {
		// A conversation's task: killed when its reply reaches the Graph API, so that its
		// message is in the inbox, its turn committed and its lease held by the dead attempt.
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		var out tasks.Outbound
		_ = json.Unmarshal(body, &out)
		to := out.To
		l.arm(to, name)
		defer func() {
			if l.disarm(to) {
				// Not killed (nothing sent to the contact in that attempt: it failed, or the
				// worker was down): its retries go on as Cloud Tasks' would.
				l.done()
			}
		}()
	}
	rec := &statusRecorder{ResponseWriter: w}
	l.next.ServeHTTP(rec, r)
	if rec.status == http.StatusBadGateway {
		l.landed.Add(1)
	}
}

func (l *lastAttempts) arm(to, name string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.armed[to] = name
}

// killed marks the picked task name's last attempt killed: its retries are answered for it.
func (l *lastAttempts) killed(name string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.picked[name] = true
	l.kills.Add(1)
}

// disarm reports whether to was still armed (no send came).
func (l *lastAttempts) disarm(to string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, armed := l.armed[to]
	delete(l.armed, to)
	return armed
}

// onSend is told of each send the Graph API gets: one to an armed contact kills the worker.
func (l *lastAttempts) onSend(to string) {
	l.mu.Lock()
	name, armed := l.armed[to]
	delete(l.armed, to)
	l.mu.Unlock()
	if armed {
		l.killed(name)
		go func() {
			defer l.done()
			l.worker.restart()
		}()
	}
}

// sendWatch tells lastAttempts of every message send before the Graph API handles it.
type sendWatch struct {
	next http.Handler
	last *lastAttempts
}

func (s sendWatch) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost && filepath.Base(r.URL.Path) == "messages" {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		var send struct {
			To string `json:"to"`
		}
		if json.Unmarshal(body, &send) == nil && send.To != "" && s.last != nil {
			s.last.onSend(send.To)
		}
	}
	s.next.ServeHTTP(w, r)
}

// statusRecorder keeps the status a handler answered.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}

// pick says whether r is the first attempt of a task picked to have its last attempt killed
// (picking it when there is room), or a retry of one already killed.
func (l *lastAttempts) pick(r *http.Request) (first, again bool) {
	name := r.Header.Get(tasks.HeaderTaskName)
	path := r.URL.Path
	l.mu.Lock()
	defer l.mu.Unlock()
	if killed, ok := l.picked[name]; ok {
		return false, killed
	}
	// One at a time: a kill ends every attempt in flight, and another picked one whose message
	// was not stored yet would be lost with its task, which is not what this fault is about.
	// The sweep's own tasks (a drain, a record sent from itself) are how the killed ones are
	// finished: they are left alone.
	if l.busy || l.stopped.Load() || name == "" || strings.HasSuffix(name, "-sweep") || strings.HasSuffix(name, "-swept") ||
		(path != tasks.ProcessOutboundPath && path != tasks.ProcessSendPath) ||
		!strings.HasPrefix(tasks.QueueID(r.Header.Get(tasks.HeaderQueueName)), tasks.TenantQueuePrefix) || l.byPath[path] >= l.per {
		return false, false
	}
	l.picked[name] = false
	l.byPath[path]++
	l.busy = true
	return true, false
}

// done ends a picked task's turn: the next may be picked.
func (l *lastAttempts) done() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.busy = false
}

// quiet reports whether a random kill may come now: no action on its last attempt and no picked
// task under way (a random kill would end it before its message is stored).
func (l *lastAttempts) quiet() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return !l.busy && l.actions.Load() == 0
}

// isLast reports whether r is a task's last attempt, by its queue's max_attempts.
func (l *lastAttempts) isLast(r *http.Request) bool {
	q, ok := l.queues.Queue(tasks.QueueID(r.Header.Get(tasks.HeaderQueueName)))
	n, err := strconv.Atoi(r.Header.Get(tasks.HeaderTaskRetryCount))
	return ok && err == nil && q.RetryConfig.MaxAttempts > 0 && n == int(q.RetryConfig.MaxAttempts)-1
}

// metaOutage makes the Graph API unreachable the way real outages look while it is on: every
// send either hangs past the worker's timeout or gets a gateway's 502 page, never Meta's error
// body, and half of them did reach Meta (the message goes out, the answer is lost).
type metaOutage struct {
	next          http.Handler
	on            atomic.Bool
	hangs, pages  atomic.Int64
	taken         atomic.Int64
	hangFor       time.Duration
	started, done atomic.Bool
}

func (m *metaOutage) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !m.on.Load() || r.Method != http.MethodPost || filepath.Base(r.URL.Path) != "messages" {
		m.next.ServeHTTP(w, r)
		return
	}
	if rand.IntN(2) == 0 {
		// Meta took it: the fake records the send; the answer never comes back.
		m.taken.Add(1)
		m.next.ServeHTTP(httptest.NewRecorder(), r)
	}
	if rand.IntN(2) == 0 {
		m.hangs.Add(1)
		select {
		case <-time.After(m.hangFor):
		case <-r.Context().Done():
		}
		return
	}
	m.pages.Add(1)
	w.Header().Set("Content-Type", "text/html")
	w.WriteHeader(http.StatusBadGateway)
	_, _ = w.Write([]byte("<html><body><h1>502 Bad Gateway</h1></body></html>"))
}

// run turns the outage on after `after`, for `lasting`.
func (m *metaOutage) run(ctx context.Context, after, lasting time.Duration) {
	select {
	case <-ctx.Done():
		return
	case <-time.After(after):
	}
	m.started.Store(true)
	m.on.Store(true)
	select {
	case <-ctx.Done():
	case <-time.After(lasting):
	}
	m.on.Store(false)
	m.done.Store(true)
}

// sweeps posts the worker's POST /internal/sweep every `every`, as Cloud Scheduler does every
// minute in production (dev admits it on the internal token), until ctx ends.
func sweeps(ctx context.Context, workerURL string, every time.Duration, count *atomic.Int64) {
	client := &http.Client{Timeout: time.Minute}
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(every):
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, workerURL+tasks.SweepPath, http.NoBody)
		if err != nil {
			return
		}
		req.Header.Set(tasks.HeaderInternalToken, chaosToken)
		if resp, err := client.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				count.Add(1)
			}
		}
	}
}

// workerEvents counts the worker's log lines of each event, over every run of the worker.
func workerEvents(t *testing.T, dir string, events ...string) map[string]int {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "worker-*.log"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range events {
			out[e] += strings.Count(string(b), `"event":"`+e+`"`)
		}
	}
	return out
}
