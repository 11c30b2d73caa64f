package conversation_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wapipe/wapipe/internal/assistant"
	"github.com/wapipe/wapipe/internal/conversation"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/testenv"
	"github.com/wapipe/wapipe/internal/turnstate"
	"github.com/wapipe/wapipe/internal/whatsapp"
)

// TestLastAttemptReachesSender: the Sender is told, as a parameter, whether the Handle call's
// delivery is its last attempt (Inbound.LastAttempt), for each reply it sends.
func TestLastAttemptReachesSender(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := newStore(t, nil)
	snd, rec := newSender(), newRecorder()
	r := conversation.NewRunner(st, snd, newActions(), withAnswers(conversation.Options{}))
	first := inbound("wamid.A", 1, "hello")
	last := inbound("wamid.B", 2, "again")
	last.LastAttempt = true
	for _, in := range []conversation.Inbound{first, last} {
		if _, err := r.Handle(ctx, in, rec.turn); err != nil {
			t.Fatalf("Handle %s: %v", in.Message.ID, err)
		}
	}
	want := map[string]bool{r.ReplyKey("wamid.A", 0): false, r.ReplyKey("wamid.B", 0): true}
	if diff := cmp.Diff(want, snd.lastAttempts()); diff != "" {
		t.Errorf("LastAttempt per reply (-want, +got):\n%s", diff)
	}
}

func TestRedeliveredMessageIsHandledOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := newStore(t, nil)
	snd, rec := newSender(), newRecorder()
	r := conversation.NewRunner(st, snd, newActions(), withAnswers(conversation.Options{}))
	in := inbound("wamid.A", 1, "hello")

	first, err := r.Handle(ctx, in, rec.turn)
	if err != nil {
		t.Fatalf("first Handle: %v", err)
	}
	again, err := r.Handle(ctx, in, rec.turn)
	if err != nil {
		t.Fatalf("second Handle: %v", err)
	}
	if first.Turns != 1 || first.Duplicate || first.Queued {
		t.Errorf("first Handle = %+v, want one turn", first)
	}
	if !again.Duplicate || again.Turns != 0 || again.Queued {
		t.Errorf("redelivery = %+v, want a duplicate with no turn", again)
	}
	_, count, _ := rec.snapshot()
	sent, _ := snd.counts()
	if diff := cmp.Diff(map[string]int{"wamid.A": 1}, count); diff != "" {
		t.Errorf("turns (-want, +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]int{r.ReplyKey("wamid.A", 0): 1}, sent); diff != "" {
		t.Errorf("sends (-want, +got):\n%s", diff)
	}
	m, err := st.GetMessage(ctx, first.ConversationID, "wamid.A")
	if err != nil {
		t.Fatalf("GetMessage: %v", err)
	}
	if m.Turn != store.TurnDone || m.InInbox || len(m.Replies) != 1 || m.Replies[0].GraphMessageID == "" || m.Text != "hello" {
		t.Errorf("stored message = %+v, want done, out of the inbox, its reply's Graph id recorded", m)
	}
	conv, err := st.Get(ctx, first.ConversationID)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	if conv.Lease.Holder != "" || conv.Lease.Fence != 1 || len(conv.State.Turns) != 1 || conv.Contact != in.Message.From || conv.ContactID != in.ContactID ||
		!conv.LastInboundAt.Equal(base.Add(time.Second)) {
		t.Errorf("conversation = %+v, want the lease released at fence 1, one turn, last_inbound_at the message's", conv)
	}
}

