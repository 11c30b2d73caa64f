package tasks

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/wapipe/wapipe/internal/keyedid"
)

// Spec is one task as the table makes it, ready to create: taskqueue.FromSpec turns it into the
// Cloud Tasks client's task (tasks/ stays free of the client, which imports it).
type Spec struct {
	// Queue is the queue's id; ID the task's id (deterministic, so a second creation meets
	// AlreadyExists); Path the worker route; Body the JSON body.
	Queue, ID, Path string
	Body            []byte
	// CorrelationID travels as X-Correlation-ID, and in the body.
	CorrelationID string
}

// Body is the JSON body of a task route's tasks: Inbound, Outbound, Send or Action. Each knows
// its route, the id a task of it takes and the tenant it names, so that NewTask makes every task
// the same way; and it reads its own raw form, so that the queue of a dead letter's body and the
// record its replay reopens are read in one place (Route.QueueOf, Route.ReplayRecord).
type Body interface {
	taskPath() string
	taskID() string
	taskTenant() string
	taskCorrelation() string
	// tenantIn reads the tenant a raw body of this type names; ok is false when it names none.
	tenantIn(raw []byte) (tenantID string, ok bool)
	// recordIn is the outbound record a task of this type sends (see Route.ReplayRecord).
	recordIn(k *keyedid.Keyer, recorded string, raw []byte) (key, legacy string)
}

// ErrNoTenant: a task body that names no tenant on a route whose queue its tenant decides.
var ErrNoTenant = errors.New("the body names no tenant: its queue is unknown")

// NewTask is the task of body b as the table says: on the queue that feeds b's route for the
// tenant b names (Route.QueueFor), under the id the route derives from b, with b as JSON. A
// producer that names its task otherwise (a sweep's, a replay's) replaces ID.
func NewTask(b Body) (Spec, error) {
	r, ok := routeByPath(b.taskPath())
	if !ok {
		return Spec{}, fmt.Errorf("%s is not a worker route", b.taskPath())
	}
	queue, err := r.QueueFor(b.taskTenant())
	if err != nil {
		return Spec{}, fmt.Errorf("%s task: %w", r.Path, err)
	}
	raw, err := json.Marshal(b)
	if err != nil {
		return Spec{}, fmt.Errorf("encode the %s task: %w", r.Path, err)
	}
	return Spec{Queue: queue, ID: b.taskID(), Path: r.Path, Body: raw, CorrelationID: b.taskCorrelation()}, nil
}

// TaskRoute is the task route of path (exactly: task routes have no parameters); ok is false for
// any other path.
func TaskRoute(path string) (Route, bool) {
	r, ok := routeByPath(path)
	return r, ok && r.Via == ViaTask && r.Body != nil
}

// QueueFor is the queue a task of the route goes to for tenant tenantID ("" the single-tenant
// default): the route's one queue when its tenant does not decide (process_inbound's); else the
// tenant's send queue, or for the single-tenant default the route's first queue (the outbound
// queue), or ErrNoTenant on a route every task of which is a tenant's (process_action).
func (r Route) QueueFor(tenantID string) (string, error) {
	switch {
	case !r.TenantQueues && len(r.Queues) > 0:
		return r.Queues[0], nil
	case r.TenantQueues && tenantID != "":
		return TenantQueueID(tenantID), nil
	case r.TenantQueues && len(r.Queues) > 0:
		return r.Queues[0], nil
	}
	return "", ErrNoTenant
}

// QueueOf is the queue a task of the route with raw body came from, read from the tenant the body
// names: for a dead letter whose queue the worker did not learn (a task run without Cloud Tasks'
// headers). ErrNoTenant when the body names none its route can place.
func (r Route) QueueOf(raw []byte) (string, error) {
	if r.Body == nil {
		return "", fmt.Errorf("%s is not a task route", r.Path)
	}
	tenantID, ok := r.Body.tenantIn(raw)
	if !ok {
		return "", ErrNoTenant
	}
	return r.QueueFor(tenantID)
}

// ReplayRecord is the outbound record a replay of a dead letter of the route reopens first (a
// failed record made pending, so the replay may send; a sent one stays sent, so it cannot
// answer twice): recorded (the dead letter's own idempotency key) when set, else the record the
// raw body sends. legacy, when set, is the unkeyed key of the same record, to read when key finds
// none (an action answered before keys were keyed). Both are "" on a route whose tasks send no
// record (process_inbound).
func (r Route) ReplayRecord(k *keyedid.Keyer, recorded string, raw []byte) (key, legacy string) {
	if r.Body == nil {
		return "", ""
	}
	return r.Body.recordIn(k, recorded, raw)
}

