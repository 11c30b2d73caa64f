package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/api/iterator"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/wapipe/wapipe/internal/contact"
	"github.com/wapipe/wapipe/internal/keyedid"
	"github.com/wapipe/wapipe/internal/turnstate"
)

// Conversation states.
const (
	ConversationOpen   = "open"
	ConversationClosed = "closed"
)

// Message directions.
const (
	DirectionIn  = "in"
	DirectionOut = "out"
)

// Turn states of an inbound message: pending until its turn is committed, then done.
const (
	TurnPending = "pending"
	TurnDone    = "done"
)

// DefaultConversationRetention is CONVERSATION_RETENTION's default: conversations and their
// messages are kept 90 days after the last message.
const DefaultConversationRetention = 2160 * time.Hour

// ErrLeaseLost is returned by CommitTurn when the caller no longer holds the conversation's lease:
// it expired and another task took it (a higher fencing number), so the turn must not be saved.
var ErrLeaseLost = errors.New("conversation lease lost")

// Conversation is one conversation (conversations/{ConversationID}): a tenant's number and one
// contact, the assistant's state, and the lease that serialises its turns.
type Conversation struct {
	ID            string `firestore:"id" json:"id"`
	TenantID      string `firestore:"tenant_id" json:"tenant_id"`
	PhoneNumberID string `firestore:"phone_number_id" json:"phone_number_id"`
	// ContactID is the contact's id (ct_…); empty on a conversation from before contacts until
	// its next message or the migration.
	ContactID string `firestore:"contact_id,omitempty" json:"contact_id,omitempty"`
	// Contact is the contact's phone (wa_id), empty when Meta never shared it; UserID its BSUID
	// and Username its username, as last seen (personal data: stored, never logged).
	Contact     string `firestore:"contact" json:"contact"`
	UserID      string `firestore:"user_id,omitempty" json:"user_id,omitempty"`
	Username    string `firestore:"username,omitempty" json:"username,omitempty"`
	ContactName string `firestore:"contact_name" json:"contact_name"`
	Status      string `firestore:"status" json:"status"`
	// LastMessageAt is when a message was last stored or answered (wapipe's clock); expire_at
	// follows it.
	LastMessageAt time.Time `firestore:"last_message_at" json:"last_message_at"`
	// LastInboundAt is Meta's timestamp of the latest inbound message: the greatest seen, as
	// messages arrive out of order. The 24 h customer service window runs from it.
	LastInboundAt time.Time `firestore:"last_inbound_at" json:"last_inbound_at"`
	// AssignedTo is the operator who took the conversation in the console (AssignConversation).
	// It is a field of the struct so that CommitTurn, which writes the whole document, keeps it.
	AssignedTo string `firestore:"assigned_to" json:"assigned_to"`
	// HumanAt is when a human of the business last answered in the conversation (a console
	// reply, a WhatsApp Business app message), HumanBy who: the assistant stays silent there for
	// the tenant's assistant.human_pause after it, until then or until HandBack. Fields of the
	// struct, like AssignedTo, so that CommitTurn keeps them.
	HumanAt time.Time `firestore:"human_at,omitempty" json:"human_at,omitzero"`
	HumanBy string    `firestore:"human_by,omitempty" json:"human_by,omitempty"`
	// HandedBackAt and HandedBackBy record the last hand-back to the assistant.
	HandedBackAt time.Time `firestore:"handed_back_at,omitempty" json:"handed_back_at,omitzero"`
	HandedBackBy string    `firestore:"handed_back_by,omitempty" json:"handed_back_by,omitempty"`
	// MovedTo is the conversation this one continues in after the contact changed number
	// (MoveContact); MovedFrom the one it continues.
	MovedTo   string          `firestore:"moved_to,omitempty" json:"moved_to,omitempty"`
	MovedFrom string          `firestore:"moved_from,omitempty" json:"moved_from,omitempty"`
	State     turnstate.State `firestore:"state" json:"state"`
	Lease     Lease           `firestore:"lease" json:"lease"`
	CreatedAt time.Time       `firestore:"created_at" json:"created_at"`
	UpdatedAt time.Time       `firestore:"updated_at" json:"updated_at"`
	ExpireAt  time.Time       `firestore:"expire_at" json:"expire_at"`
}

