package conversation

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/wapipe/wapipe/internal/assistant"
	"github.com/wapipe/wapipe/internal/contact"
	"github.com/wapipe/wapipe/internal/keyedid"
	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/internal/randid"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/turnstate"
	"github.com/wapipe/wapipe/internal/whatsapp"
)

// DefaultLease is how long a holder keeps the conversation without committing a turn: long
// enough for one turn (an LLM call and its retry), short enough that a killed holder's
// conversation is taken over soon after Cloud Tasks retries its task.
const DefaultLease = 60 * time.Second

// Inbound is one inbound message to handle. Fields left empty are taken from Message (Meta's
// id, sender, number, profile name and timestamp).
type Inbound struct {
	TenantID      string `json:"tenant_id"`
	PhoneNumberID string `json:"phone_number_id"`
	// ConversationID is the conversation the message belongs to (people.Sender), ContactID the
	// sender's contact (ct_…) and Person its identity as known when the message arrived
	// (personal data: never logged).
	ConversationID string           `json:"conversation_id,omitempty"`
	ContactID      string           `json:"contact_id,omitempty"`
	Person         contact.Identity `json:"person,omitzero"`
	// Contact is the sender's phone, as stored messages from before contacts name it.
	Contact     string `json:"contact,omitempty"`
	ContactName string `json:"contact_name,omitempty"`
	MessageID   string `json:"message_id"`
	// Timestamp is Meta's timestamp, Unix seconds.
	Timestamp int64            `json:"timestamp"`
	Message   whatsapp.Message `json:"message"`
	// ReceivedAt is when the webhook received the message: the turn's clock (assistant
	// Input.Now), the same on every redo.
	ReceivedAt     time.Time `json:"received_at"`
	InboundEventID string    `json:"inbound_event_id,omitempty"`
	CorrelationID  string    `json:"correlation_id,omitempty"`
	// MayConfirm says the conversation's assistant can have a pending action (a tenant in
	// mode llm): only then is a bare yes/no held (Options.AnswerGrace).
	MayConfirm bool `json:"may_confirm,omitempty"`
	// LastAttempt says the task delivering this message will not be retried: every reply the
	// Handle call sends (this message's and those it drains) is sent as on a last attempt
	// (Outgoing.LastAttempt). It belongs to the delivery, so it is not stored.
	LastAttempt bool `json:"-"`
}

// Pending is an inbox message whose turn is to run (or whose effects are to be performed).
type Pending struct {
	Inbound
	ConversationID string
	// HumanAt is when a human of the business last answered in the conversation (store's
	// Conversation.HumanAt), as the drain last read it.
	HumanAt time.Time
}

// TurnFunc runs the turn of p from the state st the previous turn left, and returns what to
// send and do and the state to save (package turn: the message's steps, then the assistant).
// Outcome.State is saved as it is. An error commits nothing: the drain stops and Handle returns
// it, so the task is retried and the turn redone.
type TurnFunc func(ctx context.Context, p Pending, st turnstate.State) (assistant.Outcome, error)

// Sender sends one reply of a turn. It must be idempotent by r.IdempotencyKey
// (delivery.ReplySender backs it with its outbound records): a redone turn sends the same
// replies with the same keys. It returns an error only when the send should be retried; a reply
// that failed for good is its to record, and it returns nil for it.
type Sender interface {
	SendReply(ctx context.Context, r Outgoing) (graphMessageID string, err error)
}

// Outgoing is one reply to send.
type Outgoing struct {
	Pending        Pending
	Reply          assistant.Reply
	IdempotencyKey string
	// LastAttempt: the task sending it will not be retried (Inbound.LastAttempt of the Handle
	// call), so an outcome that would be retried is settled for good.
	LastAttempt bool
}

// Actions runs the action a turn asked for as its own task. It must be idempotent by the
// request's ActionID: a redone turn enqueues the same request again.
type Actions interface {
	EnqueueAction(ctx context.Context, p Pending, req assistant.ActionRequest) error
}

// Inbox is the conversation store the runner works on; *store.ConversationStore implements it.
type Inbox interface {
	AddInbound(ctx context.Context, conversationID string, m store.Message) (bool, store.Message, error)
	Acquire(ctx context.Context, conversationID, holder string, d time.Duration, touch *store.Touch) (store.Conversation, bool, error)
	NextInbox(ctx context.Context, conversationID, skip string) (store.Message, bool, error)
	CommitTurn(ctx context.Context, conversationID string, lease store.Lease, messageID string, t store.TurnCommit, d time.Duration) (store.Conversation, error)
	MarkEffectsDone(ctx context.Context, conversationID, messageID string, replies []store.Reply) error
	Release(ctx context.Context, conversationID string, lease store.Lease) error
}