func TestConcurrentMessagesRunInTimestampOrderOneAtATime(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const n = 20
	inbox := newCountingInbox(newStore(t, nil))
	gated := &storedGate{countingInbox: inbox, want: n, all: make(chan struct{})}
	snd, rec := newSender(), newRecorder()
	r := conversation.NewRunner(gated, snd, newActions(), withAnswers(conversation.Options{}))

	// Meta timestamps shuffled against the order the goroutines start in.
	stamps := rand.Perm(n)
	msgs := make([]conversation.Inbound, n)
	for i := range msgs {
		msgs[i] = inbound(fmt.Sprintf("wamid.%02d", i), int64(stamps[i]), "hi")
	}
	// The holder looks at the inbox only once every message is stored (storedGate), so the order
	// to check is the inbox's, not the goroutines' start order.

	start := make(chan struct{})
	results := make([]conversation.Result, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range msgs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			results[i], errs[i] = r.Handle(ctx, msgs[i], rec.turn)
		}()
	}
	close(start)
	wg.Wait()

	turns := 0
	for i, err := range errs {
		// A message queued behind the holder is not acknowledged (ErrHeld): the holder runs it.
		if err != nil && !(errors.Is(err, conversation.ErrHeld) && results[i].Queued) {
			t.Errorf("Handle %s: %v", msgs[i].Message.ID, err)
		}
		turns += results[i].Turns
	}
	want := make([]string, n)
	for i := range msgs {
		want[stamps[i]] = msgs[i].Message.ID
	}
	order, count, maxActive := rec.snapshot()
	if diff := cmp.Diff(want, order); diff != "" {
		t.Errorf("turn order (-want, +got):\n%s", diff)
	}
	if maxActive != 1 {
		t.Errorf("%d turns ran at once, want 1", maxActive)
	}
	for _, id := range want {
		if count[id] != 1 {
			t.Errorf("message %s: %d turns, want 1", id, count[id])
		}
	}
	if turns != n {
		t.Errorf("Handle results count %d turns, want %d", turns, n)
	}
	// Each turn saw the state the previous one left.
	for i, id := range want {
		if got := rec.seen[id]; got != i {
			t.Errorf("turn of %s saw %d earlier turns, want %d", id, got, i)
		}
	}
	sent, order2 := snd.counts()
	if len(sent) != n {
		t.Errorf("%d replies sent, want %d", len(sent), n)
	}
	for k, c := range sent {
		if c != 1 {
			t.Errorf("reply %s sent %d times", k, c)
		}
	}
	wantReplies := make([]string, n)
	for i, id := range want {
		wantReplies[i] = "re " + id
	}
	if diff := cmp.Diff(wantReplies, order2); diff != "" {
		t.Errorf("reply order (-want, +got):\n%s", diff)
	}
	calls, docs := inbox.snapshot()
	reads, writes := firestoreOps(calls, docs)
	t.Logf("figure: %d concurrent messages: %d reads, %d writes in the conversation store (%.1f reads, %.1f writes per turn; calls %v)",
		n, reads, writes, float64(reads)/n, float64(writes)/n, calls)
}

func TestSecondMessageRunsInTheHoldersDrain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	inbox := newCountingInbox(newStore(t, nil))
	snd, acts, rec := newSender(), newActions(), newRecorder()
	r := conversation.NewRunner(inbox, snd, acts, withAnswers(conversation.Options{}))
	book, yes := inbound("wamid.book", 1, "act"), inbound("wamid.yes", 2, "yes")

	second := make(chan conversation.Result, 1)
	secondErr := make(chan error, 1)
	rec.before = func(p conversation.Pending) {
		if p.MessageID != "wamid.book" {
			return
		}
		// "yes" arrives while "book" holds the conversation.
		res, err := r.Handle(ctx, yes, rec.turn)
		second <- res
		secondErr <- err
	}
	first, err := r.Handle(ctx, book, rec.turn)
	if err != nil {
		t.Fatalf("Handle book: %v", err)
	}
	if err := <-secondErr; !errors.Is(err, conversation.ErrHeld) {
		t.Fatalf("Handle yes: %v, want ErrHeld (queued behind the holder, not acknowledged)", err)
	}
	if res := <-second; !res.Queued || res.Turns != 0 {
		t.Errorf("yes while book holds the lease = %+v, want queued", res)
	}
	if first.Turns != 2 {
		t.Errorf("holder ran %d turns, want 2 (its own and the queued one)", first.Turns)
	}
	order, _, _ := rec.snapshot()
	if diff := cmp.Diff([]string{"wamid.book", "wamid.yes"}, order); diff != "" {
		t.Errorf("turn order (-want, +got):\n%s", diff)
	}
	if rec.seen["wamid.yes"] != 1 {
		t.Errorf("the yes turn saw %d earlier turns, want 1", rec.seen["wamid.yes"])
	}
	if len(acts.byID) != 1 {
		t.Errorf("actions enqueued %v, want one", acts.byID)
	}
	committed, _ := inbox.committedAt("wamid.book")
	started, _ := rec.started("wamid.yes")
	t.Logf("figure: second message's turn started %v after the first turn's commit (goal < 50ms)", started.Sub(committed))
}