// Lease says which task runs the conversation's turns. Fence grows by one each time the lease is
// taken, so a holder that lost it (expired, taken over) is told apart from the new one even when
// both think they hold it.
type Lease struct {
	Holder    string    `firestore:"holder" json:"holder"`
	Fence     int64     `firestore:"fence" json:"fence"`
	ExpiresAt time.Time `firestore:"expires_at" json:"expires_at"`
}

// Free reports whether the lease can be taken at now: nobody holds it, or its holder's time ran
// out.
func (l Lease) Free(now time.Time) bool { return l.Holder == "" || !now.Before(l.ExpiresAt) }

// Message is a stored message (conversations/{id}/messages/{DocID(message id)}). An inbound
// message is the conversation's inbox entry: it stays InInbox from its arrival until its turn is
// committed and the effects recorded with it (replies, action) have been performed.
type Message struct {
	Direction string `firestore:"direction" json:"direction"`
	// MessageID is Meta's id of the message (a wamid), or the idempotency key of an outbound
	// message sent outside a turn.
	MessageID string `firestore:"message_id" json:"message_id"`
	Type      string `firestore:"type" json:"type"`
	// Text is the message's text (the stored conversation is the only place text lives).
	Text string `firestore:"text" json:"text"`
	// Timestamp is Meta's timestamp (Unix seconds) of an inbound message.
	Timestamp int64 `firestore:"timestamp" json:"timestamp"`
	// ReceivedAt is when the webhook received the message: it breaks ties between messages of
	// the same second, then ArrivedAt (set by Firestore when the message is stored).
	ReceivedAt time.Time `firestore:"received_at" json:"received_at"`
	ArrivedAt  time.Time `firestore:"arrived_at,serverTimestamp" json:"arrived_at"`
	// Payload is the inbound message as the worker received it (JSON), so whichever task holds
	// the lease can run its turn.
	Payload string `firestore:"payload" json:"payload"`
	// InboundEventID and CorrelationID tie the message to the webhook delivery, for the records
	// and logs of the replies.
	InboundEventID string `firestore:"inbound_event_id" json:"inbound_event_id"`
	CorrelationID  string `firestore:"correlation_id" json:"correlation_id"`
	ContactName    string `firestore:"contact_name" json:"contact_name"`
	// Media describes a media message (never its bytes): what the console shows.
	Media *Media `firestore:"media,omitempty" json:"media,omitempty"`

	Turn    string `firestore:"turn" json:"turn"`
	InInbox bool   `firestore:"inbox" json:"inbox"`
	// Fence is the fencing number of the holder that committed the turn.
	Fence       int64     `firestore:"fence" json:"fence"`
	Event       string    `firestore:"event" json:"event"`
	Reason      string    `firestore:"reason" json:"reason"`
	Replies     []Reply   `firestore:"replies" json:"replies"`
	ActionID    string    `firestore:"action_id" json:"action_id"`
	Action      string    `firestore:"action" json:"action"`
	CommittedAt time.Time `firestore:"committed_at" json:"committed_at"`
	// EffectsDoneAt is when the replies were sent and the action enqueued.
	EffectsDoneAt time.Time `firestore:"effects_done_at" json:"effects_done_at"`
	// Operator is who sent an outbound message that a person wrote: the console's verified
	// operator (its email) for a reply from the console, OperatorApp for what the business sent
	// from the WhatsApp Business app (smb_message_echoes); empty for the assistant's messages.
	Operator string `firestore:"operator,omitempty" json:"operator,omitempty"`
	// QuotaExceeded marks a message answered with the quota notice.
	QuotaExceeded bool `firestore:"quota_exceeded" json:"quota_exceeded"`
	// DeletedAt is set when the contact deleted the message (a revoke): its text, caption and
	// filename are erased. EditedAt is set when the contact edited it: it holds the new content.
	DeletedAt time.Time `firestore:"deleted_at,omitempty" json:"deleted_at,omitempty"`
	EditedAt  time.Time `firestore:"edited_at,omitempty" json:"edited_at,omitempty"`
	ExpireAt  time.Time `firestore:"expire_at" json:"expire_at"`
}

