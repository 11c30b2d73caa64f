package actionrun

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/wapipe/wapipe/internal/assistant"
	"github.com/wapipe/wapipe/internal/contact"
	"github.com/wapipe/wapipe/internal/conversation"
	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/internal/taskqueue"
	"github.com/wapipe/wapipe/tasks"
)

// Enqueuer creates tasks; *taskqueue.Client implements it.
type Enqueuer interface {
	Enqueue(ctx context.Context, t taskqueue.Task) (taskqueue.Result, error)
}

// Queue enqueues the actions of committed turns (conversation.Actions) on the tenant's send
// queue, one task per action id (tasks.NewTask), so a redone turn enqueues nothing twice.
type Queue struct{ Tasks Enqueuer }

// EnqueueAction creates the action's task; a task already created for it counts as success.
func (q Queue) EnqueueAction(ctx context.Context, p conversation.Pending, req assistant.ActionRequest) error {
	raw, err := json.Marshal(req)
	if err != nil {
		return fmt.Errorf("encode action request: %w", err)
	}
	task, err := tasks.NewTask(tasks.Action{
		ActionID: req.ActionID, TenantID: p.TenantID, ConversationID: p.ConversationID,
		PhoneNumberID: p.PhoneNumberID, ContactID: p.ContactID, To: person(p).WaID, UserID: person(p).UserID,
		ParentUserID: person(p).ParentUserID, MessageID: p.MessageID,
		InboundEventID: p.InboundEventID, CorrelationID: p.CorrelationID, ReceivedAt: p.ReceivedAt, Request: raw,
	})
	if err != nil {
		return fmt.Errorf("action task: %w", err)
	}
	res, err := q.Tasks.Enqueue(ctx, taskqueue.FromSpec(task))
	if err != nil {
		return fmt.Errorf("create action task: %w", err)
	}
	logging.FromContext(ctx).InfoContext(ctx, "action queued", "event", "action_queued", "action_id", req.ActionID,
		"intent", req.Intent, "existed", res.Existed)
	return nil
}

// person is who sent p: as known when it arrived, else (a message stored before contacts) its
// phone.
func person(p conversation.Pending) contact.Identity {
	if !p.Person.IsZero() {
		return p.Person
	}
	return contact.Identity{WaID: p.Contact}
}
