package conversation_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/wapipe/wapipe/internal/assistant"
	"github.com/wapipe/wapipe/internal/conversation"
	"github.com/wapipe/wapipe/internal/keyedid"
	"github.com/wapipe/wapipe/internal/outgoing"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/testenv"
	"github.com/wapipe/wapipe/internal/turnstate"
	"github.com/wapipe/wapipe/internal/whatsapp"
)

func TestMain(m *testing.M) { os.Exit(testenv.RunWithFirestore(m)) }

// base is the tests' received_at and the start of their Meta timestamps.
var base = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

// clock is a settable clock for the store (lease expiry).
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// newStore returns a conversation store of the test's own; a nil clk means the real clock.
func newStore(t *testing.T, clk *clock) *store.ConversationStore {
	t.Helper()
	db, _ := testenv.Store(t)
	opts := store.Options{}
	if clk != nil {
		opts.Now = clk.Now
	}
	return store.NewConversationStore(db, opts)
}

// inbound is message id of the test contact, sent at Meta second ts.
func inbound(id string, ts int64, text string) conversation.Inbound {
	return of(conversation.Inbound{
		TenantID:   "acme-bus",
		ReceivedAt: base.Add(time.Duration(ts) * time.Second),
		Message: whatsapp.Message{
			ID: id, PhoneNumberID: "106540352242922", ContactName: "Agus",
			Timestamp: fmt.Sprint(base.Unix() + ts), Type: "text", Text: text,
		},
	}, "6281234567890")
}

// of makes in a message from the contact whose phone is waID: its contact id and its
// conversation on the number, as the worker finds them (people.Directory.Sender).
func of(in conversation.Inbound, waID string) conversation.Inbound {
	in.Message.From = waID
	in.ContactID = "ct_" + waID
	in.ConversationID = store.ConversationID(keyedid.Dev(), in.TenantID, in.Message.PhoneNumberID, in.ContactID)
	return in
}

// sender is a Sender that counts the sends of each idempotency key, as the worker's outbound
// records would let only the first through. fail, when set, decides per call.
type sender struct {
	mu    sync.Mutex
	sent  map[string]int
	order []string
	fail  func(key string) error
	// last is each key's Outgoing.LastAttempt, as last sent.
	last map[string]bool
}

func newSender() *sender { return &sender{sent: map[string]int{}, last: map[string]bool{}} }

// lastAttempts returns each key's Outgoing.LastAttempt.
func (s *sender) lastAttempts() map[string]bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := make(map[string]bool, len(s.last))
	for k, v := range s.last {
		m[k] = v
	}
	return m
}

func (s *sender) SendReply(_ context.Context, o conversation.Outgoing) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		if err := s.fail(o.IdempotencyKey); err != nil {
			return "", err
		}
	}
	s.sent[o.IdempotencyKey]++
	s.last[o.IdempotencyKey] = o.LastAttempt
	s.order = append(s.order, o.Reply.Text)
	return "wamid.out." + o.IdempotencyKey, nil
}

func (s *sender) counts() (map[string]int, []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := make(map[string]int, len(s.sent))
	for k, v := range s.sent {
		m[k] = v
	}
	return m, append([]string(nil), s.order...)
}

// actions counts the enqueued actions by action id.
type actions struct {
	mu   sync.Mutex
	byID map[string]int
	reqs []assistant.ActionRequest
}

func newActions() *actions { return &actions{byID: map[string]int{}} }

func (a *actions) EnqueueAction(_ context.Context, _ conversation.Pending, req assistant.ActionRequest) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.byID[req.ActionID]++
	a.reqs = append(a.reqs, req)
	return nil
}

// recorder is a TurnFunc that records its turns: order, concurrency and the state each saw. It
// answers each message with one reply echoing its id, appends a Turn to the state, and asks for
// an action when the text is "act".
type recorder struct {
	mu        sync.Mutex
	active    int
	maxActive int
	order     []string
	count     map[string]int
	seen      map[string]int // the number of turns in the state the turn was given
	starts    map[string]time.Time
	// before runs at the start of every turn, outside the lock.
	before func(p conversation.Pending)
}

func newRecorder() *recorder {
	return &recorder{count: map[string]int{}, seen: map[string]int{}, starts: map[string]time.Time{}}
}

func (r *recorder) turn(ctx context.Context, p conversation.Pending, st turnstate.State) (assistant.Outcome, error) {
	r.mu.Lock()
	r.active++
	r.maxActive = max(r.maxActive, r.active)
	r.starts[p.MessageID] = time.Now()
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		r.active--
		r.mu.Unlock()
	}()
	if r.before != nil {
		r.before(p)
	}
	if err := ctx.Err(); err != nil {
		return assistant.Outcome{}, err
	}
	r.mu.Lock()
	r.order = append(r.order, p.MessageID)
	r.count[p.MessageID]++
	r.seen[p.MessageID] = len(st.Turns)
	r.mu.Unlock()
	st.Turns = append(st.Turns, turnstate.Turn{MessageID: p.MessageID, At: p.ReceivedAt, Event: assistant.EventGeneralQuery})
	out := assistant.Outcome{
		Replies: []assistant.Reply{{Message: outgoing.Message{Text: "re " + p.MessageID}}},
		State:   st,
		Event:   assistant.EventGeneralQuery,
	}
	if p.Message.Text == "act" {
		out.Action = &assistant.ActionRequest{
			ActionID: assistant.ActionID(p.TenantID, p.ConversationID, p.MessageID), TenantID: p.TenantID,
			Intent: "create_booking", Data: map[string]any{"price": 15000000, "bus": "01"}, RequestedAt: p.ReceivedAt,
		}
	}
	return out, nil
}