// Reply is one reply a turn sends, recorded with the turn before it is sent.
type Reply struct {
	Index          int    `firestore:"index" json:"index"`
	IdempotencyKey string `firestore:"idempotency_key" json:"idempotency_key"`
	// Body is the text the user sees.
	Body string `firestore:"body" json:"body"`
	// Key is the system message the reply is (an i18n key), empty for the model's own text.
	Key           string `firestore:"key" json:"key"`
	QuotaExceeded bool   `firestore:"quota_exceeded" json:"quota_exceeded"`
	// Payload is the reply to send (JSON), so a redo sends exactly what the turn decided.
	Payload        string `firestore:"payload" json:"payload"`
	GraphMessageID string `firestore:"graph_message_id" json:"graph_message_id"`
}

// Touch is what an inbound message changes on its conversation.
type Touch struct {
	TenantID      string
	PhoneNumberID string
	ContactID     string
	// Contact is the phone, UserID the BSUID, Username the username the message came with
	// (each empty when it came without).
	Contact     string
	UserID      string
	Username    string
	ContactName string
	// InboundAt is the message's Meta timestamp.
	InboundAt time.Time
}

// TurnCommit is a committed turn: the state to save and the effects to perform after.
type TurnCommit struct {
	// Touch records the message on the conversation (last_inbound_at, contact name): the
	// holder does it when it commits the message's turn, so the tasks that find the lease held
	// write nothing to the conversation.
	Touch         *Touch
	State         turnstate.State
	Event         string
	Reason        string
	Replies       []Reply
	ActionID      string
	Action        string
	QuotaExceeded bool
	// Media, when set, is the file the turn fetched: its MIME type, checked hash and size
	// replace the stored ones. The caption and file name stay as stored: an edit or a deletion
	// may have changed them while the turn ran.
	Media *Media
}

// ConversationStore keeps conversations and their messages. Each method's comment gives its Firestore
// reads and writes, so a turn's cost can be added up.
type ConversationStore struct {
	db   *DB
	fs   *firestore.Client
	opts Options
}

// NewConversationStore returns the conversation store; opts.Retention is CONVERSATION_RETENTION
// (DefaultConversationRetention when zero).
func NewConversationStore(db *DB, opts Options) *ConversationStore {
	if opts.Retention <= 0 {
		opts.Retention = DefaultConversationRetention
	}
	return &ConversationStore{db: db, fs: db.fs, opts: opts.withDefaults()}
}

// ConversationID is the id of the conversation of contact contactID (ct_…) with a tenant's
// number: keyed (keyedid), so that nobody can recompute it, from a phone number or otherwise,
// without the key.
func ConversationID(k *keyedid.Keyer, tenantID, phoneNumberID, contactID string) string {
	return "conv_" + k.ID("conversation", tenantID, phoneNumberID, contactID)
}