// DefaultAnswerGrace is how long a bare "yes" or "no" with nothing pending waits, counted from
// the webhook's receipt, for the message it answers: see Options.AnswerGrace.
const DefaultAnswerGrace = 2 * time.Second

// Options configure a Runner; zero values take the defaults.
type Options struct {
	// Lease is DefaultLease when zero.
	Lease time.Duration
	// AnswerGrace: a text that is only a confirming or rejecting word ("yes", "ya", "non"…),
	// with no action pending, is held until it was received AnswerGrace ago before its turn
	// runs, and the inbox is read again. A user who sends "book …" then "yes" a moment later
	// may have the "yes" reach the conversation first (the hops between the webhook and here
	// run concurrently), and run alone it would answer nothing; held, the "book …" it follows
	// arrives and runs first (its earlier Meta timestamp sorts it ahead). Other messages never
	// wait. DefaultAnswerGrace when zero; negative turns it off.
	AnswerGrace time.Duration
	// IsConfirmTap reports a tap on a confirmation prompt's buttons: its turn checks the prompt's
	// Graph id, so it waits until the running effects have recorded the prompt's send. The worker
	// passes the assistant's (assistant.IsConfirmTap); nil: no message is such a tap.
	IsConfirmTap func(whatsapp.Message) bool
	// IsAnswerWord reports a text that is only a confirming or rejecting word, which AnswerGrace
	// holds. The worker passes the assistant's (assistant.IsAnswerWord); nil: no text is held.
	IsAnswerWord func(text string) bool
	// DescribeMedia is what the stored message keeps of a media message (never its bytes): from
	// the message alone when it is stored, then with the file its turn fetched (att, never nil
	// then). The worker passes media.Describe; nil: nothing is kept.
	DescribeMedia func(m whatsapp.Message, att *assistant.Attachment) *store.Media
	// IsQuotaNotice reports the reply that tells a contact the LLM quota is used up, which the
	// stored turn marks (store.Reply.QuotaExceeded). The worker passes the assistant's
	// (assistant.IsQuotaNotice); nil: no reply is such a notice.
	IsQuotaNotice func(assistant.Reply) bool
	// Keyer keys the replies' idempotency keys (ReplyKey); the development key's when nil.
	Keyer *keyedid.Keyer
}

// Runner serialises the turns of each conversation (see the package comment). Safe for
// concurrent use.
type Runner struct {
	inbox   Inbox
	sender  Sender
	actions Actions
	lease   time.Duration
	grace   time.Duration
	now     func() time.Time
	// isConfirmTap, isAnswerWord and isQuotaNotice are Options' (never nil): the assistant's
	// words, not the runner's.
	isConfirmTap  func(whatsapp.Message) bool
	isAnswerWord  func(string) bool
	isQuotaNotice func(assistant.Reply) bool
	// describeMedia is Options.DescribeMedia (never nil).
	describeMedia func(whatsapp.Message, *assistant.Attachment) *store.Media
	keyer         *keyedid.Keyer
}

// NewRunner returns a runner on inbox that sends replies with sender and enqueues actions with
// actions (nil when no turn asks for one: such a turn then fails).
func NewRunner(inbox Inbox, sender Sender, actions Actions, opts Options) *Runner {
	if inbox == nil || sender == nil {
		panic("conversation.NewRunner: nil Inbox or Sender")
	}
	if opts.Lease <= 0 {
		opts.Lease = DefaultLease
	}
	if opts.AnswerGrace == 0 {
		opts.AnswerGrace = DefaultAnswerGrace
	}
	if opts.IsConfirmTap == nil {
		opts.IsConfirmTap = func(whatsapp.Message) bool { return false }
	}
	if opts.IsAnswerWord == nil {
		opts.IsAnswerWord = func(string) bool { return false }
	}
	if opts.DescribeMedia == nil {
		opts.DescribeMedia = func(whatsapp.Message, *assistant.Attachment) *store.Media { return nil }
	}
	if opts.IsQuotaNotice == nil {
		opts.IsQuotaNotice = func(assistant.Reply) bool { return false }
	}
	if opts.Keyer == nil {
		opts.Keyer = keyedid.Dev()
	}
	return &Runner{inbox: inbox, sender: sender, actions: actions, lease: opts.Lease, grace: opts.AnswerGrace, now: time.Now,
		isConfirmTap: opts.IsConfirmTap, isAnswerWord: opts.IsAnswerWord, isQuotaNotice: opts.IsQuotaNotice, describeMedia: opts.DescribeMedia,
		keyer: opts.Keyer}
}

