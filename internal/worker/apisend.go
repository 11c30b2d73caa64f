package worker

import (
	"context"
	"time"

	"github.com/wapipe/wapipe/internal/delivery"
	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/tasks"
)

// sendIDs notes a send task's ids on t.
func sendIDs(t *task, body *tasks.Send) {
	body.CorrelationID = t.correlate(body.CorrelationID)
	t.idempotencyKey, t.tenantID = body.IdempotencyKey, body.TenantID
}

// processSend sends one message from its record (package delivery): a send made through the api
// service or the console, or a parked send released.
func (s *Server) processSend(ctx context.Context, t *task, body tasks.Send, _ time.Time) outcome {
	ctx, _ = logging.With(ctx, "correlation_id", body.CorrelationID, "idempotency_key", body.IdempotencyKey,
		"tenant_id", body.TenantID, "release_gen", body.ReleaseGen)
	st := delivery.Stored{Key: body.IdempotencyKey, TenantID: body.TenantID, ReleaseGen: body.ReleaseGen, LastAttempt: s.isLastAttempt(t)}
	if body.TenantID == "" {
		// A default reply's record, held or dead-lettered: sent with the default's token.
		st.Token = s.cfg.AccessToken
	}
	res := s.deliver.DeliverStored(ctx, st)
	return s.deliveryOutcome(ctx, t, res)
}
