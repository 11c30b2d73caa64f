// Package choice asks a contact who is a member of several tenants on a shared number which one
// they are writing to, and keeps their messages until they answer (CONTRACT.md, "Businesses
// sharing a number"): no tenant takes another's member by sorting first. process_inbound holds
// such a contact's message instead of routing it and, for the first one, sends a list (one row
// per tenant, id tenant:<id>) from the number's primary tenant; the tap records the choice, which
// routes from then on, and sends the held messages, in Meta's order, to the tenant chosen.
//
// Every step is idempotent, as the inbound task that runs it may run again: a message is held
// under its id, the list is one outbound record under a key derived from the message that asked
// it (keyedid.Keyer.ChoiceKey), and a released message is one task named after its id.
package choice

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/wapipe/wapipe/internal/contact"
	"github.com/wapipe/wapipe/internal/graph"
	"github.com/wapipe/wapipe/internal/i18n"
	"github.com/wapipe/wapipe/internal/keyedid"
	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/taskqueue"
	"github.com/wapipe/wapipe/internal/tenant"
	"github.com/wapipe/wapipe/internal/tenantcache"
	"github.com/wapipe/wapipe/tasks"
)

// Holds keeps the messages waiting for a choice; *store.Tenants implements it.
type Holds interface {
	HoldForChoice(ctx context.Context, phoneNumberID, messageID, timestamp string, person contact.Identity, body []byte) (bool, error)
	HeldMessages(ctx context.Context, phoneNumberID string, person contact.Identity) ([]store.Held, error)
	DropHeld(ctx context.Context, phoneNumberID string, refs []string) error
}

// Tenants reads a tenant (the host's language); the worker's tenant cache implements it.
type Tenants interface {
	Tenant(ctx context.Context, id string) (store.TenantRecord, error)
}

// Queuer stores a send's record once and queues its process_send task; *outbox.Outbox
// implements it.
type Queuer interface {
	Queue(ctx context.Context, seed store.OutboundRecord) (store.OutboundRecord, bool, error)
}

// Enqueuer creates tasks; *taskqueue.Client implements it.
type Enqueuer interface {
	Enqueue(ctx context.Context, t taskqueue.Task) (taskqueue.Result, error)
}

// Chooser holds, asks and releases. All fields are required but Now.
type Chooser struct {
	Holds   Holds
	Tenants Tenants
	Outbox  Queuer
	Tasks   Enqueuer
	Keyer   *keyedid.Keyer
	Hasher  *logging.Hasher
	Now     func() time.Time
}

// Hold keeps message body.Message of its task body (routed to no tenant yet) until its sender
// chooses among q's tenants, and asks them with the list when it is the first message held since
// their last choice. It returns whether the list was queued by this call's message.
func (c *Chooser) Hold(ctx context.Context, body tasks.Outbound, q tenantcache.Question) (asked bool, err error) {
	m := body.Message
	person := m.Identity()
	raw, err := json.Marshal(body)
	if err != nil {
		return false, fmt.Errorf("encode the held message: %w", err)
	}
	ask, err := c.Holds.HoldForChoice(ctx, m.PhoneNumberID, m.ID, m.Timestamp, person, raw)
	if err != nil || !ask {
		return false, err
	}
	rec, err := c.Tenants.Tenant(ctx, q.Host)
	if err != nil {
		return false, fmt.Errorf("read the number's primary tenant %s: %w", q.Host, err)
	}
	list, err := json.Marshal(Question(rec.Tenant.EffectiveLanguage(tenant.Member{}), q))
	if err != nil {
		return false, fmt.Errorf("encode the list: %w", err)
	}
	addr := person.Address()
	now := time.Now
	if c.Now != nil {
		now = c.Now
	}
	_, _, err = c.Outbox.Queue(ctx, store.OutboundRecord{
		IdempotencyKey: c.Keyer.ChoiceKey(m.ID), Source: store.SourceTenantChoice, TenantID: q.Host,
		PhoneNumberID: m.PhoneNumberID, To: addr.To, Recipient: addr.Recipient, ToHash: c.Hasher.Address(addr.To, addr.Recipient),
		Message: string(list), MessageType: "interactive", CorrelationID: body.CorrelationID,
		InboundEventID: body.InboundEventID, ReceivedAt: now(),
	})
	if err != nil {
		return false, fmt.Errorf("queue the list of tenants: %w", err)
	}
	return true, nil
}

// Question is the list that asks which of q's tenants a message is for, in lang.
func Question(lang string, q tenantcache.Question) graph.Message {
	rows := make([]graph.Row, 0, len(q.Choices))
	for _, ch := range q.Choices {
		if len(rows) == graph.MaxListRows {
			break
		}
		row := graph.Row{ID: tenantcache.ChoiceRowID(ch.ID), Title: graph.Clip(ch.Name, graph.MaxListRowTitle)}
		if row.Title != ch.Name {
			row.Description = graph.Clip(ch.Name, graph.MaxListRowDescription)
		}
		rows = append(rows, row)
	}
	return graph.Message{Type: "interactive", Interactive: &graph.Interactive{
		Type:   "list",
		Body:   &graph.Body{Text: i18n.Text(lang, i18n.ChooseTenant)},
		Action: graph.Action{Button: i18n.Text(lang, i18n.ButtonChoose), Sections: []graph.Section{{Rows: rows}}},
	}}
}

// Release sends the messages held for person on phoneNumberID to tenant id, which they chose,
// oldest first, each as its own outbound task, then forgets them. It returns how many went.
func (c *Chooser) Release(ctx context.Context, phoneNumberID string, person contact.Identity, id string) (int, error) {
	held, err := c.Holds.HeldMessages(ctx, phoneNumberID, person)
	if err != nil {
		return 0, err
	}
	var refs []string
	var errs []error
	for _, h := range held {
		var body tasks.Outbound
		if err := json.Unmarshal(h.Body, &body); err != nil || body.Message.ID == "" {
			// Nothing can send it; it expires with its hold.
			logging.FromContext(ctx).ErrorContext(ctx, "held message unreadable: dropped", "event", "held_message_unreadable",
				"phone_number_id", phoneNumberID)
			refs = append(refs, h.Ref)
			continue
		}
		body.TenantID = id
		spec, err := tasks.NewTask(body)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		// Its first task (to no tenant) took the message's own task name within the hour.
		spec.ID = tasks.ChosenTaskID(body.Message.ID)
		if _, err := c.Tasks.Enqueue(ctx, taskqueue.FromSpec(spec)); err != nil {
			errs = append(errs, fmt.Errorf("send a held message to %s: %w", id, err))
			continue
		}
		refs = append(refs, h.Ref)
	}
	if err := errors.Join(errs...); err != nil {
		// The ones that went are dropped by the retry, whose enqueue of them finds their tasks.
		return 0, err
	}
	if err := c.Holds.DropHeld(ctx, phoneNumberID, refs); err != nil {
		return 0, err
	}
	return len(held), nil
}
