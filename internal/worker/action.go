package worker

import (
	"context"
	"net/http"
	"time"

	"github.com/wapipe/wapipe/internal/action"
	"github.com/wapipe/wapipe/internal/actions"
	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/tasks"
)

// handleProcessAction runs one action: it calls the business unless an answer is recorded, then
// tells the user the result, exactly once (its own idempotency record).
func (s *Server) handleProcessAction() http.Handler {
	// One request per call: the validated request is the handler's, not shared between tasks.
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req action.Request
		taskHandler(s, tasks.ProcessActionPath, func(t *task, a *tasks.Action) {
			a.CorrelationID = t.correlate(a.CorrelationID)
			t.inboundEventID, t.tenantID, t.idempotencyKey = a.InboundEventID, a.TenantID, tasks.ActionReplyKey(a.ActionID)
		}, func(a tasks.Action) (err error) {
			req, err = actions.Validate(a)
			return err
		}, func(ctx context.Context, t *task, a tasks.Action, _ time.Time) outcome {
			ctx, _ = logging.With(ctx, "action_id", a.ActionID, "tenant_id", a.TenantID, "conversation_id", a.ConversationID,
				"correlation_id", a.CorrelationID, "intent", req.Intent, logging.EventID(a.InboundEventID))
			return s.actionOutcome(ctx, t, s.actions.Run(ctx, a, req, s.isLastAttempt(t)))
		}).ServeHTTP(w, r)
	})
}
