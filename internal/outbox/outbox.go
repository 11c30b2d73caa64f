// Package outbox accepts messages sent on a tenant's behalf, outside a conversation's turn: from
// the business through the api service (/v1/messages) and from an operator through the console.
// Both follow the same rules: the tenant must not need a new token, the number must be the
// tenant's, free-form messages only inside the contact's 24-hour window, one record per
// idempotency key (the same key with another body is refused). The message is stored as an
// outbound record and sent by the worker's process_send task on the tenant's queue. A refusal
// is a *refusal.Error (package refusal: the codes the api answers with); nothing was stored or
// queued. The sends parked while a tenant needed a new token are queued again here too
// (ReleaseParked).
package outbox

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/wapipe/wapipe/internal/contact"
	"github.com/wapipe/wapipe/internal/graph"
	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/internal/randid"
	"github.com/wapipe/wapipe/internal/refusal"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/taskqueue"
	"github.com/wapipe/wapipe/tasks"
)

// Request is one message to send.
type Request struct {
	TenantID string
	// PhoneNumberID may be empty when the tenant has one number.
	PhoneNumberID string
	// To is the contact's phone and Recipient its business-scoped user id (BSUID) or parent
	// BSUID: at least one; with both, the message goes to To, as Meta does (never logged in
	// clear).
	To        string
	Recipient string
	// ConversationID, when set (a reply from the console's conversation page), is the
	// conversation whose last inbound message opens the window; else the contact's conversation
	// on the number, found by To or Recipient.
	ConversationID string
	Message        graph.Message
	// IdempotencyKey is the caller's key: the same key and body give the same message; empty
	// makes a new message every time.
	IdempotencyKey string
	// Source names who sent it, for the record (store.SourceAPI, "console").
	Source        string
	CorrelationID string
}

// Result is the accepted message.
type Result struct {
	// ID is the message's id (msg_…), IdempotencyKey its record's key.
	ID, IdempotencyKey string
	// Record is the outbound record as stored (PublicStatus gives its status).
	Record store.OutboundRecord
	// Replay: the idempotency key was used before with this body; nothing new was queued
	// unless its task may have been lost.
	Replay        bool
	PhoneNumberID string
}

// TenantReader reads tenants; *store.Tenants implements it.
type TenantReader interface {
	Get(ctx context.Context, id string) (store.TenantRecord, error)
}

// SendStore keeps the send records; *store.Sends implements it.
type SendStore interface {
	CreateSend(ctx context.Context, seed store.OutboundRecord) (store.OutboundRecord, bool, error)
	GetSend(ctx context.Context, key string) (store.OutboundRecord, error)
}

// WindowReader reads the conversation that holds a contact's last_inbound_at, and finds the
// conversation of a person (by phone or BSUID) on a number; *store.ConversationStore implements
// it.
type WindowReader interface {
	Get(ctx context.Context, conversationID string) (store.Conversation, error)
	ConversationOf(ctx context.Context, tenantID, phoneNumberID string, id contact.Identity) (string, bool, error)
}

// Enqueuer creates tasks; *taskqueue.Client implements it.
type Enqueuer interface {
	Enqueue(ctx context.Context, t taskqueue.Task) (taskqueue.Result, error)
}

// Outbox accepts sends. Its zero value is not usable: set every field but Now.
type Outbox struct {
	Tenants TenantReader
	Sends   SendStore
	// Windows is nil to skip the window check (tests of other rules).
	Windows WindowReader
	Tasks   Enqueuer
	Hasher  *logging.Hasher
	// Now is time.Now when nil.
	Now func() time.Time
}