func TestStaleHolderCannotCommit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := &clock{now: base}
	st := newStore(t, clk)
	snd, rec := newSender(), newRecorder()
	r := conversation.NewRunner(st, snd, newActions(), withAnswers(conversation.Options{Lease: time.Minute}))

	started, resume := make(chan struct{}), make(chan struct{})
	var once sync.Once
	rec.before = func(p conversation.Pending) {
		first := false
		once.Do(func() { first = true })
		if first {
			close(started)
			<-resume
		}
	}
	staleErr := make(chan error, 1)
	go func() {
		_, err := r.Handle(ctx, inbound("wamid.1", 1, "one"), rec.turn)
		staleErr <- err
	}()
	<-started
	// The holder's turn outlives its lease: a second message's task takes the conversation
	// over, with a higher fencing number, and runs both turns.
	clk.Add(time.Minute + time.Second)
	res, err := r.Handle(ctx, inbound("wamid.2", 2, "two"), rec.turn)
	if err != nil {
		t.Fatalf("Handle of the taking-over task: %v", err)
	}
	if res.Turns != 2 {
		t.Errorf("taking-over task ran %d turns, want 2", res.Turns)
	}
	close(resume)
	if err := <-staleErr; !errors.Is(err, store.ErrLeaseLost) {
		t.Errorf("stale holder's Handle = %v, want ErrLeaseLost", err)
	}
	m, err := st.GetMessage(ctx, res.ConversationID, "wamid.1")
	if err != nil {
		t.Fatalf("GetMessage: %v", err)
	}
	if m.Fence != 2 {
		t.Errorf("wamid.1 committed by fence %d, want 2 (the new holder)", m.Fence)
	}
	conv, err := st.Get(ctx, res.ConversationID)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	if got := len(conv.State.Turns); got != 2 {
		t.Errorf("state has %d turns, want 2: the stale turn must not be saved", got)
	}
	sent, _ := snd.counts()
	for k, c := range sent {
		if c != 1 {
			t.Errorf("reply %s sent %d times", k, c)
		}
	}
}

func TestKilledAfterCommitRetryPerformsEffectsOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := &clock{now: base}
	st := newStore(t, clk)
	snd, acts, rec := newSender(), newActions(), newRecorder()
	in := inbound("wamid.book", 1, "act")

	// The first instance commits the turn and dies before sending anything.
	dying := newCountingInbox(st)
	dying.killAfterCommit = true
	if _, err := conversation.NewRunner(dying, snd, acts, withAnswers(conversation.Options{})).Handle(ctx, in, rec.turn); !errors.Is(err, errKilled) {
		t.Fatalf("Handle on the dying instance = %v, want it killed", err)
	}
	if sent, _ := snd.counts(); len(sent) != 0 {
		t.Fatalf("the killed instance sent %v", sent)
	}

	// Cloud Tasks retries the unacknowledged task on another instance. Within the dead holder's
	// lease the retry is not acknowledged either (it cannot tell a dead holder from a live one),
	// so Cloud Tasks retries again; once the lease is over, the retry takes the conversation.
	r := conversation.NewRunner(st, snd, acts, withAnswers(conversation.Options{}))
	early, err := r.Handle(ctx, in, rec.turn)
	if !errors.Is(err, conversation.ErrHeld) || !early.Duplicate {
		t.Fatalf("retry within the dead holder's lease = %+v, %v; want ErrHeld", early, err)
	}
	clk.Add(conversation.DefaultLease)
	res, err := r.Handle(ctx, in, rec.turn)
	if err != nil {
		t.Fatalf("retry after the lease: %v", err)
	}
	if _, err := r.Handle(ctx, in, rec.turn); err != nil {
		t.Fatalf("another redelivery: %v", err)
	}
	if res.Turns != 0 {
		t.Errorf("retry ran %d turns, want 0: the turn was committed", res.Turns)
	}
	_, count, _ := rec.snapshot()
	if count["wamid.book"] != 1 {
		t.Errorf("turn ran %d times, want 1", count["wamid.book"])
	}
	sent, _ := snd.counts()
	if diff := cmp.Diff(map[string]int{r.ReplyKey("wamid.book", 0): 1}, sent); diff != "" {
		t.Errorf("sends (-want, +got):\n%s", diff)
	}
	if len(acts.byID) != 1 {
		t.Errorf("actions %v, want one enqueued once", acts.byID)
	}
	for id, c := range acts.byID {
		if c != 1 {
			t.Errorf("action %s enqueued %d times", id, c)
		}
	}
	if len(acts.reqs) == 1 && fmt.Sprint(acts.reqs[0].Data["price"]) != "15000000" {
		t.Errorf("recorded action's price = %v, want 15000000 as written", acts.reqs[0].Data["price"])
	}
	m, err := st.GetMessage(ctx, res.ConversationID, "wamid.book")
	if err != nil {
		t.Fatalf("GetMessage: %v", err)
	}
	if m.InInbox || m.Fence != 1 {
		t.Errorf("message inbox=%v fence=%d, want out of the inbox, committed by fence 1", m.InInbox, m.Fence)
	}
}

