package webhook_test

import (
	"context"
	"sync"

	"github.com/wapipe/wapipe/internal/taskqueue"
)

// The fakes below stand in for the webhook's dependencies (the benbjohnson/wtf mock pattern), so
// its decision logic runs in milliseconds without an emulator. Each does the obvious thing by
// default; a test sets a Fn or an Err to pick the answer it is about, and reads the calls after.

// fakeMarkers is the dedupe store. MarkIfNew answers MarkFn, or, when MarkFn is nil, true the
// first time it sees an event and false after.
type fakeMarkers struct {
	MarkFn func(ctx context.Context, eventID string) (bool, error)

	mu     sync.Mutex
	calls  int
	marked map[string]bool
}

func (m *fakeMarkers) MarkIfNew(ctx context.Context, eventID, _ string) (bool, error) {
	m.mu.Lock()
	m.calls++
	fn := m.MarkFn
	m.mu.Unlock()
	if fn != nil {
		return fn(ctx, eventID)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.marked[eventID] {
		return false, nil
	}
	if m.marked == nil {
		m.marked = map[string]bool{}
	}
	m.marked[eventID] = true
	return true, nil
}

// Calls counts the MarkIfNew calls.
func (m *fakeMarkers) Calls() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.calls
}

// fakePayloads is the out-of-band payload store.
type fakePayloads struct {
	PutErr error

	mu   sync.Mutex
	puts map[string][]byte // ref → body
}

func (p *fakePayloads) Put(_ context.Context, eventID string, body []byte) (string, error) {
	if p.PutErr != nil {
		return "", p.PutErr
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.puts == nil {
		p.puts = map[string][]byte{}
	}
	ref := "fake://payloads/" + eventID
	p.puts[ref] = body
	return ref, nil
}

func (p *fakePayloads) Get(ref string) ([]byte, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	b, ok := p.puts[ref]
	return b, ok
}

// fakeQueue is Cloud Tasks. Enqueue fails with Err when set, else records the task; a task whose
// name exists already is not recorded again and answers Existed, as Cloud Tasks' AlreadyExists.
type fakeQueue struct {
	Err error

	mu    sync.Mutex
	tasks []taskqueue.Task
}

func (q *fakeQueue) Enqueue(_ context.Context, t taskqueue.Task) (taskqueue.Result, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.Err != nil {
		return taskqueue.Result{}, q.Err
	}
	res := taskqueue.Result{Name: "queues/" + t.Queue + "/tasks/" + t.ID}
	for _, have := range q.tasks {
		if have.Queue == t.Queue && have.ID == t.ID {
			res.Existed = true
			return res, nil
		}
	}
	q.tasks = append(q.tasks, t)
	return res, nil
}

// SetErr makes every later Enqueue fail with err (nil: succeed).
func (q *fakeQueue) SetErr(err error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.Err = err
}

func (q *fakeQueue) Tasks() []taskqueue.Task {
	q.mu.Lock()
	defer q.mu.Unlock()
	return append([]taskqueue.Task(nil), q.tasks...)
}