// Locate is the id of the conversation of contact c with a tenant's number: ConversationID,
// or, until `wapipe migrate` has run, the conversation the contact's phone had before contacts
// (LegacyConversationID), while it exists and the new one does not, so the conversation goes
// on where it was. One read of two documents until the migration, none after.
func (c *ConversationStore) Locate(ctx context.Context, tenantID, phoneNumberID string, ct Contact) (string, error) {
	id := ConversationID(c.db.keyer, tenantID, phoneNumberID, ct.ID)
	var fallback []string
	if ct.WaID != "" && c.db.legacyReads(ctx) {
		fallback = append(fallback, LegacyConversationID(tenantID, phoneNumberID, ct.WaID))
	}
	if p := c.db.keyer.Previous(); p != nil {
		fallback = append(fallback, ConversationID(p, tenantID, phoneNumberID, ct.ID))
	}
	if len(fallback) == 0 {
		return id, nil
	}
	refs := []*firestore.DocumentRef{c.conversationDoc(id)}
	for _, f := range fallback {
		refs = append(refs, c.conversationDoc(f))
	}
	snaps, err := c.fs.GetAll(ctx, refs)
	if err != nil {
		return "", fmt.Errorf("locate conversation: %w", err)
	}
	if snaps[0].Exists() {
		return id, nil
	}
	for i, sn := range snaps[1:] {
		if !sn.Exists() {
			continue
		}
		var conv Conversation
		if err := sn.DataTo(&conv); err != nil {
			return "", fmt.Errorf("decode conversation: %w", err)
		}
		if conv.MovedTo == "" {
			return fallback[i], nil
		}
	}
	return id, nil
}

// ConversationOf is the id of the conversation of the person id names with a tenant's number
// (Locate, for the tenant's contact of the person); ok is false when the tenant does not know
// them. It creates nothing.
func (c *ConversationStore) ConversationOf(ctx context.Context, tenantID, phoneNumberID string, id contact.Identity) (string, bool, error) {
	ct, ok, err := (&Contacts{db: c.db, fs: c.fs, now: c.opts.Now}).Find(ctx, tenantID, id)
	if err != nil || !ok {
		return "", false, err
	}
	conv, err := c.Locate(ctx, tenantID, phoneNumberID, ct)
	return conv, err == nil, err
}

// ConversationsOf lists the conversations of contact contactID (ct_…), on every number. One
// query.
func (c *ConversationStore) ConversationsOf(ctx context.Context, contactID string) ([]Conversation, error) {
	if contactID == "" {
		return nil, nil
	}
	return queryAll[Conversation](ctx, c.fs.Collection(Conversations).Where("contact_id", "==", contactID), "conversations")
}

// ConversationsByUsername lists up to limit conversations of a contact with username (as Meta
// sent it, without its @). One query.
func (c *ConversationStore) ConversationsByUsername(ctx context.Context, username string, limit int) ([]Conversation, error) {
	if username == "" {
		return nil, nil
	}
	return queryAll[Conversation](ctx, c.fs.Collection(Conversations).Where("username", "==", username).Limit(limit), "conversations")
}

func (c *ConversationStore) conversationDoc(id string) *firestore.DocumentRef {
	return c.fs.Collection(Conversations).Doc(id)
}

func (c *ConversationStore) messageDoc(conversationID, messageID string) *firestore.DocumentRef {
	return c.conversationDoc(conversationID).Collection(ConversationMessages).Doc(DocID(messageID))
}

// AddInbound stores an inbound message in the conversation's inbox, once: when a message with its
// id is stored already, it returns created false and the stored message (a redelivery changes
// nothing). One write; one more read for a redelivery.
func (c *ConversationStore) AddInbound(ctx context.Context, conversationID string, m Message) (created bool, stored Message, err error) {
	now := c.opts.Now()
	m.Direction, m.Turn, m.InInbox = DirectionIn, TurnPending, true
	m.ArrivedAt = time.Time{}
	m.ExpireAt = now.Add(c.opts.Retention)
	ref := c.messageDoc(conversationID, m.MessageID)
	_, err = ref.Create(ctx, m)
	if err == nil {
		return true, m, nil
	}
	if status.Code(err) != codes.AlreadyExists {
		return false, Message{}, fmt.Errorf("store inbound message: %w", err)
	}
	stored, err = getDoc[Message](ctx, ref, "inbound message")
	if err != nil {
		return false, Message{}, err
	}
	return false, stored, nil
}