func TestKilledHoldersConversationIsTakenOverAfterItsLease(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := &clock{now: base}
	st := newStore(t, clk)
	snd, rec := newSender(), newRecorder()
	live := conversation.NewRunner(st, snd, newActions(), withAnswers(conversation.Options{}))
	first, second := inbound("wamid.1", 1, "one"), inbound("wamid.2", 2, "two")

	// The holder dies in the middle of its turn (during the LLM call): nothing is committed,
	// nothing released; meanwhile a second message is queued behind it.
	dying := newCountingInbox(st)
	var once sync.Once
	rec.before = func(p conversation.Pending) {
		once.Do(func() {
			dying.kill()
			res, err := live.Handle(ctx, second, rec.turn)
			if !errors.Is(err, conversation.ErrHeld) || !res.Queued {
				t.Errorf("second message during the dead holder's lease = %+v, %v; want queued", res, err)
			}
		})
	}
	if _, err := conversation.NewRunner(dying, snd, newActions(), withAnswers(conversation.Options{})).Handle(ctx, first, rec.turn); err == nil {
		t.Fatal("Handle on the killed instance succeeded")
	}

	clk.Add(conversation.DefaultLease)
	res, err := live.Handle(ctx, first, rec.turn)
	if err != nil {
		t.Fatalf("retry after the lease: %v", err)
	}
	if !res.Duplicate || res.Turns != 2 {
		t.Errorf("retry = %+v, want the stored message's retry running both turns", res)
	}
	order, count, _ := rec.snapshot()
	// The killed turn recorded nothing (it was killed before its turn ran to its end).
	if diff := cmp.Diff([]string{"wamid.1", "wamid.2"}, order[len(order)-2:]); diff != "" {
		t.Errorf("turns after takeover (-want, +got):\n%s", diff)
	}
	if count["wamid.2"] != 1 {
		t.Errorf("second message ran %d turns, want 1", count["wamid.2"])
	}
	sent, replies := snd.counts()
	if diff := cmp.Diff([]string{"re wamid.1", "re wamid.2"}, replies); diff != "" {
		t.Errorf("replies (-want, +got):\n%s", diff)
	}
	for k, c := range sent {
		if c != 1 {
			t.Errorf("reply %s sent %d times", k, c)
		}
	}
	conv, err := st.Get(ctx, res.ConversationID)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	if conv.Lease.Fence != 2 || conv.Lease.Holder != "" {
		t.Errorf("lease = %+v, want released at fence 2", conv.Lease)
	}
}

// dieAfterEffects is an inbox whose instance dies right after it recorded a turn's effects
// done: before that, onEffects runs (another message arrives).
type dieAfterEffects struct {
	*countingInbox
	onEffects func()
	// killed is closed when the instance dies.
	killed   chan struct{}
	killOnce sync.Once
}

func newDieAfterEffects(st conversation.Inbox, onEffects func()) *dieAfterEffects {
	return &dieAfterEffects{countingInbox: newCountingInbox(st), onEffects: onEffects, killed: make(chan struct{})}
}

func (d *dieAfterEffects) MarkEffectsDone(ctx context.Context, id, mid string, replies []store.Reply) error {
	err := d.countingInbox.MarkEffectsDone(ctx, id, mid, replies)
	d.onEffects()
	d.kill()
	d.killOnce.Do(func() { close(d.killed) })
	return err
}

// NextInbox: the drain looks at the inbox again while its effects run (skip names them). The
// instance these tests kill dies before that look reaches Firestore, whenever the goroutines are
// scheduled: otherwise a message stored during the effects could be seen and its turn run (and
// not committed) before the kill, and the turn count would depend on timing.
func (d *dieAfterEffects) NextInbox(ctx context.Context, id, skip string) (store.Message, bool, error) {
	if skip != "" {
		<-d.killed
	}
	return d.countingInbox.NextInbox(ctx, id, skip)
}

// storedGate holds every NextInbox until want messages have been stored (their AddInbound
// returned): the holder then picks from the whole inbox, whatever the scheduling.
type storedGate struct {
	*countingInbox
	want int
	mu   sync.Mutex
	done int
	all  chan struct{}
}

