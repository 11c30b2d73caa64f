package webhook_test

import (
	"context"
	"sync"

	"github.com/wapipe/wapipe/internal/dedupe"
	"github.com/wapipe/wapipe/internal/taskqueue"
)

// The fakes below stand in for the webhook's dependencies (the benbjohnson/wtf mock pattern), so
// its decision logic runs in milliseconds without an emulator. Each does the obvious thing by
// default; a test sets a Fn or an Err to pick the answer it is about, and reads the calls after.

// fakeMarkers is the dedupe store. Begin answers BeginFn, or Acquired when BeginFn is nil.
type fakeMarkers struct {
	BeginFn     func(ctx context.Context, eventID string) (dedupe.Result, error)
	CompleteErr error
	ReleaseErr  error

	mu        sync.Mutex
	begins    int
	completed map[string]string // event id → task name
	released  []string
}

func (m *fakeMarkers) Begin(ctx context.Context, eventID, _ string) (dedupe.Result, error) {
	m.mu.Lock()
	m.begins++
	fn := m.BeginFn
	m.mu.Unlock()
	if fn != nil {
		return fn(ctx, eventID)
	}
	return dedupe.Result{Outcome: dedupe.Acquired, Attempt: 1}, nil
}

func (m *fakeMarkers) Complete(_ context.Context, eventID, taskName string) error {
	if m.CompleteErr != nil {
		return m.CompleteErr
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.completed == nil {
		m.completed = map[string]string{}
	}
	m.completed[eventID] = taskName
	return nil
}

func (m *fakeMarkers) Release(_ context.Context, eventID string) error {
	if m.ReleaseErr != nil {
		return m.ReleaseErr
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.released = append(m.released, eventID)
	return nil
}

func (m *fakeMarkers) Begins() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.begins
}

func (m *fakeMarkers) Completed() map[string]string {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string]string{}
	for k, v := range m.completed {
		out[k] = v
	}
	return out
}

func (m *fakeMarkers) Released() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.released...)
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

// fakeQueue is Cloud Tasks. Enqueue fails with Err when set, else records the task.
type fakeQueue struct {
	Err error

	mu    sync.Mutex
	tasks []taskqueue.Task
}

func (q *fakeQueue) Enqueue(_ context.Context, t taskqueue.Task) (taskqueue.Result, error) {
	if q.Err != nil {
		return taskqueue.Result{}, q.Err
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.tasks = append(q.tasks, t)
	return taskqueue.Result{Name: "queues/" + t.Queue + "/tasks/" + t.ID}, nil
}

func (q *fakeQueue) Tasks() []taskqueue.Task {
	q.mu.Lock()
	defer q.mu.Unlock()
	return append([]taskqueue.Task(nil), q.tasks...)
}