// AddOutbound stores a message sent outside a turn (an action's answer, a message sent on the
// tenant's behalf), keyed by its idempotency key: storing it twice changes nothing. One write.
func (c *ConversationStore) AddOutbound(ctx context.Context, conversationID string, m Message) error {
	now := c.opts.Now()
	m.Direction, m.Turn, m.InInbox = DirectionOut, "", false
	m.ArrivedAt = time.Time{}
	if m.Timestamp == 0 {
		m.Timestamp = now.Unix()
	}
	m.ExpireAt = now.Add(c.opts.Retention)
	_, err := c.messageDoc(conversationID, m.MessageID).Create(ctx, m)
	if err != nil && status.Code(err) != codes.AlreadyExists {
		return fmt.Errorf("store outbound message: %w", err)
	}
	return nil
}

// Acquire takes the conversation's lease for holder when it is free, with the next fencing
// number, until now + d, creating the conversation (from touch) when it does not exist yet. It
// returns the conversation as it now stands and whether holder took the lease.
//
// It reads first and writes only when the lease is free, with the read's update time as a
// precondition (a compare-and-set, retried at once when another write came first): the tasks
// of a burst of messages find the lease held with one read each, instead of queueing up in
// transactions on the one document. One read, and one write when the lease is taken.
//
// Reading "held" is safe: the caller's message was stored before the read, so a holder that
// releases after it finds the message when it looks at the inbox after its release.
func (c *ConversationStore) Acquire(ctx context.Context, conversationID, holder string, d time.Duration, touch *Touch) (Conversation, bool, error) {
	ref := c.conversationDoc(conversationID)
	for attempt := 0; attempt < maxTxAttempts; attempt++ {
		now := c.opts.Now()
		snap, err := ref.Get(ctx)
		if status.Code(err) == codes.NotFound {
			if touch == nil {
				return Conversation{}, false, fmt.Errorf("acquire conversation lease %s: %w", conversationID, ErrNotFound)
			}
			conv := Conversation{ID: conversationID, TenantID: touch.TenantID, PhoneNumberID: touch.PhoneNumberID,
				CreatedAt: now, Lease: Lease{Holder: holder, Fence: 1, ExpiresAt: now.Add(d)}}
			c.touch(&conv, touch, now)
			_, err := ref.Create(ctx, conv)
			if status.Code(err) == codes.AlreadyExists {
				continue
			}
			if err != nil {
				return Conversation{}, false, fmt.Errorf("create conversation: %w", err)
			}
			return conv, true, nil
		}
		if err != nil {
			return Conversation{}, false, fmt.Errorf("read conversation: %w", err)
		}
		var conv Conversation
		if err := snap.DataTo(&conv); err != nil {
			return Conversation{}, false, fmt.Errorf("decode conversation: %w", err)
		}
		if !conv.Lease.Free(now) {
			return conv, false, nil
		}
		conv.Lease = Lease{Holder: holder, Fence: conv.Lease.Fence + 1, ExpiresAt: now.Add(d)}
		conv.UpdatedAt = now
		_, err = ref.Update(ctx, []firestore.Update{
			{Path: "lease", Value: conv.Lease},
			{Path: "updated_at", Value: now},
		}, firestore.LastUpdateTime(snap.UpdateTime))
		if status.Code(err) == codes.FailedPrecondition {
			continue
		}
		if err != nil {
			return Conversation{}, false, fmt.Errorf("take conversation lease: %w", err)
		}
		return conv, true, nil
	}
	return Conversation{}, false, fmt.Errorf("take conversation lease: %d attempts lost to concurrent writes", maxTxAttempts)
}