func (g *storedGate) AddInbound(ctx context.Context, id string, m store.Message) (bool, store.Message, error) {
	created, stored, err := g.countingInbox.AddInbound(ctx, id, m)
	if err == nil {
		g.mu.Lock()
		g.done++
		if g.done == g.want {
			close(g.all)
		}
		g.mu.Unlock()
	}
	return created, stored, err
}

func (g *storedGate) NextInbox(ctx context.Context, id, skip string) (store.Message, bool, error) {
	select {
	case <-g.all:
	case <-ctx.Done():
		return store.Message{}, false, ctx.Err()
	case <-time.After(60 * time.Second):
		return store.Message{}, false, errors.New("not every message was stored within 60 s")
	}
	return g.countingInbox.NextInbox(ctx, id, skip)
}

// TestKilledHoldersRetryDrainsMessagesQueuedBehindIt: the holder finishes its own message (turn
// and reply done) and dies before it looks at the inbox again; a second message arrived
// meanwhile and was acknowledged as queued behind the holder. The holder's retry finds its own
// message handled, but must still run the second one (after the dead holder's lease), or that
// message would never be answered.
func TestKilledHoldersRetryDrainsMessagesQueuedBehindIt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := &clock{now: base}
	st := newStore(t, clk)
	snd, rec := newSender(), newRecorder()
	live := conversation.NewRunner(st, snd, newActions(), withAnswers(conversation.Options{}))
	first, second := inbound("wamid.1", 1, "one"), inbound("wamid.2", 2, "two")

	var once sync.Once
	dying := newDieAfterEffects(st, func() {
		once.Do(func() {
			res, err := live.Handle(ctx, second, rec.turn)
			if !errors.Is(err, conversation.ErrHeld) || !res.Queued {
				t.Errorf("second message during the holder's drain = %+v, %v; want queued", res, err)
			}
		})
	})
	if _, err := conversation.NewRunner(dying, snd, newActions(), withAnswers(conversation.Options{})).Handle(ctx, first, rec.turn); err == nil {
		t.Fatal("Handle on the killed instance succeeded")
	}

	// Within the dead holder's lease the retry waits; after it, it takes over.
	if _, err := live.Handle(ctx, first, rec.turn); !errors.Is(err, conversation.ErrHeld) {
		t.Fatalf("retry within the dead holder's lease: %v, want ErrHeld", err)
	}
	clk.Add(conversation.DefaultLease)
	res, err := live.Handle(ctx, first, rec.turn)
	if err != nil {
		t.Fatalf("retry after the lease: %v", err)
	}
	if !res.Duplicate || res.Turns != 1 {
		t.Errorf("retry = %+v, want a duplicate that ran the queued message's turn", res)
	}
	_, count, _ := rec.snapshot()
	if count["wamid.1"] != 1 || count["wamid.2"] != 1 {
		t.Errorf("turns run: %v, want one each", count)
	}
	if _, replies := snd.counts(); !slices.Equal(replies, []string{"re wamid.1", "re wamid.2"}) {
		t.Errorf("replies %v, want one to each message", replies)
	}
}

// TestMessageQueuedBehindADeadLeaseIsRunByItsOwnRetry (found by the chaos run): the holder dies
// right after its turn's effects, its task's retry finds its own message handled and nothing
// waiting, and ends; only then a second message arrives, while the dead holder's lease still
// runs. No live task holds the conversation, so the second message's task must not be
// acknowledged as queued: its own retry takes the conversation once the lease expires and runs it.
func TestMessageQueuedBehindADeadLeaseIsRunByItsOwnRetry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := &clock{now: base}
	st := newStore(t, clk)
	snd, rec := newSender(), newRecorder()
	live := conversation.NewRunner(st, snd, newActions(), withAnswers(conversation.Options{}))
	first, second := inbound("wamid.1", 1, "one"), inbound("wamid.2", 2, "two")

	dying := newDieAfterEffects(st, func() {})
	if _, err := conversation.NewRunner(dying, snd, newActions(), withAnswers(conversation.Options{})).Handle(ctx, first, rec.turn); err == nil {
		t.Fatal("Handle on the killed instance succeeded")
	}
	if res, err := live.Handle(ctx, first, rec.turn); err != nil || !res.Duplicate {
		t.Fatalf("the dead holder's retry = %+v, %v; want its message found handled", res, err)
	}
	res, err := live.Handle(ctx, second, rec.turn)
	if !errors.Is(err, conversation.ErrHeld) || !res.Queued {
		t.Fatalf("second message behind the dead lease = %+v, %v; want queued and not acknowledged (ErrHeld)", res, err)
	}
	if _, err := live.Handle(ctx, second, rec.turn); !errors.Is(err, conversation.ErrHeld) {
		t.Fatalf("its retry within the dead lease: %v, want ErrHeld", err)
	}
	clk.Add(conversation.DefaultLease)
	res, err = live.Handle(ctx, second, rec.turn)
	if err != nil || res.Turns != 1 {
		t.Fatalf("its retry after the lease = %+v, %v; want it to run its turn", res, err)
	}
	_, count, _ := rec.snapshot()
	if count["wamid.1"] != 1 || count["wamid.2"] != 1 {
		t.Errorf("turns run: %v, want one each", count)
	}
	if _, replies := snd.counts(); !slices.Equal(replies, []string{"re wamid.1", "re wamid.2"}) {
		t.Errorf("replies %v, want one to each message", replies)
	}
}