// ErrHeld is returned by Handle for a message in the inbox while another holder has the
// conversation: that holder may be dead (the task's own earlier attempt killed mid-turn, or a
// holder killed after its last commit whose task's retry already ended), so the task must not be
// acknowledged. Retry it: if the holder is alive, the retry finds the message handled; once a
// dead holder's lease expires, the retry takes the conversation and runs the message's turn.
var ErrHeld = errors.New("conversation held by another task while this message is still in its inbox")

// Result says what Handle did.
type Result struct {
	ConversationID string
	// Duplicate: the message was in the inbox already (a redelivery).
	Duplicate bool
	// Queued: another task holds the conversation and, if alive, runs the message's turn; Handle
	// then returns ErrHeld, so the task is retried to check.
	Queued bool
	// Turns counts the turns this call ran and committed, its own message's and others'.
	Turns int
}

// Status names what Handle did, for logs and the task's answer: "duplicate" (a redelivery that
// ran no turn), "queued" (another task holds the conversation) or "handled".
func (r Result) Status() string {
	switch {
	case r.Duplicate && !r.Queued && r.Turns == 0:
		return "duplicate"
	case r.Queued:
		return "queued"
	}
	return "handled"
}

// ReplyKey is the idempotency key of reply index of the turn of inbound message messageID:
// keyed (keyedid.Keyer.ReplyKey), the first one's being tasks.IdempotencyKey's, the key of the
// outbound task of the message. A turn records its replies' keys when it commits and its
// effects always use the recorded keys, so a turn committed before keys were keyed still
// sends under the keys it recorded, once.
func (r *Runner) ReplyKey(messageID string, index int) string {
	return r.keyer.ReplyKey(messageID, index)
}

// Handle stores in in its conversation's inbox and, when this call takes the conversation's
// lease, runs the inbox's turns with turn until it is empty. Acknowledge the task only when it
// returns nil: an error means the message (or one queued behind it) still has work to do.
func (r *Runner) Handle(ctx context.Context, in Inbound, turn TurnFunc) (Result, error) {
	in, err := in.normalize()
	if err != nil {
		return Result{}, err
	}
	convID := in.ConversationID
	res := Result{ConversationID: convID}
	ctx, logger := logging.With(ctx, "conversation_id", convID)

	payload, err := json.Marshal(in)
	if err != nil {
		return res, fmt.Errorf("encode inbound message: %w", err)
	}
	created, stored, err := r.inbox.AddInbound(ctx, convID, store.Message{
		MessageID: in.MessageID, Type: in.Message.Type, Text: messageText(in.Message), Timestamp: in.Timestamp,
		ReceivedAt: in.ReceivedAt, Payload: string(payload), InboundEventID: in.InboundEventID,
		CorrelationID: in.CorrelationID, ContactName: in.ContactName, Media: r.describeMedia(in.Message, nil),
	})
	if err != nil {
		return res, err
	}
	if !created {
		res.Duplicate = true
		if !stored.InInbox {
			// Its own turn is done, but this may be the retry of a holder that died in its
			// drain: messages queued behind it were acknowledged on the strength of that
			// holder, and only this retry can run them. Drain when any waits.
			_, waiting, err := r.inbox.NextInbox(ctx, convID, "")
			if err != nil {
				return res, err
			}
			if !waiting {
				logger.InfoContext(ctx, "message already handled", "event", "conversation_duplicate")
				return res, nil
			}
			logger.InfoContext(ctx, "message already handled; messages wait in the inbox: draining them",
				"event", "conversation_duplicate_drain")
		}
	}

	holder := newHolder()
	conv, taken, err := r.inbox.Acquire(ctx, convID, holder, r.lease, touchOf(in))
	if err != nil {
		return res, err
	}
	if !taken {
		// The holder normally runs the message in its drain, at once. But the holder may be dead
		// (killed after its last commit, its own task's retry already ended), and then nobody
		// would: so the task is not acknowledged. Its retry finds the message handled, or, once
		// a dead holder's lease has expired, takes the conversation and runs it.
		res.Queued = true
		event := "conversation_queued"
		if res.Duplicate {
			event = "conversation_held"
		}
		logger.InfoContext(ctx, "conversation held by another task: its holder runs the message, its retry checks",
			"event", event, "fence", conv.Lease.Fence, "lease_expires_at", conv.Lease.ExpiresAt)
		return res, ErrHeld
	}
	d := &drain{r: r, convID: convID, holder: holder, lease: conv.Lease, state: conv.State, humanAt: conv.HumanAt, turn: turn, res: &res,
		lastAttempt: in.LastAttempt}
	return res, d.run(ctx)
}