// touch records an inbound message on the conversation: its contact name, its Meta timestamp
// (the greatest seen), and activity at now.
func (c *ConversationStore) touch(conv *Conversation, t *Touch, now time.Time) {
	if t == nil {
		return
	}
	if conv.ContactID == "" {
		conv.ContactID = t.ContactID
	}
	for _, f := range []struct {
		dst *string
		v   string
	}{
		{&conv.Contact, t.Contact}, {&conv.UserID, t.UserID}, {&conv.Username, t.Username}, {&conv.ContactName, t.ContactName},
	} {
		if f.v != "" {
			*f.dst = f.v
		}
	}
	if t.InboundAt.After(conv.LastInboundAt) {
		conv.LastInboundAt = t.InboundAt.UTC()
	}
	conv.Status = ConversationOpen
	c.touched(conv, now)
}

// touched records activity at now: last_message_at and expire_at move forward.
func (c *ConversationStore) touched(conv *Conversation, now time.Time) {
	if now.After(conv.LastMessageAt) {
		conv.LastMessageAt = now
	}
	conv.UpdatedAt = now
	conv.ExpireAt = conv.LastMessageAt.Add(c.opts.Retention)
}

// NextInbox returns the first of the conversation's inbox messages other than skip (a message
// id, or ""): messages whose turn is done but whose effects are not performed come first, then
// pending ones in Meta timestamp order, ties broken by arrival. ok is false when there is none.
// One query returning at most two documents (two reads; one when the inbox is empty).
func (c *ConversationStore) NextInbox(ctx context.Context, conversationID, skip string) (m Message, ok bool, err error) {
	q := c.conversationDoc(conversationID).Collection(ConversationMessages).
		Where("inbox", "==", true).
		OrderBy("turn", firestore.Asc).
		OrderBy("timestamp", firestore.Asc).
		OrderBy("received_at", firestore.Asc).
		OrderBy("arrived_at", firestore.Asc).
		Limit(2)
	it := q.Documents(ctx)
	defer it.Stop()
	for {
		snap, err := it.Next()
		if errors.Is(err, iterator.Done) {
			return Message{}, false, nil
		}
		if err != nil {
			return Message{}, false, fmt.Errorf("read conversation inbox: %w", err)
		}
		var m Message
		if err := snap.DataTo(&m); err != nil {
			return Message{}, false, fmt.Errorf("decode inbox message: %w", err)
		}
		if skip != "" && m.MessageID == skip {
			continue
		}
		return m, true, nil
	}
}

// CommitTurn saves a turn of message messageID: the conversation's new state, and the message
// marked done with the effects to perform (it stays in the inbox until MarkEffectsDone when it has
// any). It fails with ErrLeaseLost unless lease (holder and fence) is still the conversation's,
// and renews the lease until now + d. One transaction: one read, two writes.
func (c *ConversationStore) CommitTurn(ctx context.Context, conversationID string, lease Lease, messageID string, t TurnCommit, d time.Duration) (Conversation, error) {
	ref := c.conversationDoc(conversationID)
	mref := c.messageDoc(conversationID, messageID)
	conv, err := runTx(ctx, c.fs, c.opts.txHooks, func(ctx context.Context, tx *firestore.Transaction) (Conversation, error) {
		now := c.opts.Now()
		conv, err := readTx[Conversation](tx, ref)
		if err != nil {
			return Conversation{}, err
		}
		if conv.Lease.Holder != lease.Holder || conv.Lease.Fence != lease.Fence {
			return Conversation{}, ErrLeaseLost
		}
		conv.State = t.State
		conv.Lease.ExpiresAt = now.Add(d)
		c.touch(&conv, t.Touch, now)
		c.touched(&conv, now)
		if err := tx.Set(ref, conv); err != nil {
			return Conversation{}, err
		}
		replies := t.Replies
		if replies == nil {
			replies = []Reply{}
		}
		updates := []firestore.Update{
			{Path: "turn", Value: TurnDone},
			{Path: "inbox", Value: len(t.Replies) > 0 || t.Action != ""},
			{Path: "fence", Value: lease.Fence},
			{Path: "event", Value: t.Event},
			{Path: "reason", Value: t.Reason},
			{Path: "replies", Value: replies},
			{Path: "action_id", Value: t.ActionID},
			{Path: "action", Value: t.Action},
			{Path: "quota_exceeded", Value: t.QuotaExceeded},
			{Path: "committed_at", Value: now},
		}
		if m := t.Media; m != nil {
			updates = append(updates, firestore.Update{Path: "media.mime_type", Value: m.MIMEType},
				firestore.Update{Path: "media.sha256", Value: m.SHA256}, firestore.Update{Path: "media.size", Value: m.Size})
		}
		return conv, tx.Update(mref, updates)
	}, firestore.MaxAttempts(maxTxAttempts))
	if err != nil {
		return Conversation{}, fmt.Errorf("commit turn: %w", err)
	}
	return conv, nil
}