func TestFailedTurnIsRetriedWithItsState(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := newStore(t, nil)
	snd, rec := newSender(), newRecorder()
	r := conversation.NewRunner(st, snd, newActions(), withAnswers(conversation.Options{}))
	errLLM := errors.New("vertex unavailable")
	fail := true
	in := inbound("wamid.1", 1, "hi")
	turn := func(ctx context.Context, p conversation.Pending, s turnstate.State) (assistant.Outcome, error) {
		if fail {
			return assistant.Outcome{}, errLLM
		}
		return rec.turn(ctx, p, s)
	}
	if _, err := r.Handle(ctx, in, turn); !errors.Is(err, errLLM) {
		t.Fatalf("Handle with a failing turn = %v, want its error", err)
	}
	fail = false
	res, err := r.Handle(ctx, in, turn)
	if err != nil || res.Turns != 1 || !res.Duplicate {
		t.Fatalf("retry = %+v, %v; want the turn run once, at once (the lease was released)", res, err)
	}
	sent, _ := snd.counts()
	if len(sent) != 1 {
		t.Errorf("sends %v, want one", sent)
	}
}

func TestFirestoreOpsPerTurn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	inbox := newCountingInbox(newStore(t, nil))
	r := conversation.NewRunner(inbox, newSender(), newActions(), withAnswers(conversation.Options{}))
	rec := newRecorder()
	const n = 5
	for i := range n {
		if _, err := r.Handle(ctx, inbound(fmt.Sprintf("wamid.%d", i), int64(i), "hi"), rec.turn); err != nil {
			t.Fatalf("Handle: %v", err)
		}
	}
	calls, docs := inbox.snapshot()
	reads, writes := firestoreOps(calls, docs)
	perReads, perWrites := float64(reads)/n, float64(writes)/n
	t.Logf("figure: one message at a time, one reply each: %.1f reads, %.1f writes per turn in the conversation store (calls %v)",
		perReads, perWrites, calls)
	// store (1 write), lease (1+1), inbox query (1), commit (1+2), effects done (1), inbox
	// query (1), release (1+1), re-check (1).
	if perReads > 6 || perWrites > 6 {
		t.Errorf("%.1f reads and %.1f writes per turn, want at most 6 and 6", perReads, perWrites)
	}
}

