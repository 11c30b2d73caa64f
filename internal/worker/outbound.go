package worker

import (
	"context"
	"errors"
	"time"

	"github.com/wapipe/wapipe/internal/delivery"
	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/tasks"
)

// outboundIDs notes an outbound task's ids on t.
func outboundIDs(t *task, out *tasks.Outbound) {
	out.CorrelationID = t.correlate(out.CorrelationID)
	t.inboundEventID, t.idempotencyKey, t.tenantID = out.InboundEventID, out.IdempotencyKey, out.TenantID
}

// runOutbound answers one inbound message, with its ids in the logger (processOutbound).
func (s *Server) runOutbound(ctx context.Context, t *task, out tasks.Outbound, start time.Time) outcome {
	ctx, _ = logging.With(ctx, logging.EventID(out.InboundEventID), "correlation_id", out.CorrelationID,
		"idempotency_key", out.IdempotencyKey, "phone_number_id", out.PhoneNumberID, logging.Phone("to", out.To),
		logging.User("to_user", out.UserID), "message_type", out.Message.Type, "tenant_id", out.TenantID)
	return s.processOutbound(ctx, t, out, start)
}

// errNoConversations is a tenant's message reaching a worker built without Deps.Conversations.
var errNoConversations = errors.New("a tenant's message, but this worker has no conversation store (Deps.Conversations)")

// processOutbound answers the message: a tenant's through its conversation (converse), the
// single-tenant default's with the Responder's reply, sent once (package delivery).
func (s *Server) processOutbound(ctx context.Context, t *task, out tasks.Outbound, start time.Time) outcome {
	if out.TenantID != "" {
		if s.turner == nil {
			return s.deadLetter(ctx, t, permanentFailure(errNoConversations))
		}
		return s.converse(ctx, t, out, start)
	}
	compose, err := s.defaultTurn.Prepare(ctx, out.Message)
	if err != nil {
		return s.fail(ctx, t, err)
	}
	// The reply goes to the phone when it came, else to the BSUID (never a BSUID in "to").
	addr := out.Sender().Address()
	return s.deliveryOutcome(ctx, t, s.deliver.Deliver(ctx, delivery.Request{
		Kind: delivery.DefaultReply, Key: out.IdempotencyKey, Token: s.cfg.AccessToken, PhoneNumberID: out.PhoneNumberID,
		To: addr.To, Recipient: addr.Recipient, InboundMessageID: out.Message.ID, InboundEventID: out.InboundEventID, CorrelationID: out.CorrelationID,
		ReceivedAt: out.ReceivedAt, MarkRead: true, LastAttempt: s.isLastAttempt(t), Compose: compose,
	}))
}