// MarkEffectsDone records that a done message's effects were performed (replies with their Graph
// ids), which takes it out of the inbox. One write.
func (c *ConversationStore) MarkEffectsDone(ctx context.Context, conversationID, messageID string, replies []Reply) error {
	if replies == nil {
		replies = []Reply{}
	}
	_, err := c.messageDoc(conversationID, messageID).Update(ctx, []firestore.Update{
		{Path: "inbox", Value: false},
		{Path: "replies", Value: replies},
		{Path: "effects_done_at", Value: c.opts.Now()},
	})
	if err != nil {
		return fmt.Errorf("mark effects done: %w", err)
	}
	return nil
}

// Release gives the lease up when lease is still the conversation's (a holder that lost it
// changes nothing). The fencing number stays, so the next holder's is higher. One transaction:
// one read, one write.
func (c *ConversationStore) Release(ctx context.Context, conversationID string, lease Lease) error {
	_, err := c.releaseLease(ctx, conversationID, func(cur Lease) bool {
		return cur.Holder == lease.Holder && cur.Fence == lease.Fence
	})
	if err != nil {
		return fmt.Errorf("release conversation lease: %w", err)
	}
	return nil
}

// releaseLease gives the conversation's lease up (holder and expiry cleared, the fencing number
// kept, so the next holder's is higher) when may says so of the lease as the transaction reads
// it, and reports whether it did. One transaction: one read, and one write when it releases.
func (c *ConversationStore) releaseLease(ctx context.Context, conversationID string, may func(Lease) bool) (bool, error) {
	ref := c.conversationDoc(conversationID)
	return runTx(ctx, c.fs, c.opts.txHooks, func(ctx context.Context, tx *firestore.Transaction) (bool, error) {
		conv, err := readTx[Conversation](tx, ref)
		if err != nil || !may(conv.Lease) {
			return false, err
		}
		return true, tx.Update(ref, []firestore.Update{
			{Path: "lease.holder", Value: ""},
			{Path: "lease.expires_at", Value: time.Time{}},
		})
	}, firestore.MaxAttempts(maxTxAttempts))
}

// Get reads a conversation.
func (c *ConversationStore) Get(ctx context.Context, conversationID string) (Conversation, error) {
	return getDoc[Conversation](ctx, c.conversationDoc(conversationID), "conversation")
}

// GetMessage reads a stored message by Meta's message id (or an outbound message's key).
func (c *ConversationStore) GetMessage(ctx context.Context, conversationID, messageID string) (Message, error) {
	return getDoc[Message](ctx, c.messageDoc(conversationID, messageID), "message")
}

// Messages reads a conversation's stored messages, oldest first (by Meta timestamp, then
// arrival), at most limit of them.
func (c *ConversationStore) Messages(ctx context.Context, conversationID string, limit int) ([]Message, error) {
	q := c.conversationDoc(conversationID).Collection(ConversationMessages).
		OrderBy("timestamp", firestore.Asc).OrderBy("received_at", firestore.Asc).OrderBy("arrived_at", firestore.Asc).
		Limit(limit)
	return queryAll[Message](ctx, q, "messages")
}

