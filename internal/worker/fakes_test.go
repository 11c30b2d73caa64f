package worker_test

import (
	"context"
	"fmt"
	"sync"

	wacontact "github.com/wapipe/wapipe/internal/contact"
	"github.com/wapipe/wapipe/internal/outgoing"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/taskqueue"
)

// The fakes below stand in for the worker's dependencies (the benbjohnson/wtf mock pattern), so
// its decision logic runs in milliseconds without an emulator. Each does the obvious thing by
// default; a test sets a Fn or an error to pick the answer it is about, and reads the calls after.

// fakeRecords is Firestore's state: it implements OutboundRecords, StatusRecords,
// DeliveryUpdater, TraceRecords and DeadLetters.
type fakeRecords struct {
	// BeginSendFn decides a send; nil means store.Send on a new record.
	BeginSendFn func(seed store.OutboundRecord) (store.Decision, store.OutboundRecord, error)
	// Err makes the method of that name fail ("MarkSent", "PutDeadLetter"…).
	Err map[string]error

	mu          sync.Mutex
	calls       []string
	marks       map[string]string // idempotency key → last Mark* ("sent wamid.x read=true", "failed 131026 …")
	seen        map[string]bool   // recorded status keys
	statuses    []store.StatusRecord
	applied     []store.StatusUpdate
	traces      []string // "start <event id>", "finish <event id> <state>"
	deadLetters []store.DeadLetter
	seeds       []store.OutboundRecord // what BeginSend was given
	recorded    []store.StatusRecord
	started     []store.Trace
}

func (f *fakeRecords) call(name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, name)
	return f.Err[name]
}

func (f *fakeRecords) mark(key, what string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.marks == nil {
		f.marks = map[string]string{}
	}
	f.marks[key] = what
}

func (f *fakeRecords) BeginSend(_ context.Context, seed store.OutboundRecord) (store.Decision, store.OutboundRecord, error) {
	if err := f.call("BeginSend"); err != nil {
		return 0, store.OutboundRecord{}, err
	}
	if f.BeginSendFn != nil {
		return f.BeginSendFn(seed)
	}
	f.mu.Lock()
	f.seeds = append(f.seeds, seed)
	f.mu.Unlock()
	seed.State, seed.Attempts = "sending", 1
	return store.Send, seed, nil
}

func (f *fakeRecords) MarkSent(_ context.Context, key, graphMessageID string, readMarked bool) (store.OutboundRecord, error) {
	if err := f.call("MarkSent"); err != nil {
		return store.OutboundRecord{}, err
	}
	f.mark(key, fmt.Sprintf("sent %s read=%v", graphMessageID, readMarked))
	return store.OutboundRecord{IdempotencyKey: key, State: store.OutboundSent, GraphMessageID: graphMessageID}, nil
}

func (f *fakeRecords) MarkSkipped(_ context.Context, key string) error {
	if err := f.call("MarkSkipped"); err != nil {
		return err
	}
	f.mark(key, "skipped")
	return nil
}

func (f *fakeRecords) MarkFailed(_ context.Context, key string, code int, reason, msg string) error {
	if err := f.call("MarkFailed"); err != nil {
		return err
	}
	f.mark(key, fmt.Sprintf("failed %d %s: %s", code, reason, msg))
	return nil
}

func (f *fakeRecords) MarkRetry(_ context.Context, key string, definite bool, code int, _ string) error {
	if err := f.call("MarkRetry"); err != nil {
		return err
	}
	f.mark(key, fmt.Sprintf("retry definite=%v %d", definite, code))
	return nil
}

func (f *fakeRecords) StatusSeen(_ context.Context, key string) (bool, error) {
	if err := f.call("StatusSeen"); err != nil {
		return false, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.seen[key], nil
}

func (f *fakeRecords) RecordStatus(_ context.Context, s store.StatusRecord) (bool, error) {
	if err := f.call("RecordStatus"); err != nil {
		return false, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.seen == nil {
		f.seen = map[string]bool{}
	}
	created := !f.seen[s.Key]
	f.seen[s.Key] = true
	f.recorded = append(f.recorded, s)
	f.statuses = append(f.statuses, s)
	return created, nil
}

func (f *fakeRecords) ApplyStatus(_ context.Context, u store.StatusUpdate) (store.ApplyResult, error) {
	if err := f.call("ApplyStatus"); err != nil {
		return store.ApplyResult{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.applied = append(f.applied, u)
	return store.ApplyResult{Matched: u.Key != "", Applied: u.Key != "", Key: u.Key}, nil
}

func (f *fakeRecords) PutTrace(_ context.Context, t store.Trace) error {
	if err := f.call("PutTrace"); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.traces = append(f.traces, "trace "+t.InboundEventID+" "+t.State)
	f.started = append(f.started, t)
	return nil
}

func (f *fakeRecords) PutDeadLetter(_ context.Context, d store.DeadLetter) (string, error) {
	if err := f.call("PutDeadLetter"); err != nil {
		return "", err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.deadLetters = append(f.deadLetters, d)
	return fmt.Sprintf("dl-%d", len(f.deadLetters)), nil
}

func (f *fakeRecords) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

func (f *fakeRecords) Called(name string) bool {
	for _, c := range f.Calls() {
		if c == name {
			return true
		}
	}
	return false
}

func (f *fakeRecords) Mark(key string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.marks[key]
}

func (f *fakeRecords) DeadLetters() []store.DeadLetter {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]store.DeadLetter(nil), f.deadLetters...)
}

func (f *fakeRecords) Applied() []store.StatusUpdate {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]store.StatusUpdate(nil), f.applied...)
}

func (f *fakeRecords) Traces() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.traces...)
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

// fakePayloads holds out-of-band payloads by reference.
type fakePayloads map[string][]byte

func (p fakePayloads) Get(_ context.Context, ref string) ([]byte, error) {
	b, ok := p[ref]
	if !ok {
		return nil, store.ErrNotFound
	}
	return b, nil
}

// fakeSender is the Graph API. Send answers SendErr when set, else a new message id.
type fakeSender struct {
	SendErr     error
	MarkReadErr error

	mu     sync.Mutex
	sends  []string // "to key replyTo" (addressString)
	tokens []string // the token of each send
	texts  []string // the text of each send
	reads  []string
}

func (s *fakeSender) Send(_ context.Context, token, _ string, to wacontact.Address, r outgoing.Message, callbackData, replyTo string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sends = append(s.sends, addressString(to)+" "+callbackData+" "+replyTo)
	s.tokens = append(s.tokens, token)
	s.texts = append(s.texts, r.Text)
	if s.SendErr != nil {
		return "", s.SendErr
	}
	return fmt.Sprintf("wamid.sent-%d", len(s.sends)), nil
}

// addressString is how the fakes note an address: the phone, or "recipient:" and the BSUID.
func addressString(a wacontact.Address) string {
	if a.To != "" {
		return a.To
	}
	return "recipient:" + a.Recipient
}

func (s *fakeSender) MarkRead(_ context.Context, _, _, messageID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reads = append(s.reads, messageID)
	return s.MarkReadErr
}

func (s *fakeSender) ShowTyping(ctx context.Context, token, number, messageID string) error {
	return s.MarkRead(ctx, token, number, messageID)
}

func (s *fakeSender) Sends() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.sends...)
}

func (s *fakeSender) Tokens() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.tokens...)
}

func (s *fakeSender) Texts() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.texts...)
}

func (s *fakeSender) Reads() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.reads...)
}
