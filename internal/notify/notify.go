package notify

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/wapipe/wapipe/internal/actioncall"
	"github.com/wapipe/wapipe/internal/contact"
	"github.com/wapipe/wapipe/internal/graph"
	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/tenant"
	"github.com/wapipe/wapipe/tasks"
)

// Directory lists the members who joined by invite with given roles; *store.Tenants implements
// it.
type Directory interface {
	RuntimeMembersWithRoles(ctx context.Context, tenantID string, roles []tenant.Role) ([]tenant.Member, error)
}

// Queue stores a send record and queues its process_send task, once per key; *outbox.Outbox
// implements it.
type Queue interface {
	Queue(ctx context.Context, seed store.OutboundRecord) (store.OutboundRecord, bool, error)
}

// Choices reads which tenant a contact chose on a shared number by invite code;
// *store.Tenants implements it.
type Choices interface {
	SharedContact(ctx context.Context, phoneNumberID string, tenantIDs []string, person contact.Identity) (store.SharedContact, error)
}

// Conversations finds the conversation of a person on a number; *store.ConversationStore
// implements it.
type Conversations interface {
	ConversationOf(ctx context.Context, tenantID, phoneNumberID string, id contact.Identity) (string, bool, error)
}

// Notifier queues the notifications of succeeded actions. Members, Outbox and Hasher are
// required.
type Notifier struct {
	Members Directory
	// Choices, when set, keeps a shared number's notifications from the members who left the
	// tenant there for another tenant's invite code (its file still lists them).
	Choices Choices
	// Conversations, when set, finds each member's conversation on the number, whose last
	// message opens the 24-hour window; without it a notification goes as to a member with no
	// conversation: as its template.
	Conversations Conversations
	Outbox        Queue
	// Hasher keys the notifications' ids (IDPurpose) and the members' hashes in logs.
	Hasher *logging.Hasher
	// Now is time.Now when nil.
	Now func() time.Time
}

// Notify queues one notification of the succeeded action a (its request req) to each member of
// tn with one of the intent's notify roles, except the sender. Running it again for the same
// action queues nothing new: each record's key is Key(action, member). An error leaves the
// others queued; the caller retries and the retry queues only what is missing.
func (n *Notifier) Notify(ctx context.Context, tn *tenant.Tenant, a tasks.Action, req actioncall.Request) error {
	in, ok := tn.Intent(req.Intent)
	if !ok || len(in.Notify) == 0 {
		return nil
	}
	logger := logging.FromContext(ctx)
	to, err := n.Recipients(ctx, tn, in.Notify, contact.Identity{WaID: a.To, UserID: a.UserID, ParentUserID: a.ParentUserID})
	if err != nil {
		return err
	}
	var errs []error
	for _, m := range to {
		person := m.Identity()
		ref := n.ref(person)
		left, err := n.leftOn(ctx, tn, a.PhoneNumberID, person)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if left {
			logger.InfoContext(ctx, "notification not queued: the member chose another tenant on this shared number",
				"event", "notification_skipped", "reason", "left_shared_number", "to_hash", ref, "role", m.Role)
			continue
		}
		msg := Compose(tn, in, m, req.From, req.Data)
		seed, err := n.seed(ctx, tn.ID, a.PhoneNumberID, m, n.Key(a.ActionID, memberKey(m)), msg)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		seed.CorrelationID, seed.InboundEventID = a.CorrelationID, a.InboundEventID
		_, created, err := n.Outbox.Queue(ctx, seed)
		if err != nil {
			errs = append(errs, fmt.Errorf("queue the notification to %s: %w", ref, err))
			continue
		}
		logger.InfoContext(ctx, "notification queued", "event", "notification_queued", "to_hash", seed.ToHash,
			"role", m.Role, "idempotency_key", seed.IdempotencyKey, "existed", !created, "template", msg.Fallback != nil)
	}
	return errors.Join(errs...)
}

// ref is the keyed reference of a member in logs and records: ph_ of the phone, else us_ of
// the BSUID.
func (n *Notifier) ref(person contact.Identity) string {
	if person.WaID != "" {
		return n.Hasher.Phone(person.WaID)
	}
	return n.Hasher.User(person.UserID + person.ParentUserID)
}

// conversation is the member's conversation on the number, "" when they have none (no
// conversation: the window is closed).
func (n *Notifier) conversation(ctx context.Context, tenantID, phoneNumberID string, person contact.Identity) (string, error) {
	if n.Conversations == nil {
		return "", nil
	}
	id, _, err := n.Conversations.ConversationOf(ctx, tenantID, phoneNumberID, person)
	return id, err
}

// memberKey is what names a member in its notification's key: its phone (as before contacts,
// so a notification queued then keeps its key), else its BSUID.
func memberKey(m tenant.Member) string {
	if m.WaID != "" {
		return m.WaID
	}
	return m.UserID
}

