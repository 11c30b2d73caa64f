package cloudtasksemu

import (
	"context"
	"math"
	"sync"
	"time"

	"cloud.google.com/go/cloudtasks/apiv2/cloudtaskspb"
)

// Cloud Tasks' defaults for a queue created through the API without rate_limits.
const (
	defaultMaxDispatchesPerSecond  = 500
	defaultMaxConcurrentDispatches = 1000
	maxDispatchesPerSecondLimit    = 500
	maxConcurrentDispatchesLimit   = 5000
)

// queueConfig is a queue's mutable configuration with the defaults applied.
type queueConfig struct {
	rate          float64
	burst         int32
	maxConcurrent int32
	retry         retryPolicy
	samplingRatio float64
}

// maxBurstSize derives RateLimits.max_burst_size from max_dispatches_per_second the way Cloud
// Tasks does for queues managed through the API. The rule is not published; this one reproduces
// every value observed in production (500/s -> 100, 5/s -> 10, 1/s -> 10) and the documented
// intent ("generally at least equal to max_dispatches_per_second"): the rate rounded up, at least
// 10 and at most 100.
func maxBurstSize(rate float64) int32 {
	b := math.Ceil(rate)
	switch {
	case b < 10:
		return 10
	case b > 100:
		return 100
	}
	return int32(b)
}

// attempt is one dispatch of a task, kept as unix nanoseconds to stay small.
type attempt struct {
	schedule, dispatch, response int64
	httpStatus                   int32  // 0 when no response arrived
	code                         int32  // google.rpc.Code of the outcome
	errMsg                       string // why there was no response
}

// task is a task as the queue stores it. Everything above the mutable block is written once,
// before the task is published under the queue's lock, and only read afterwards, so dispatches
// read it without locking. Times are unix nanoseconds and headers a flat key/value list: 20,000
// waiting tasks should cost little more than their bodies.
type task struct {
	id       string
	named    bool // given by the caller, so its name stays reserved after the task is gone
	url      string
	method   cloudtaskspb.HttpMethod
	headers  []string // key, value, key, value...
	body     []byte
	oidc     *cloudtaskspb.OidcToken
	deadline time.Duration
	retry    *retryPolicy // task-level override, usually nil
	created  int64

	// Guarded by the queue's mu.
	schedule      int64
	seq           uint64 // FIFO among equal schedule times
	heapIdx       int32  // -1 when not waiting in the heap
	running       int32  // attempts in flight
	dispatchCount int32
	responseCount int32
	execCount     int32 // responses that were not 5xx: X-CloudTasks-TaskExecutionCount
	firstDispatch int64
	last          *attempt
}

// taskHeap is a min-heap of waiting tasks by schedule time, then creation order.
type taskHeap []*task

func (h taskHeap) less(i, j int) bool {
	if h[i].schedule != h[j].schedule {
		return h[i].schedule < h[j].schedule
	}
	return h[i].seq < h[j].seq
}

func (h taskHeap) swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].heapIdx = int32(i)
	h[j].heapIdx = int32(j)
}

func (h *taskHeap) push(t *task) {
	t.heapIdx = int32(len(*h))
	*h = append(*h, t)
	h.up(len(*h) - 1)
}

func (h *taskHeap) remove(i int) *task {
	old := *h
	n := len(old) - 1
	t := old[i]
	if i != n {
		old.swap(i, n)
		if !h.down(i, n) {
			h.up(i)
		}
	}
	old[n] = nil
	*h = old[:n]
	t.heapIdx = -1
	return t
}

func (h taskHeap) up(j int) {
	for {
		i := (j - 1) / 2
		if i == j || !h.less(j, i) {
			break
		}
		h.swap(i, j)
		j = i
	}
}

func (h taskHeap) down(i0, n int) bool {
	i := i0
	for {
		j1 := 2*i + 1
		if j1 >= n || j1 < 0 {
			break
		}
		j := j1
		if j2 := j1 + 1; j2 < n && h.less(j2, j1) {
			j = j2
		}
		if !h.less(j, i) {
			break
		}
		h.swap(i, j)
		i = j
	}
	return i > i0
}

// queue is one queue's state and its scheduler.
type queue struct {
	name string // projects/P/locations/L/queues/Q
	id   string // Q

	wake   chan struct{} // buffered 1: "something changed, look again"
	cancel context.CancelFunc

	mu         sync.Mutex
	cfg        queueConfig
	paused     bool
	purgeTime  int64
	tasks      map[string]*task
	waiting    taskHeap
	seq        uint64
	inflight   int32
	tokens     float64
	tokensAt   int64
	tombstones map[string]int64 // reserved task ids -> expiry
	sweepAt    int              // tombstone count that triggers the next sweep
	interned   map[string]string
	executed   [60]int64 // responses per second over the last minute, for stats
	executedAt [60]int64 // the unix second each bucket counts
}

func newQueue(name, id string, cfg queueConfig, now time.Time) *queue {
	return &queue{
		name:       name,
		id:         id,
		wake:       make(chan struct{}, 1),
		cfg:        cfg,
		tasks:      make(map[string]*task),
		tombstones: make(map[string]int64),
		sweepAt:    1024,
		interned:   make(map[string]string),
		tokens:     float64(cfg.burst),
		tokensAt:   now.UnixNano(),
	}
}