// holderPoll is how often AwaitHolder looks again.
const holderPoll = 250 * time.Millisecond

// AwaitHolder is Handle for a task's last attempt. Handle answers ErrHeld for a message queued
// behind another holder and counts on the task's retry to look again; on the last attempt no
// retry would, so AwaitHolder looks again here until the holder has run the message (Handle finds
// it handled) or the holder's lease has expired (Handle takes the conversation and runs it), for
// at most one lease and a margin. A busy conversation then never dead-letters a message its live
// holder is about to answer; a dead holder's message is still run, or, when the wait ends with
// the conversation still held, ErrHeld is returned.
func (r *Runner) AwaitHolder(ctx context.Context, in Inbound, turn TurnFunc) (Result, error) {
	res, err := r.Handle(ctx, in, turn)
	if !errors.Is(err, ErrHeld) {
		return res, err
	}
	wait := r.lease + 10*time.Second
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	tick := time.NewTicker(holderPoll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return res, fmt.Errorf("%w (waited %s for its holder)", ErrHeld, wait)
		case <-tick.C:
		}
		if res, err = r.Handle(ctx, in, turn); !errors.Is(err, ErrHeld) {
			return res, err
		}
	}
}

// drain is one holder's run through the inbox.
type drain struct {
	r      *Runner
	convID string
	holder string
	lease  store.Lease
	state  turnstate.State
	// humanAt is the conversation's HumanAt as last read (takeover).
	humanAt time.Time
	turn    TurnFunc
	res     *Result
	// job is the previous turn's effects, performed while the next turn runs.
	job *effects
	// lastAttempt is the Handle call's Inbound.LastAttempt.
	lastAttempt bool
}

func (d *drain) run(ctx context.Context) error {
	logger := logging.FromContext(ctx)
	for {
		skip := ""
		if d.job != nil {
			skip = d.job.messageID
		}
		m, ok, err := d.r.inbox.NextInbox(ctx, d.convID, skip)
		if err != nil {
			return d.stop(ctx, err, true)
		}
		if !ok {
			if err := d.wait(); err != nil {
				return d.stop(ctx, err, true)
			}
			if err := d.r.inbox.Release(ctx, d.convID, d.lease); err != nil {
				return err
			}
			// A message stored while the lease was being released found it held and relies on
			// this holder: look once more, and take the lease again for it.
			if _, ok, err := d.r.inbox.NextInbox(ctx, d.convID, ""); err != nil || !ok {
				return err
			}
			conv, taken, err := d.r.inbox.Acquire(ctx, d.convID, d.holder, d.r.lease, nil)
			if err != nil || !taken {
				return err
			}
			d.lease, d.state, d.humanAt = conv.Lease, conv.State, conv.HumanAt
			logger.InfoContext(ctx, "lease taken again for a message stored during its release",
				"event", "conversation_reacquired", "fence", d.lease.Fence)
			continue
		}
		p, err := pendingOf(d.convID, m)
		if err != nil {
			return d.stop(ctx, err, true)
		}
		p.HumanAt = d.humanAt
		if m.Turn == store.TurnDone {
			// An earlier holder committed this turn and stopped before its effects.
			if err := d.wait(); err != nil {
				return d.stop(ctx, err, true)
			}
			logger.InfoContext(ctx, "performing a committed turn's effects", "event", "conversation_effects_redo",
				"fence", d.lease.Fence, "committed_fence", m.Fence)
			d.job = d.r.perform(ctx, p, m, d.lastAttempt)
			continue
		}
		if wait := d.r.holdAnswer(p, d.state); wait > 0 {
			logger.InfoContext(ctx, "a bare answer with nothing pending waits for the message it answers",
				"event", "conversation_answer_held", "wait_ms", wait.Milliseconds())
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return d.stop(ctx, ctx.Err(), true)
			}
			continue
		}
		if d.r.isConfirmTap(p.Message) {
			// The tap's turn checks that it answers the pending action's prompt by the
			// prompt's Graph id, which the running effects record when they have sent it.
			if err := d.wait(); err != nil {
				return d.stop(ctx, err, true)
			}
		}
		if err := d.runTurn(ctx, p, m); err != nil {
			return err
		}
	}
}