// BenchmarkSecondMessageStart measures how long a message queued behind a running turn waits,
// from the first turn's commit to the start of its own turn (goal: under 50 ms).
func BenchmarkSecondMessageStart(b *testing.B) {
	ctx := context.Background()
	db, _ := testenv.Store(b)
	inbox := newCountingInbox(store.NewConversationStore(db, store.Options{}))
	r := conversation.NewRunner(inbox, newSender(), newActions(), withAnswers(conversation.Options{}))
	var delays []time.Duration
	for i := 0; b.Loop(); i++ {
		rec := newRecorder()
		first, second := inbound(fmt.Sprintf("wamid.%d.a", i), 1, "book"), inbound(fmt.Sprintf("wamid.%d.b", i), 2, "yes")
		first.Message.From = fmt.Sprint(6280000000000 + i)
		second.Message.From = first.Message.From
		rec.before = func(p conversation.Pending) {
			if p.MessageID == first.Message.ID {
				if res, err := r.Handle(ctx, second, rec.turn); !errors.Is(err, conversation.ErrHeld) || !res.Queued {
					b.Errorf("second Handle = %+v, %v", res, err)
				}
			}
		}
		if _, err := r.Handle(ctx, first, rec.turn); err != nil {
			b.Fatalf("Handle: %v", err)
		}
		c, ok1 := inbox.committedAt(first.Message.ID)
		s, ok2 := rec.started(second.Message.ID)
		if !ok1 || !ok2 {
			b.Fatal("a turn did not run")
		}
		delays = append(delays, s.Sub(c))
	}
	sort.Slice(delays, func(i, j int) bool { return delays[i] < delays[j] })
	b.ReportMetric(float64(delays[len(delays)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(delays[len(delays)*95/100].Microseconds())/1000, "p95-ms")
}

func TestUnsentRepliesGoBeforeTheNextTurn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := newStore(t, nil)
	snd, rec := newSender(), newRecorder()
	errGraph := errors.New("graph 503")
	down := true
	snd.fail = func(string) error {
		if down {
			return errGraph
		}
		return nil
	}
	r := conversation.NewRunner(st, snd, newActions(), withAnswers(conversation.Options{}))
	if _, err := r.Handle(ctx, inbound("wamid.1", 1, "one"), rec.turn); !errors.Is(err, errGraph) {
		t.Fatalf("Handle while Graph is down = %v, want its error (the task is retried)", err)
	}
	snd.mu.Lock()
	down = false
	snd.mu.Unlock()
	res, err := r.Handle(ctx, inbound("wamid.2", 2, "two"), rec.turn)
	if err != nil || res.Turns != 1 {
		t.Fatalf("next message = %+v, %v; want its one turn", res, err)
	}
	_, count, _ := rec.snapshot()
	sent, replies := snd.counts()
	if diff := cmp.Diff([]string{"re wamid.1", "re wamid.2"}, replies); diff != "" {
		t.Errorf("replies (-want, +got): the committed turn's reply first\n%s", diff)
	}
	if count["wamid.1"] != 1 || len(sent) != 2 {
		t.Errorf("turns %v, sends %v: want the first turn not redone, each reply sent once", count, sent)
	}
}

// TestBareAnswerWaitsForTheMessageItAnswers: a "yes" that reaches the conversation before the
// "book …" it answers (sent a moment earlier) is held, and runs after it, where the assistant
// may have something pending; elsewhere (ack mode) nothing waits.
func TestBareAnswerWaitsForTheMessageItAnswers(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		from       string
		mayConfirm bool
		grace      time.Duration
		want       []string
	}{
		{"held where an action may be pending", "6281200000001", true, time.Second, []string{"wamid.book1", "wamid.yes1"}},
		// An hour's grace: were the yes held, it would not run within the test.
		{"not held in ack mode", "6281200000002", false, time.Hour, []string{"wamid.yes2", "wamid.book2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			r := conversation.NewRunner(newStore(t, nil), newSender(), newActions(), withAnswers(conversation.Options{AnswerGrace: tc.grace}))
			rec := newRecorder()
			now := time.Now()
			msg := func(id string, ts time.Time, received time.Time, text string) conversation.Inbound {
				in := inbound(id+tc.from[len(tc.from)-1:], 0, text)
				in.ReceivedAt, in.MayConfirm = received, tc.mayConfirm
				in = of(in, tc.from)
				in.Message.Timestamp = fmt.Sprint(ts.Unix())
				return in
			}
			yes := msg("wamid.yes", now.Add(time.Second), now, "ya")
			book := msg("wamid.book", now, now.Add(200*time.Millisecond), "book bus 01")
			errs := make(chan error, 2)
			go func() { _, err := r.Handle(ctx, yes, rec.turn); errs <- err }()
			if tc.mayConfirm {
				time.Sleep(200 * time.Millisecond) // the "book" reaches the worker after the "yes"
			} else {
				// Not held: the "yes" runs at once, before the "book" arrives.
				testenv.Eventually(t, 10*time.Second, func() bool { _, ok := rec.started(yes.Message.ID); return ok },
					"the yes never ran")
			}
			go func() { _, err := r.Handle(ctx, book, rec.turn); errs <- err }()
			for range 2 {
				// The one queued behind the other's holder is not acknowledged (ErrHeld).
				if err := <-errs; err != nil && !errors.Is(err, conversation.ErrHeld) {
					t.Fatal(err)
				}
			}
			if order, _, _ := rec.snapshot(); !slices.Equal(order, tc.want) {
				t.Errorf("turns ran in the order %v, want %v", order, tc.want)
			}
		})
	}
}