func (r *recorder) snapshot() (order []string, count map[string]int, maxActive int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	count = make(map[string]int, len(r.count))
	for k, v := range r.count {
		count[k] = v
	}
	return append([]string(nil), r.order...), count, r.maxActive
}

func (r *recorder) started(id string) (time.Time, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	t, ok := r.starts[id]
	return t, ok
}

// errKilled is what a killed instance's calls "return": nothing reaches Firestore after the kill.
var errKilled = errors.New("instance killed")

// countingInbox wraps the store: it counts the calls of each method, records when each commit
// returned, and can kill its instance right after a commit (every later call fails without
// touching Firestore, as if the process had died).
type countingInbox struct {
	conversation.Inbox
	mu              sync.Mutex
	calls           map[string]int
	nextDocs        int // documents NextInbox returned, skipped ones included (at most 2 per call)
	committed       map[string]time.Time
	killAfterCommit bool
	dead            bool
}

func newCountingInbox(in conversation.Inbox) *countingInbox {
	return &countingInbox{Inbox: in, calls: map[string]int{}, committed: map[string]time.Time{}}
}

func (c *countingInbox) enter(name string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dead {
		return errKilled
	}
	c.calls[name]++
	return nil
}

func (c *countingInbox) AddInbound(ctx context.Context, id string, m store.Message) (bool, store.Message, error) {
	if err := c.enter("AddInbound"); err != nil {
		return false, store.Message{}, err
	}
	created, stored, err := c.Inbox.AddInbound(ctx, id, m)
	if err == nil && !created {
		c.mu.Lock()
		c.calls["AddInbound.duplicate"]++
		c.mu.Unlock()
	}
	return created, stored, err
}

func (c *countingInbox) Acquire(ctx context.Context, id, holder string, d time.Duration, touch *store.Touch) (store.Conversation, bool, error) {
	if err := c.enter("Acquire"); err != nil {
		return store.Conversation{}, false, err
	}
	conv, taken, err := c.Inbox.Acquire(ctx, id, holder, d, touch)
	if taken {
		c.mu.Lock()
		c.calls["Acquire.taken"]++
		c.mu.Unlock()
	}
	return conv, taken, err
}

func (c *countingInbox) NextInbox(ctx context.Context, id, skip string) (store.Message, bool, error) {
	if err := c.enter("NextInbox"); err != nil {
		return store.Message{}, false, err
	}
	m, ok, err := c.Inbox.NextInbox(ctx, id, skip)
	c.mu.Lock()
	switch {
	case err != nil:
	case !ok:
		c.calls["NextInbox.empty"]++
	case skip != "":
		c.nextDocs += 2 // the skipped message may have come first
	default:
		c.nextDocs++
	}
	c.mu.Unlock()
	return m, ok, err
}

func (c *countingInbox) CommitTurn(ctx context.Context, id string, l store.Lease, mid string, t store.TurnCommit, d time.Duration) (store.Conversation, error) {
	if err := c.enter("CommitTurn"); err != nil {
		return store.Conversation{}, err
	}
	conv, err := c.Inbox.CommitTurn(ctx, id, l, mid, t, d)
	c.mu.Lock()
	defer c.mu.Unlock()
	if err == nil {
		c.committed[mid] = time.Now()
	}
	if err == nil && c.killAfterCommit {
		c.dead = true
		return store.Conversation{}, errKilled
	}
	return conv, err
}

func (c *countingInbox) MarkEffectsDone(ctx context.Context, id, mid string, replies []store.Reply) error {
	if err := c.enter("MarkEffectsDone"); err != nil {
		return err
	}
	return c.Inbox.MarkEffectsDone(ctx, id, mid, replies)
}

func (c *countingInbox) Release(ctx context.Context, id string, l store.Lease) error {
	if err := c.enter("Release"); err != nil {
		return err
	}
	return c.Inbox.Release(ctx, id, l)
}

func (c *countingInbox) snapshot() (map[string]int, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := make(map[string]int, len(c.calls))
	for k, v := range c.calls {
		m[k] = v
	}
	return m, c.nextDocs
}

func (c *countingInbox) committedAt(mid string) (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.committed[mid]
	return t, ok
}

// firestoreOps adds up the reads and writes of the calls counted, with the costs each store
// method documents: an upper bound (a skipped message is counted as read).
func firestoreOps(calls map[string]int, nextDocs int) (reads, writes int) {
	reads += calls["AddInbound.duplicate"] // a redelivery reads the stored message
	writes += calls["AddInbound"]
	reads += calls["Acquire"]
	writes += calls["Acquire.taken"]             // a lease found held costs its read only
	reads += nextDocs + calls["NextInbox.empty"] // an empty query is billed one read
	reads += calls["CommitTurn"]
	writes += 2 * calls["CommitTurn"]
	writes += calls["MarkEffectsDone"]
	reads += calls["Release"]
	writes += calls["Release"]
	return reads, writes
}

// kill makes every later call fail, as if the instance had died.
func (c *countingInbox) kill() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dead = true
}