// holdAnswer is how long p's turn should still wait (see Options.AnswerGrace): 0 but for a text
// that is only a confirming or rejecting word, with nothing pending in a conversation that may
// have something pending, received under the grace ago.
func (r *Runner) holdAnswer(p Pending, st turnstate.State) time.Duration {
	m := p.Message
	if r.grace <= 0 || !p.MayConfirm || st.Pending != nil || m.Type != "text" || !r.isAnswerWord(m.Text) {
		return 0
	}
	return p.ReceivedAt.Add(r.grace).Sub(r.now())
}

// runTurn runs and commits the turn of pending message m, then starts its effects.
func (d *drain) runTurn(ctx context.Context, p Pending, m store.Message) error {
	out, err := d.turn(ctx, p, d.state)
	if err != nil {
		return d.stop(ctx, fmt.Errorf("turn: %w", err), true)
	}
	commit, err := d.r.record(p, out)
	if err != nil {
		return d.stop(ctx, err, true)
	}
	conv, err := d.r.inbox.CommitTurn(ctx, d.convID, d.lease, p.MessageID, commit, d.r.lease)
	if err != nil {
		// A lost lease is the new holder's to release.
		return d.stop(ctx, err, !errors.Is(err, store.ErrLeaseLost))
	}
	d.state, d.humanAt = conv.State, conv.HumanAt
	d.res.Turns++
	logging.FromContext(ctx).InfoContext(ctx, "turn committed", "event", "conversation_turn", "fence", d.lease.Fence,
		"turn_event", out.Event, "reason", out.Reason, "replies", len(commit.Replies), "action", commit.ActionID != "")
	if len(commit.Replies) == 0 && commit.Action == "" {
		return nil
	}
	if err := d.wait(); err != nil {
		return d.stop(ctx, err, true)
	}
	m.Turn, m.Replies, m.Action = store.TurnDone, commit.Replies, commit.Action
	d.job = d.r.perform(ctx, p, m, d.lastAttempt)
	return nil
}

// wait waits for the running effects, if any, and returns their error.
func (d *drain) wait() error {
	if d.job == nil {
		return nil
	}
	<-d.job.done
	err := d.job.err
	d.job = nil
	return err
}

// stop ends the drain on err: it waits for the running effects and, when release, gives the lease
// up so the task's retry (or another message's task) can take it at once.
func (d *drain) stop(ctx context.Context, err error, release bool) error {
	err = errors.Join(err, d.wait())
	if release {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		err = errors.Join(err, d.r.inbox.Release(ctx, d.convID, d.lease))
	}
	logging.FromContext(ctx).WarnContext(ctx, "conversation drain stopped: the task is retried",
		"event", "conversation_drain_failed", "fence", d.lease.Fence, "error", err.Error())
	return err
}

// record turns an outcome into the commit that records its effects, encoded as they will be
// performed.
func (r *Runner) record(p Pending, out assistant.Outcome) (store.TurnCommit, error) {
	c := store.TurnCommit{Touch: touchOf(p.Inbound), State: out.State, Event: out.Event, Reason: out.Reason}
	if out.Media != nil {
		// The file the turn read: its checked hash and size join what was stored on arrival.
		c.Media = r.describeMedia(p.Message, out.Media)
	}
	for i, rep := range out.Replies {
		rep.Index = i
		b, err := json.Marshal(rep)
		if err != nil {
			return c, fmt.Errorf("encode reply: %w", err)
		}
		quota := r.isQuotaNotice(rep)
		c.QuotaExceeded = c.QuotaExceeded || quota
		c.Replies = append(c.Replies, store.Reply{Index: i, IdempotencyKey: r.ReplyKey(p.MessageID, i), Body: rep.Body(),
			Key: string(rep.Key), QuotaExceeded: quota, Payload: string(b)})
	}
	if a := out.Action; a != nil {
		if r.actions == nil {
			return c, errors.New("the turn asks for an action and the runner has no action queue")
		}
		b, err := json.Marshal(a)
		if err != nil {
			return c, fmt.Errorf("encode action: %w", err)
		}
		c.ActionID, c.Action = a.ActionID, string(b)
	}
	return c, nil
}