// bodyFields are the fields of a raw body that place and name its task, whatever its type.
type bodyFields struct {
	// TenantID is a pointer so that a body without the field is told from one that names the
	// single-tenant default ("").
	TenantID       *string `json:"tenant_id"`
	IdempotencyKey string  `json:"idempotency_key"`
	ActionID       string  `json:"action_id"`
}

func fieldsOf(raw []byte) (bodyFields, bool) {
	var f bodyFields
	return f, json.Unmarshal(raw, &f) == nil
}

func (b Inbound) taskPath() string             { return ProcessInboundPath }
func (b Inbound) taskID() string               { return InboundTaskID(b.InboundEventID) }
func (b Inbound) taskTenant() string           { return "" }
func (b Inbound) taskCorrelation() string      { return b.CorrelationID }
func (Inbound) tenantIn([]byte) (string, bool) { return "", true }

// recordIn: a delivery sends nothing itself; its replies are outbound tasks.
func (Inbound) recordIn(*keyedid.Keyer, string, []byte) (string, string) { return "", "" }

func (b Outbound) taskPath() string        { return ProcessOutboundPath }
func (b Outbound) taskID() string          { return OutboundTaskID(b.Message.ID) }
func (b Outbound) taskTenant() string      { return b.TenantID }
func (b Outbound) taskCorrelation() string { return b.CorrelationID }

// tenantIn: an Outbound leaves tenant_id out for the single-tenant default, so a body without it
// (or that cannot say) is the default's.
func (Outbound) tenantIn(raw []byte) (string, bool) {
	if f, _ := fieldsOf(raw); f.TenantID != nil {
		return *f.TenantID, true
	}
	return "", true
}

func (Outbound) recordIn(_ *keyedid.Keyer, recorded string, raw []byte) (string, string) {
	return recordKeyIn(recorded, raw)
}

func (b Send) taskPath() string        { return ProcessSendPath }
func (b Send) taskID() string          { return SendTaskID(b.IdempotencyKey, b.ReleaseGen) }
func (b Send) taskTenant() string      { return b.TenantID }
func (b Send) taskCorrelation() string { return b.CorrelationID }

// tenantIn: a Send always writes tenant_id ("" for the single-tenant default's record), so a body
// without it was not written as a Send, and names nobody.
func (Send) tenantIn(raw []byte) (string, bool) {
	f, ok := fieldsOf(raw)
	if !ok || f.TenantID == nil {
		return "", false
	}
	return *f.TenantID, true
}

func (Send) recordIn(_ *keyedid.Keyer, recorded string, raw []byte) (string, string) {
	return recordKeyIn(recorded, raw)
}

func (b Action) taskPath() string        { return ProcessActionPath }
func (b Action) taskID() string          { return ActionTaskID(b.ActionID) }
func (b Action) taskTenant() string      { return b.TenantID }
func (b Action) taskCorrelation() string { return b.CorrelationID }

// tenantIn: an action is always a tenant's (QueueFor refuses "").
func (Action) tenantIn(raw []byte) (string, bool) {
	f, ok := fieldsOf(raw)
	if !ok || f.TenantID == nil {
		return "", false
	}
	return *f.TenantID, true
}

// recordIn: an action's record is that of its one result message (ActionReplyKey), or, for an
// action answered before keys were keyed, the unkeyed key its action record kept.
func (Action) recordIn(k *keyedid.Keyer, recorded string, raw []byte) (string, string) {
	f, _ := fieldsOf(raw)
	if recorded != "" || f.ActionID == "" {
		return recordKeyIn(recorded, raw)
	}
	if k == nil {
		k = keyedid.Dev()
	}
	return ActionReplyKey(k, f.ActionID), LegacyActionReplyKey(f.ActionID)
}

// recordKeyIn is recorded, else the record a body names by idempotency_key (tasks.Outbound,
// tasks.Send).
func recordKeyIn(recorded string, raw []byte) (string, string) {
	if recorded != "" {
		return recorded, ""
	}
	f, _ := fieldsOf(raw)
	return f.IdempotencyKey, ""
}