// Send checks r against the rules, stores its record and queues its send. A *refusal.Error says
// why the rules refuse it (nothing was stored or queued; the api maps its code to an HTTP
// status); any other error is a dependency failing (retry with the same key).
func (o *Outbox) Send(ctx context.Context, r Request) (Result, error) {
	now := time.Now
	if o.Now != nil {
		now = o.Now
	}
	tn, err := o.Tenants.Get(ctx, r.TenantID)
	if errors.Is(err, store.ErrNotFound) {
		return Result{}, refusal.New(refusal.TenantNotFound, "the tenant no longer exists")
	}
	if err != nil {
		return Result{}, fmt.Errorf("read tenant %s: %w", r.TenantID, err)
	}
	if tn.AuthStatus == store.AuthNeedsReauth {
		return Result{}, refusal.New(refusal.ReauthRequired,
			"the tenant's WhatsApp access token was refused: reconnect (Embedded Signup) or set a new token; sends resume then")
	}
	number, err := SenderNumber(tn.Tenant, r.PhoneNumberID)
	if err != nil {
		return Result{}, err
	}
	if r.To == "" && r.Recipient == "" {
		return Result{}, refusal.New(refusal.InvalidRequest, "to or recipient: required (the contact's phone number or business-scoped user id)")
	}
	w, err := o.window(ctx, r, number)
	if err != nil {
		return Result{}, err
	}
	if r.Message.Type != "template" && !w.open(now()) {
		return Result{}, refusal.New(refusal.OutsideWindow,
			"no message from this contact in the last 24 hours: only a template may be sent")
	}
	msgJSON, err := json.Marshal(r.Message)
	if err != nil {
		return Result{}, fmt.Errorf("encode the message: %w", err)
	}
	requestHash := RequestHash(number, r.To, r.Recipient, msgJSON)
	id := "msg_" + randid.Hex(16)
	if r.IdempotencyKey != "" {
		if id, err = o.idempotentID(ctx, r.TenantID, r.IdempotencyKey); err != nil {
			return Result{}, err
		}
	}
	key := tasks.SendKey(id)
	source := r.Source
	if source == "" {
		source = store.SourceAPI
	}
	toHash := o.Hasher.Address(r.To, r.Recipient)
	rec, created, err := o.Queue(ctx, store.OutboundRecord{
		IdempotencyKey: key, Source: source, APIMessageID: id, RequestHash: requestHash,
		TenantID: r.TenantID, PhoneNumberID: number, To: r.To, Recipient: r.Recipient, ConversationID: w.conversationID, ToHash: toHash,
		Message: string(msgJSON), MessageType: r.Message.Type, CorrelationID: r.CorrelationID, ReceivedAt: now(),
	})
	if errors.Is(err, store.ErrIdempotencyMismatch) {
		return Result{}, refusal.New(refusal.IdempotencyKeyReused,
			"Idempotency-Key: already used with another request body")
	}
	if err != nil {
		return Result{}, err
	}
	return Result{ID: id, IdempotencyKey: key, Record: rec, Replay: !created, PhoneNumberID: number}, nil
}

// Queue stores the send record seed unless its key has one (store.Sends.CreateSend) and queues
// its process_send task on the tenant's queue while the record is pending, so a caller that
// runs again (a retried task, a replayed request) queues nothing twice: the task's name is
// derived from the key. It applies none of Send's rules: the caller has (Send), or the send's
// own policy does at send time (a notification: package notify, delivery.Notification).
func (o *Outbox) Queue(ctx context.Context, seed store.OutboundRecord) (store.OutboundRecord, bool, error) {
	rec, created, err := o.Sends.CreateSend(ctx, seed)
	if err != nil {
		return rec, false, err
	}
	if rec.State == store.OutboundPending && rec.ReleaseGen == 0 {
		// A replay of a request whose task may not exist yet enqueues it again; the task's name
		// makes that idempotent.
		task := tasks.SendTask(rec.IdempotencyKey, rec.CorrelationID, rec.TenantID, 0)
		if _, err := o.Tasks.Enqueue(ctx, taskqueue.FromSpec(task)); err != nil {
			return rec, created, fmt.Errorf("create the send task: %w", err)
		}
	}
	return rec, created, nil
}

// MessageIDPurpose names the key message ids are derived with (logging.Hasher.DerivedKey).
const MessageIDPurpose = "wapipe/message-id/v1"

// MessageID is the id (msg_…) of tenantID's send with Idempotency-Key idem: an HMAC keyed with a
// server secret (derived from LOG_HASH_KEY), so knowing a tenant id and an idempotency key tells
// nothing of the id, nor of the record key (tasks.SendKey) and task name derived from it. Before,
// it was a plain SHA-256 of both: anyone could compute another tenant's record key and echo it
// in a status of their own.
func (o *Outbox) MessageID(tenantID, idem string) string {
	m := hmac.New(sha256.New, o.Hasher.DerivedKey(MessageIDPurpose))
	m.Write([]byte("api\x00" + tenantID + "\x00" + idem))
	return "msg_" + hex.EncodeToString(m.Sum(nil)[:16])
}

// legacyMessageID is the unkeyed id MessageID replaced. Records made with it are still found by a
// replay of their Idempotency-Key until they expire (store.DefaultRetention after creation);
// after that this lookup finds nothing and may go.
func legacyMessageID(tenantID, idem string) string {
	h := sha256.Sum256([]byte("api\x00" + tenantID + "\x00" + idem))
	return "msg_" + hex.EncodeToString(h[:16])
}

// idempotentID is the id of tenantID's send with Idempotency-Key idem: MessageID, or the unkeyed
// id of a record made with that key before ids were keyed, so that a replay of it finds its
// record (and CreateSend its request hash) instead of sending the message twice.
func (o *Outbox) idempotentID(ctx context.Context, tenantID, idem string) (string, error) {
	legacy := legacyMessageID(tenantID, idem)
	rec, err := o.Sends.GetSend(ctx, tasks.SendKey(legacy))
	switch {
	case errors.Is(err, store.ErrNotFound):
		return o.MessageID(tenantID, idem), nil
	case err != nil:
		return "", fmt.Errorf("read the send record of the idempotency key: %w", err)
	case rec.TenantID != tenantID:
		// Cannot happen (the tenant is in the hash); never hand another tenant's record out.
		return o.MessageID(tenantID, idem), nil
	}
	return legacy, nil
}