// effects are one committed turn's replies and action being performed.
type effects struct {
	messageID string
	done      chan struct{}
	err       error
}

// perform starts performing m's recorded effects, in order: the replies, then the action, then
// the record that they are done.
func (r *Runner) perform(ctx context.Context, p Pending, m store.Message, lastAttempt bool) *effects {
	job := &effects{messageID: m.MessageID, done: make(chan struct{})}
	replies := append([]store.Reply(nil), m.Replies...)
	go func() {
		defer close(job.done)
		job.err = r.performEffects(ctx, p, replies, m.Action, lastAttempt)
	}()
	return job
}

func (r *Runner) performEffects(ctx context.Context, p Pending, replies []store.Reply, action string, lastAttempt bool) error {
	for i, rep := range replies {
		var reply assistant.Reply
		if err := json.Unmarshal([]byte(rep.Payload), &reply); err != nil {
			return fmt.Errorf("decode recorded reply %d: %w", rep.Index, err)
		}
		id, err := r.sender.SendReply(ctx, Outgoing{Pending: p, Reply: reply, IdempotencyKey: rep.IdempotencyKey, LastAttempt: lastAttempt})
		if err != nil {
			return fmt.Errorf("send reply %d: %w", rep.Index, err)
		}
		replies[i].GraphMessageID = id
	}
	if action != "" {
		if r.actions == nil {
			return errors.New("a recorded action and no action queue")
		}
		var req assistant.ActionRequest
		dec := json.NewDecoder(bytes.NewReader([]byte(action)))
		// Numbers stay as written, so the body the business signs over is the same on a redo.
		dec.UseNumber()
		if err := dec.Decode(&req); err != nil {
			return fmt.Errorf("decode recorded action: %w", err)
		}
		if err := r.actions.EnqueueAction(ctx, p, req); err != nil {
			return fmt.Errorf("enqueue action: %w", err)
		}
	}
	return r.inbox.MarkEffectsDone(ctx, p.ConversationID, p.MessageID, replies)
}

// touchOf is what in changes on its conversation.
func touchOf(in Inbound) *store.Touch {
	return &store.Touch{TenantID: in.TenantID, PhoneNumberID: in.PhoneNumberID, ContactID: in.ContactID,
		Contact: in.Person.WaID, UserID: in.Person.UserID, Username: in.Person.Username,
		ContactName: in.ContactName, InboundAt: time.Unix(in.Timestamp, 0).UTC()}
}

// pendingOf decodes a stored inbound message.
func pendingOf(convID string, m store.Message) (Pending, error) {
	var in Inbound
	if err := json.Unmarshal([]byte(m.Payload), &in); err != nil {
		return Pending{}, fmt.Errorf("decode stored inbound message: %w", err)
	}
	return Pending{Inbound: in, ConversationID: convID}, nil
}

// normalize fills the fields Message carries and checks the rest.
func (in Inbound) normalize() (Inbound, error) {
	m := in.Message
	if in.MessageID == "" {
		in.MessageID = m.ID
	}
	if in.Person.IsZero() {
		in.Person = m.Identity()
	}
	if in.Contact == "" {
		in.Contact = in.Person.WaID
	}
	if in.PhoneNumberID == "" {
		in.PhoneNumberID = m.PhoneNumberID
	}
	if in.ContactName == "" {
		in.ContactName = m.ContactName
	}
	if in.Timestamp == 0 && m.Timestamp != "" {
		ts, err := strconv.ParseInt(m.Timestamp, 10, 64)
		if err != nil {
			return in, fmt.Errorf("inbound message: timestamp %q: %w", m.Timestamp, err)
		}
		in.Timestamp = ts
	}
	var errs []error
	for _, f := range []struct{ name, v string }{
		{"tenant id", in.TenantID}, {"phone_number_id", in.PhoneNumberID}, {"conversation id", in.ConversationID}, {"message id", in.MessageID},
	} {
		if f.v == "" {
			errs = append(errs, fmt.Errorf("inbound message: no %s", f.name))
		}
	}
	if in.ReceivedAt.IsZero() {
		errs = append(errs, errors.New("inbound message: no received_at"))
	}
	return in, errors.Join(errs...)
}

// messageText is the text stored with a message: a text body or caption, or the title of the
// button or row tapped.
func messageText(m whatsapp.Message) string {
	if m.Text == "" && m.Reply != nil {
		return m.Reply.Title
	}
	return m.Text
}

// newHolder names one Handle call as a lease holder.
func newHolder() string {
	return randid.Hex(8)
}