// poke wakes the scheduler without ever blocking: one pending wake-up is enough, as the scheduler
// re-reads the whole state each time.
func (q *queue) poke() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// intern shares the strings most tasks repeat (URL, header names), with a bound so unique values
// cannot grow the table without limit. Called with mu held.
func (q *queue) intern(s string) string {
	if v, ok := q.interned[s]; ok {
		return v
	}
	if len(q.interned) < 4096 && len(s) <= 512 {
		q.interned[s] = s
	}
	return s
}

// reserve keeps a named task's id from being reused until now+d. Called with mu held.
func (q *queue) reserve(t *task, now int64, d time.Duration) {
	if !t.named || d <= 0 {
		return
	}
	q.tombstones[t.id] = now + int64(d)
	if len(q.tombstones) >= q.sweepAt {
		for id, exp := range q.tombstones {
			if exp <= now {
				delete(q.tombstones, id)
			}
		}
		q.sweepAt = 2*len(q.tombstones) + 1024
	}
}

// reserved reports whether id is still reserved. Called with mu held.
func (q *queue) reserved(id string, now int64) bool {
	exp, ok := q.tombstones[id]
	if ok && exp <= now {
		delete(q.tombstones, id)
		return false
	}
	return ok
}

// removeTask drops a task from the queue (completed, given up, deleted or purged). Called with mu
// held.
func (q *queue) removeTask(t *task, now int64, reservation time.Duration) {
	if q.tasks[t.id] != t {
		return
	}
	delete(q.tasks, t.id)
	if t.heapIdx >= 0 {
		q.waiting.remove(int(t.heapIdx))
	}
	q.reserve(t, now, reservation)
}

// enqueue puts a task (new or to retry) in the heap. Called with mu held.
func (q *queue) enqueue(t *task) {
	q.seq++
	t.seq = q.seq
	q.waiting.push(t)
}

// refill brings the token bucket up to now. Called with mu held.
func (q *queue) refill(now int64) {
	if now > q.tokensAt {
		q.tokens += q.cfg.rate * float64(now-q.tokensAt) / float64(time.Second)
		q.tokensAt = now
	}
	if b := float64(q.cfg.burst); q.tokens > b {
		q.tokens = b
	}
}

// recordExecuted counts a response for executed_last_minute_count. Called with mu held.
func (q *queue) recordExecuted(now int64) {
	sec := now / int64(time.Second)
	b := sec % 60
	if q.executedAt[b] != sec {
		q.executedAt[b], q.executed[b] = sec, 0
	}
	q.executed[b]++
}

// executedLastMinute sums the buckets of the last 60 seconds. Called with mu held.
func (q *queue) executedLastMinute(now int64) int64 {
	sec := now / int64(time.Second)
	var n int64
	for i := range q.executed {
		if sec-q.executedAt[i] < 60 {
			n += q.executed[i]
		}
	}
	return n
}

// run is the queue's scheduler: it dispatches every task that is due while the queue is running,
// the token bucket has a token and fewer than max_concurrent_dispatches are in flight, then sleeps
// until the next due time, the next token, or a wake-up (a new task, a finished dispatch, a
// configuration change). An idle queue costs a parked goroutine and nothing else.
func (s *Server) run(ctx context.Context, q *queue) {
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		wait := s.dispatchDue(q)
		if wait > 0 {
			timer.Reset(wait)
		}
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-q.wake:
		case <-timer.C:
		}
		// Since Go 1.23 Stop guarantees no stale tick is delivered after it returns, so the
		// timer can simply be re-armed next round.
		timer.Stop()
	}
}

// dispatchDue starts every dispatch allowed now and returns how long to wait before looking again
// (0: until woken).
func (s *Server) dispatchDue(q *queue) time.Duration {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.paused {
		return 0
	}
	now := time.Now().UnixNano()
	for len(q.waiting) > 0 && q.inflight < q.cfg.maxConcurrent {
		t := q.waiting[0]
		if t.schedule > now {
			return time.Duration(t.schedule - now)
		}
		q.refill(now)
		if q.tokens < 1 {
			need := (1 - q.tokens) / q.cfg.rate * float64(time.Second)
			return time.Duration(math.Ceil(need))
		}
		if !s.startDispatch(q, t, now) {
			return 0
		}
		q.tokens--
	}
	return 0
}

// startDispatch records a new attempt and starts its HTTP request. Called with q.mu held.
func (s *Server) startDispatch(q *queue, t *task, now int64) bool {
	prev := t.last
	a := &attempt{schedule: t.schedule, dispatch: now}
	d := dispatch{
		q:          q,
		t:          t,
		a:          a,
		retryCount: t.dispatchCount,
		execCount:  t.execCount,
		eta:        t.schedule,
	}
	if prev != nil {
		d.prevStatus = prev.httpStatus
		d.prevCode = prev.code
	}
	if !s.goTracked(func() { s.doDispatch(d) }) {
		return false
	}
	if t.heapIdx >= 0 {
		q.waiting.remove(int(t.heapIdx))
	}
	if t.dispatchCount == 0 {
		t.firstDispatch = now
	}
	t.dispatchCount++
	t.running++
	t.last = a
	q.inflight++
	return true
}