// window is what a send knows of its contact's customer service window.
type window struct {
	// unchecked: no window reader (tests of other rules): every send may go.
	unchecked bool
	// conversationID is the contact's conversation on the number, "" when they have none.
	conversationID string
	lastInbound    time.Time
}

// open reports whether the contact wrote to the number in the last 24 hours.
func (w window) open(now time.Time) bool {
	return w.unchecked || store.WindowOpen(w.lastInbound, now)
}

// window finds the contact r names on the tenant's number and its window: a person who wrote by
// BSUID alone opens it for a send by recipient, one who wrote by phone for a send by either once
// both arrived together (the contact has both).
func (o *Outbox) window(ctx context.Context, r Request, number string) (window, error) {
	if o.Windows == nil {
		return window{unchecked: true, conversationID: r.ConversationID}, nil
	}
	convID := r.ConversationID
	for _, id := range Lookups(r.To, r.Recipient) {
		if convID != "" {
			break
		}
		var err error
		if convID, _, err = o.Windows.ConversationOf(ctx, r.TenantID, number, id); err != nil {
			return window{}, fmt.Errorf("find the contact's conversation: %w", err)
		}
	}
	if convID == "" {
		return window{}, nil
	}
	conv, err := o.Windows.Get(ctx, convID)
	if errors.Is(err, store.ErrNotFound) {
		return window{}, nil
	}
	if err != nil {
		return window{}, fmt.Errorf("read the contact's window: %w", err)
	}
	return window{conversationID: convID, lastInbound: conv.LastInboundAt}, nil
}

// RecipientIdentity is the person a send names by phone (to) and by BSUID or parent BSUID
// (recipient).
func RecipientIdentity(to, recipient string) contact.Identity {
	id := contact.Identity{WaID: to}
	if contact.ValidParentUserID(recipient) {
		id.ParentUserID = recipient
	} else {
		id.UserID = recipient
	}
	return id
}

// Lookups are the identities a send's contact is looked up by (its window, its opt-out), in
// order, until one finds a contact. With both to and recipient the message goes to to, as Meta
// sends it: the phone's contact comes first, so that a recipient naming another contact (an older
// one, not merged) lends it neither its window nor its preference; then, when the tenant does not
// know the phone, the person both name (the recipient's contact, whose phone it may be). One
// identity when only one identifier is given.
func Lookups(to, recipient string) []contact.Identity {
	both := RecipientIdentity(to, recipient)
	if to == "" || recipient == "" {
		return []contact.Identity{both}
	}
	return []contact.Identity{{WaID: to}, both}
}

// RequestHash identifies a send's request, to tell an Idempotency-Key replay (same hash) from a
// reuse with another body. A request with no recipient hashes as it did before sends by BSUID,
// when a Graph message's JSON always held "to": a key replayed across the upgrade still finds
// its record.
func RequestHash(number, to, recipient string, msgJSON []byte) string {
	h := sha256.New()
	if recipient == "" {
		h.Write([]byte(number + "\x00" + to + "\x00"))
		h.Write(withEmptyTo(msgJSON))
	} else {
		h.Write([]byte("v2\x00" + number + "\x00" + to + "\x00" + recipient + "\x00"))
		h.Write(msgJSON)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// withEmptyTo is a Graph message's JSON as it was encoded while "to" had no omitempty: `"to":""`
// before the top-level "type" key, unless a "to" is there already. The first `"type":` is that
// key: only messaging_product, recipient_type, to and recipient come before it, and a string
// value cannot hold that text (its quotes are escaped). Only what comes before it is searched
// for a "to": a key of the message's own maps further on (a flow button's flow_action_data) may
// be named "to".
func withEmptyTo(msgJSON []byte) []byte {
	i := bytes.Index(msgJSON, []byte(`"type":`))
	if i < 0 || bytes.Contains(msgJSON[:i], []byte(`"to":`)) {
		return msgJSON
	}
	out := make([]byte, 0, len(msgJSON)+8)
	out = append(out, msgJSON[:i]...)
	out = append(out, `"to":"",`...)
	return append(out, msgJSON[i:]...)
}

// PublicStatus maps a record to the status the api and the console show: queued, sending, sent,
// delivered, read, failed or parked.
func PublicStatus(rec store.OutboundRecord) string {
	switch rec.State {
	case store.OutboundPending:
		return "queued"
	case store.OutboundSending:
		return "sending"
	case store.OutboundParked:
		return "parked"
	case store.OutboundFailed, store.OutboundSkipped:
		return "failed"
	case store.OutboundSent:
		switch rec.DeliveryStatus {
		case store.DeliveryDelivered, store.DeliveryRead, store.DeliveryFailed:
			return rec.DeliveryStatus
		}
		return "sent"
	}
	return "queued"
}