// leftOn reports whether person, a member of tn, chose another tenant on phoneNumberID with an
// invite code and is still its member: on a shared number that makes the contact the other
// tenant's, whatever tn's file says (tenantcache.ContactRouter routes them there), so tn's
// business is no longer theirs to hear of there. One removed from the tenant they chose is
// routed by the files again, and told again.
func (n *Notifier) leftOn(ctx context.Context, tn *tenant.Tenant, phoneNumberID string, person contact.Identity) (bool, error) {
	if n.Choices == nil || !tn.SharesNumber(phoneNumberID) {
		return false, nil
	}
	sc, err := n.Choices.SharedContact(ctx, phoneNumberID, nil, person)
	if err == nil && sc.Chosen != "" && sc.Chosen != tn.ID {
		sc, err = n.Choices.SharedContact(ctx, phoneNumberID, []string{sc.Chosen}, person)
		if err == nil {
			return len(sc.Joined) > 0, nil
		}
	}
	if err != nil {
		return false, fmt.Errorf("read the choice of %s on shared number %s: %w", n.ref(person), phoneNumberID, err)
	}
	return false, nil
}

// Recipients are the members of tn with one of roles, except the sender: the file's members,
// then those who joined by invite (a person in both counts once, as the file says), in that
// order.
func (n *Notifier) Recipients(ctx context.Context, tn *tenant.Tenant, roles []tenant.Role, sender contact.Identity) ([]tenant.Member, error) {
	var out []tenant.Member
	seen := func(m tenant.Member) bool {
		id := m.Identity()
		return id.Matches(sender) || slices.ContainsFunc(out, func(o tenant.Member) bool { return o.Identity().Matches(id) })
	}
	for _, m := range tn.Members {
		if slices.Contains(roles, m.Role) && !seen(m) {
			out = append(out, m)
		}
	}
	joined, err := n.Members.RuntimeMembersWithRoles(ctx, tn.ID, roles)
	if err != nil {
		return nil, fmt.Errorf("list the members to notify: %w", err)
	}
	for _, m := range joined {
		if !seen(m) && !m.Identity().IsZero() {
			out = append(out, m)
		}
	}
	return out, nil
}

// IDPurpose names the key notification ids are derived with (logging.Hasher.DerivedKey).
const IDPurpose = "wapipe/notification-id/v1"

// Key is the record key of the notification of action actionID to the member named waID (its
// phone, else its BSUID: memberKey): an HMAC
// keyed with a server secret (derived from LOG_HASH_KEY), like the api's message ids
// (outbox.MessageID), then tasks.SendKey. One per (action, member), whoever computes it and
// however often; nobody who knows the two can compute it, or echo it in a status.
func (n *Notifier) Key(actionID, waID string) string {
	m := hmac.New(sha256.New, n.Hasher.DerivedKey(IDPurpose))
	m.Write([]byte(actionID + "\x00" + waID))
	return tasks.SendKey("ntf_" + hex.EncodeToString(m.Sum(nil)[:16]))
}

// Tell queues text(lang) to each member of tn with one of its alert roles (tenant.AlertRoles),
// in the member's language, from tn's first number: an owner notice (a budget threshold). Each
// record's key is Key(noticeID, member), so telling the same notice again queues nothing new.
// Outside a member's 24-hour window the notice is skipped (it has no template of its own); the
// operator's alert on the same event carries it.
func (n *Notifier) Tell(ctx context.Context, tn *tenant.Tenant, noticeID string, text func(lang string) string) error {
	if len(tn.PhoneNumbers) == 0 {
		return nil
	}
	number := tn.PhoneNumbers[0].PhoneNumberID
	to, err := n.Recipients(ctx, tn, tn.AlertRoles(), contact.Identity{})
	if err != nil {
		return err
	}
	var errs []error
	for _, m := range to {
		msg := Message{Text: graph.Message{Type: "text", Text: &graph.Text{Body: graph.Clip(text(tn.EffectiveLanguage(m)), maxText)}}}
		seed, err := n.seed(ctx, tn.ID, number, m, n.Key(noticeID, memberKey(m)), msg)
		if err == nil {
			_, _, err = n.Outbox.Queue(ctx, seed)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("queue the notice to %s: %w", n.ref(m.Identity()), err))
		}
	}
	return errors.Join(errs...)
}

// now is Now, else time.Now.
func (n *Notifier) now() time.Time {
	if n.Now != nil {
		return n.Now()
	}
	return time.Now()
}

// seed is the send record of msg to member m of tenantID on phoneNumberID under key: in the
// member's conversation there, when they have one (the window's check).
func (n *Notifier) seed(ctx context.Context, tenantID, phoneNumberID string, m tenant.Member, key string, msg Message) (store.OutboundRecord, error) {
	person := m.Identity()
	convID, err := n.conversation(ctx, tenantID, phoneNumberID, person)
	if err != nil {
		return store.OutboundRecord{}, err
	}
	text, err := json.Marshal(msg.Text)
	if err != nil {
		return store.OutboundRecord{}, fmt.Errorf("encode the notification: %w", err)
	}
	addr := person.Address()
	seed := store.OutboundRecord{
		IdempotencyKey: key, Source: store.SourceNotification, TenantID: tenantID, PhoneNumberID: phoneNumberID,
		To: addr.To, Recipient: addr.Recipient, ConversationID: convID, ToHash: n.ref(person),
		Message: string(text), MessageType: msg.Text.Type, ReceivedAt: n.now(),
	}
	if msg.Fallback != nil {
		fallback, err := json.Marshal(msg.Fallback)
		if err != nil {
			return store.OutboundRecord{}, fmt.Errorf("encode the notification's template: %w", err)
		}
		seed.Fallback = string(fallback)
	}
	return seed, nil
}