// TestConfirmTapWaitsForThePromptsEffects: a confirm_yes tap queued behind the turn that sent
// the confirmation runs only once that turn's effects are recorded, so it sees the prompt's Graph
// message id (which tells a tap on this prompt from a tap on an older one), however slow the
// send.
func TestConfirmTapWaitsForThePromptsEffects(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := newStore(t, nil)
	snd, rec := newSender(), newRecorder()
	r := conversation.NewRunner(st, snd, newActions(), withAnswers(conversation.Options{}))
	book := inbound("wamid.book", 1, "book bus 01")
	tap := inbound("wamid.tap", 2, "")
	tap.Message.Type, tap.Message.Text = "interactive", ""
	tap.Message.Reply = &whatsapp.Reply{Kind: "button_reply", ID: assistant.ButtonYes, Title: "Yes"}
	queued := make(chan struct{})
	var seen []store.Reply
	rec.before = func(p conversation.Pending) {
		switch p.MessageID {
		case book.Message.ID:
			<-queued // the tap is in the inbox before the booking's turn commits
		case tap.Message.ID:
			m, err := st.GetMessage(ctx, p.ConversationID, book.Message.ID)
			if err != nil {
				t.Errorf("GetMessage: %v", err)
			}
			seen = m.Replies
		}
	}
	// The prompt's send takes its time: up to 2 s, or until the tap's turn starts.
	snd.fail = func(key string) error {
		if key == r.ReplyKey(book.Message.ID, 0) {
			deadline := time.Now().Add(2 * time.Second)
			for time.Now().Before(deadline) {
				if _, ok := rec.started(tap.Message.ID); ok {
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
		}
		return nil
	}
	errs := make(chan error, 1)
	go func() { _, err := r.Handle(ctx, book, rec.turn); errs <- err }()
	testenv.Eventually(t, 10*time.Second, func() bool { _, ok := rec.started(book.Message.ID); return ok }, "the booking's turn never started")
	res, err := r.Handle(ctx, tap, rec.turn)
	if !errors.Is(err, conversation.ErrHeld) || !res.Queued {
		t.Fatalf("tap = %+v, %v; want queued behind the booking", res, err)
	}
	close(queued)
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
	if order, _, _ := rec.snapshot(); !slices.Equal(order, []string{book.Message.ID, tap.Message.ID}) {
		t.Fatalf("turns %v, want the booking then the tap", order)
	}
	if len(seen) != 1 || seen[0].GraphMessageID == "" {
		t.Errorf("the tap's turn saw the prompt's replies %+v, want its Graph message id", seen)
	}
}

// withAnswers gives the runner the assistant's answers, as the worker does.
func withAnswers(o conversation.Options) conversation.Options {
	o.IsConfirmTap, o.IsAnswerWord, o.IsQuotaNotice = assistant.IsConfirmTap, assistant.IsAnswerWord, assistant.IsQuotaNotice
	return o
}

// TestAwaitHolderRunsTheMessageOnceTheDeadHoldersLeaseEnds: a task's last attempt for a message
// queued behind a holder that never drains waits for the holder's lease to end, then takes the
// conversation and runs the message (Handle would answer ErrHeld and leave it to a retry that
// never comes). The ghost's lease (4 s) is longer than the runner's own (1 s): AwaitHolder waits
// for the holder's, up to its own lease and a margin.
func TestAwaitHolderRunsTheMessageOnceTheDeadHoldersLeaseEnds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := newStore(t, nil)
	snd, rec := newSender(), newRecorder()
	r := conversation.NewRunner(st, snd, newActions(), withAnswers(conversation.Options{Lease: time.Second}))
	first, err := r.Handle(ctx, inbound("wamid.1", 1, "one"), rec.turn)
	if err != nil {
		t.Fatalf("first message: %v", err)
	}
	if _, taken, err := st.Acquire(ctx, first.ConversationID, "ghost", 4*time.Second, nil); err != nil || !taken {
		t.Fatalf("the ghost holder's acquire: %v, %v", taken, err)
	}
	second := inbound("wamid.2", 2, "two")
	if _, err := r.Handle(ctx, second, rec.turn); !errors.Is(err, conversation.ErrHeld) {
		t.Fatalf("Handle behind the ghost: %v, want ErrHeld", err)
	}
	res, err := r.AwaitHolder(ctx, second, rec.turn)
	if err != nil || res.Turns != 1 {
		t.Fatalf("AwaitHolder = %+v, %v; want the message's turn run", res, err)
	}
	if _, count, _ := rec.snapshot(); count["wamid.2"] != 1 {
		t.Errorf("turns run: %v, want one for wamid.2", count)
	}
}
