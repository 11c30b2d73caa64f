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

	"github.com/wapipe/wapipe/internal/action"
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
	SharedContact(ctx context.Context, phoneNumberID string, tenantIDs []string, waID string) (store.SharedContact, error)
}

// Notifier queues the notifications of succeeded actions. Members, Outbox and Hasher are
// required.
type Notifier struct {
	Members Directory
	// Choices, when set, keeps a shared number's notifications from the members who left the
	// tenant there for another tenant's invite code (its file still lists them).
	Choices Choices
	Outbox  Queue
	// Hasher keys the notifications' ids (IDPurpose) and the members' hashes in logs.
	Hasher *logging.Hasher
	// Now is time.Now when nil.
	Now func() time.Time
}

// Notify queues one notification of the succeeded action a (its request req) to each member of
// tn with one of the intent's notify roles, except the sender. Running it again for the same
// action queues nothing new: each record's key is Key(action, member). An error leaves the
// others queued; the caller retries and the retry queues only what is missing.
func (n *Notifier) Notify(ctx context.Context, tn *tenant.Tenant, a tasks.Action, req action.Request) error {
	in, ok := tn.Intent(req.Intent)
	if !ok || len(in.Notify) == 0 {
		return nil
	}
	logger := logging.FromContext(ctx)
	to, err := n.Recipients(ctx, tn, in.Notify, a.To)
	if err != nil {
		return err
	}
	now := time.Now
	if n.Now != nil {
		now = n.Now
	}
	sender := Sender(req.From)
	var errs []error
	for _, m := range to {
		left, err := n.leftOn(ctx, tn, a.PhoneNumberID, m.WaID)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if left {
			logger.InfoContext(ctx, "notification not queued: the member chose another tenant on this shared number",
				"event", "notification_skipped", "reason", "left_shared_number", "to_hash", n.Hasher.Phone(m.WaID), "role", m.Role)
			continue
		}
		msg := Compose(tn, in, m, sender, req.Data)
		text, err := json.Marshal(msg.Text)
		if err != nil {
			return fmt.Errorf("encode the notification: %w", err)
		}
		seed := store.OutboundRecord{
			IdempotencyKey: n.Key(a.ActionID, m.WaID), Source: store.SourceNotification, TenantID: tn.ID,
			PhoneNumberID: a.PhoneNumberID, To: m.WaID, ToHash: n.Hasher.Phone(m.WaID), Message: string(text),
			MessageType: msg.Text.Type, CorrelationID: a.CorrelationID, InboundEventID: a.InboundEventID, ReceivedAt: now(),
		}
		if msg.Fallback != nil {
			fallback, err := json.Marshal(msg.Fallback)
			if err != nil {
				return fmt.Errorf("encode the notification's template: %w", err)
			}
			seed.Fallback = string(fallback)
		}
		_, created, err := n.Outbox.Queue(ctx, seed)
		if err != nil {
			errs = append(errs, fmt.Errorf("queue the notification to %s: %w", n.Hasher.Phone(m.WaID), err))
			continue
		}
		logger.InfoContext(ctx, "notification queued", "event", "notification_queued", "to_hash", seed.ToHash,
			"role", m.Role, "idempotency_key", seed.IdempotencyKey, "existed", !created, "template", msg.Fallback != nil)
	}
	return errors.Join(errs...)
}

// leftOn reports whether waID, a member of tn, chose another tenant on phoneNumberID with an
// invite code and is still its member: on a shared number that makes the contact the other
// tenant's, whatever tn's file says (tenantcache.ContactRouter routes them there), so tn's
// business is no longer theirs to hear of there. One removed from the tenant they chose is
// routed by the files again, and told again.
func (n *Notifier) leftOn(ctx context.Context, tn *tenant.Tenant, phoneNumberID, waID string) (bool, error) {
	if n.Choices == nil || !tn.SharesNumber(phoneNumberID) {
		return false, nil
	}
	sc, err := n.Choices.SharedContact(ctx, phoneNumberID, nil, waID)
	if err == nil && sc.Chosen != "" && sc.Chosen != tn.ID {
		sc, err = n.Choices.SharedContact(ctx, phoneNumberID, []string{sc.Chosen}, waID)
		if err == nil {
			return len(sc.Joined) > 0, nil
		}
	}
	if err != nil {
		return false, fmt.Errorf("read the choice of %s on shared number %s: %w", n.Hasher.Phone(waID), phoneNumberID, err)
	}
	return false, nil
}

// Recipients are the members of tn with one of roles, except the sender: the file's members,
// then those who joined by invite (a number in both counts once, as the file says), in that
// order.
func (n *Notifier) Recipients(ctx context.Context, tn *tenant.Tenant, roles []tenant.Role, sender string) ([]tenant.Member, error) {
	var out []tenant.Member
	seen := map[string]bool{sender: true}
	for _, m := range tn.Members {
		if slices.Contains(roles, m.Role) && !seen[m.WaID] {
			seen[m.WaID] = true
			out = append(out, m)
		}
	}
	joined, err := n.Members.RuntimeMembersWithRoles(ctx, tn.ID, roles)
	if err != nil {
		return nil, fmt.Errorf("list the members to notify: %w", err)
	}
	for _, m := range joined {
		if !seen[m.WaID] {
			seen[m.WaID] = true
			out = append(out, m)
		}
	}
	return out, nil
}

// IDPurpose names the key notification ids are derived with (logging.Hasher.DerivedKey).
const IDPurpose = "wapipe/notification-id/v1"

// Key is the record key of the notification of action actionID to the member waID: an HMAC
// keyed with a server secret (derived from LOG_HASH_KEY), like the api's message ids
// (outbox.MessageID), then tasks.SendKey. One per (action, member), whoever computes it and
// however often; nobody who knows the two can compute it, or echo it in a status.
func (n *Notifier) Key(actionID, waID string) string {
	m := hmac.New(sha256.New, n.Hasher.DerivedKey(IDPurpose))
	m.Write([]byte(actionID + "\x00" + waID))
	return tasks.SendKey("ntf_" + hex.EncodeToString(m.Sum(nil)[:16]))
}
