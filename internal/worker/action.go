package worker

import (
	"context"
	"time"

	"github.com/wapipe/wapipe/internal/actionrun"
	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/internal/notify"
	"github.com/wapipe/wapipe/internal/outbox"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/taskqueue"
	"github.com/wapipe/wapipe/tasks"
)

// actionIDs notes an action task's ids on t.
func (s *Server) actionIDs(t *task, a *tasks.Action) {
	a.CorrelationID = t.correlate(a.CorrelationID)
	t.inboundEventID, t.tenantID, t.idempotencyKey = a.InboundEventID, a.TenantID, tasks.ActionReplyKey(s.deps.Keyer, a.ActionID)
}

// validateAction checks an action task (actionrun.Validate).
func validateAction(a tasks.Action) error {
	_, err := actionrun.Validate(a)
	return err
}

// processAction runs one action: it calls the business unless an answer is recorded, then
// tells the user the result, exactly once (its own idempotency record).
func (s *Server) processAction(ctx context.Context, t *task, a tasks.Action, _ time.Time) outcome {
	// validateAction passed: the request decodes.
	req, _ := actionrun.Validate(a)
	ctx, _ = logging.With(ctx, "action_id", a.ActionID, "tenant_id", a.TenantID, "conversation_id", a.ConversationID,
		"correlation_id", a.CorrelationID, "intent", req.Intent, logging.EventID(a.InboundEventID))
	return s.actionOutcome(ctx, t, s.actions.Run(ctx, a, req, s.isLastAttempt(t)))
}

// newNotifier queues the notifications of succeeded actions as send records and their
// process_send tasks on each tenant's queue (package outbox), like the api's sends.
func newNotifier(db *store.DB, tq *taskqueue.Client, tenants *store.Tenants, hasher *logging.Hasher) *notify.Notifier {
	return &notify.Notifier{Members: tenants, Choices: tenants, Hasher: hasher, Conversations: store.NewConversationStore(db, store.Options{}),
		Outbox: &outbox.Outbox{Sends: store.NewSends(db, store.Options{}), Tasks: tq, Hasher: hasher}}
}