// maxTxAttempts bounds a transaction's attempts under contention: the client's default (5) is too
// few for a counter that a burst of turns updates at once.
const maxTxAttempts = 50

// ConversationPage is a page of conversations, latest message first.
type ConversationPage struct {
	Conversations []Conversation
	// Next is the token of the next page; "" on the last one.
	Next string
}

// AssignConversation makes operator the conversation's assignee; ErrNotFound when there is no
// such conversation. One write.
func (c *ConversationStore) AssignConversation(ctx context.Context, conversationID, operator string) error {
	return c.consoleUpdate(ctx, conversationID, "assign", []firestore.Update{{Path: "assigned_to", Value: operator}})
}

// TakeOver records that human by (an operator) answered in the conversation at at: the assistant
// stays silent there for the tenant's human_pause. ErrNotFound when there is no such
// conversation. One write.
func (c *ConversationStore) TakeOver(ctx context.Context, conversationID, by string, at time.Time) error {
	return c.consoleUpdate(ctx, conversationID, "take over", []firestore.Update{{Path: "human_at", Value: at}, {Path: "human_by", Value: by}})
}

// HandBack gives the conversation back to the assistant now (by is the operator), recorded on it.
// One write.
func (c *ConversationStore) HandBack(ctx context.Context, conversationID, by string) error {
	return c.consoleUpdate(ctx, conversationID, "hand back", []firestore.Update{{Path: "human_at", Value: firestore.Delete},
		{Path: "human_by", Value: firestore.Delete}, {Path: "handed_back_at", Value: c.opts.Now()}, {Path: "handed_back_by", Value: by}})
}

// CloseConversation marks the conversation closed; its next inbound message opens it again.
// ErrNotFound when there is no such conversation. One write.
func (c *ConversationStore) CloseConversation(ctx context.Context, conversationID string) error {
	return c.consoleUpdate(ctx, conversationID, "close", []firestore.Update{{Path: "status", Value: ConversationClosed}})
}

func (c *ConversationStore) consoleUpdate(ctx context.Context, id, what string, ups []firestore.Update) error {
	if id == "" || strings.Contains(id, "/") {
		return ErrNotFound
	}
	ups = append(ups, firestore.Update{Path: "updated_at", Value: c.opts.Now()})
	_, err := c.conversationDoc(id).Update(ctx, ups)
	if status.Code(err) == codes.NotFound {
		return ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("%s conversation: %w", what, err)
	}
	return nil
}

// ListLatestMessages reads a conversation's last limit stored messages, oldest first (by Meta
// timestamp, then arrival, as Messages orders them): a long conversation's page shows its end.
func (c *ConversationStore) ListLatestMessages(ctx context.Context, conversationID string, limit int) ([]Message, error) {
	q := c.conversationDoc(conversationID).Collection(ConversationMessages).
		OrderBy("timestamp", firestore.Desc).OrderBy("received_at", firestore.Desc).OrderBy("arrived_at", firestore.Desc).
		Limit(limit)
	msgs, err := queryAll[Message](ctx, q, "messages")
	if err != nil {
		return nil, err
	}
	slices.Reverse(msgs)
	return msgs, nil
}

// Media is what is kept of a media message: never its bytes.
type Media struct {
	// ID is Meta's media id (not content: it names the file at Meta for about 30 days), so the
	// console can show the image, fetched from Graph on demand.
	ID       string `firestore:"id,omitempty" json:"id,omitempty"`
	MIMEType string `firestore:"mime_type" json:"mime_type"`
	SHA256   string `firestore:"sha256" json:"sha256"`
	Size     int64  `firestore:"size" json:"size"`
	Caption  string `firestore:"caption,omitempty" json:"caption,omitempty"`
	Filename string `firestore:"filename,omitempty" json:"filename,omitempty"`
}
