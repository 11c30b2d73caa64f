package worker

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/internal/responder"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/tasks"
)

// OutboundRecords are the idempotency records of replies: the send step asks one whether it may
// send and settles it after; the store's outbound records implement it.
type OutboundRecords interface {
	BeginSend(ctx context.Context, seed store.OutboundRecord) (store.Decision, store.OutboundRecord, error)
	MarkSent(ctx context.Context, key, graphMessageID string, readMarked bool) (store.OutboundRecord, error)
	MarkSkipped(ctx context.Context, key string) error
	MarkFailed(ctx context.Context, key string, code int, msg string) error
	MarkRetry(ctx context.Context, key string, definite bool, code int, msg string) error
}

// handleProcessOutbound sends the reply to one inbound message, exactly once: the idempotency
// record decides whether this attempt may send, and records the outcome. Its steps: read the
// task, begin the send, ask the responder, send, settle.
func (s *Server) handleProcessOutbound() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := s.deps.Now()
		t, out, o, ok := s.readOutbound(r)
		if !ok {
			respond(w, o)
			return
		}
		ctx, _ := logging.With(r.Context(), logging.EventID(out.InboundEventID), "correlation_id", out.CorrelationID,
			"idempotency_key", out.IdempotencyKey, "phone_number_id", out.PhoneNumberID, logging.Phone("to", out.To),
			"message_type", out.Message.Type, "tenant_id", out.TenantID)
		respond(w, s.processOutbound(ctx, t, out, start))
	})
}

// readOutbound decodes and checks an outbound task. When ok is false, o ends the attempt: a
// retry for a body that could not be read, a dead letter for a malformed one.
func (s *Server) readOutbound(r *http.Request) (t *task, out tasks.Outbound, o outcome, ok bool) {
	t, o, ok, err := s.readTask(r, tasks.ProcessOutboundPath, &out)
	if !ok {
		return t, out, o, false
	}
	out.CorrelationID = t.correlate(out.CorrelationID)
	t.inboundEventID, t.idempotencyKey, t.tenantID = out.InboundEventID, out.IdempotencyKey, out.TenantID
	if err == nil {
		err = validateOutbound(out)
	}
	if err != nil {
		// Retrying cannot fix a malformed task: keep it as a dead letter instead.
		return t, out, s.deadLetter(r.Context(), t, permanentFailure(errors.Join(errors.New("malformed outbound task"), err))), false
	}
	return t, out, outcome{}, true
}

// processOutbound answers the message: a tenant's through its conversation (converse), the
// single-tenant default's (or a tenant's without conversations) with one reply: begin the send,
// find who sends (the tenant and its token), ask for the reply, send, settle.
func (s *Server) processOutbound(ctx context.Context, t *task, out tasks.Outbound, start time.Time) outcome {
	if out.TenantID != "" && s.runner != nil {
		return s.converse(ctx, t, out, start)
	}
	rec, o, ok := s.beginSend(ctx, t, out)
	if !ok {
		return o
	}
	from, o, ok := s.sender(ctx, t, out)
	if !ok {
		return o
	}
	reply, o, ok := s.reply(ctx, t, out, from)
	if !ok {
		return o
	}
	if o, parked := s.parkReply(ctx, out, &from, reply, nil); parked { // apisend.go: tenant needs_reauth
		return o
	}
	graphID, readMarked, err := s.send(ctx, out, from.token, reply, rec)
	if err != nil {
		if o, parked := s.parkReply(ctx, out, &from, reply, err); parked { // apisend.go: token refused
			return o
		}
		return s.settleFailure(ctx, t, out, err)
	}
	return s.settleSent(ctx, out, rec, graphID, readMarked, start)
}

// beginSend asks the idempotency record whether this attempt may send. When ok is false, o ends
// the attempt: the reply is already settled, or an earlier send's outcome is still unknown.
func (s *Server) beginSend(ctx context.Context, t *task, out tasks.Outbound) (rec store.OutboundRecord, o outcome, ok bool) {
	logger := logging.FromContext(ctx)
	dec, rec, err := s.deps.Outbound.BeginSend(ctx, store.OutboundRecord{
		IdempotencyKey: out.IdempotencyKey,
		InboundEventID: out.InboundEventID,
		MessageID:      out.Message.ID,
		CorrelationID:  out.CorrelationID,
		PhoneNumberID:  out.PhoneNumberID,
		TenantID:       out.TenantID,
		ToHash:         s.deps.Hasher.Phone(out.To),
		ReceivedAt:     out.ReceivedAt,
	})
	if err != nil {
		return rec, s.fail(ctx, t, err), false
	}
	switch dec {
	case store.AlreadyDone:
		logger.InfoContext(ctx, "reply already settled: not sending again", "event", "outbound_duplicate", "state", rec.State)
		return rec, outcome{kind: settled, record: rec}, false
	case store.AwaitReconcile:
		// An earlier attempt's send may have reached Meta; its status webhook will say so.
		// Sending now could answer twice.
		if s.isLastAttempt(t) {
			return rec, s.outcomeUnknown(ctx, t, out, rec), false
		}
		logger.WarnContext(ctx, "awaiting reconciliation of an earlier send", "event", "outbound_awaiting_reconcile",
			"sending_since", rec.SendingSince)
		return rec, retryLater("awaiting_reconciliation", 0), false
	case store.OutcomeUnknown:
		return rec, s.outcomeUnknown(ctx, t, out, rec), false
	}
	return rec, outcome{}, true
}

// errOutcomeUnknown is the failure of a reply whose earlier send's outcome stayed unknown: no
// status webhook reconciled it within the window, or before the queue ran out of attempts.
var errOutcomeUnknown = errors.New("outcome_unknown: an earlier send may have reached Meta and no status webhook reconciled it")

// outcomeUnknown gives up a reply whose earlier send's outcome is still unknown, rather than
// resend blindly and perhaps answer twice: the record is marked failed (a late status webhook
// still reconciles it to sent) and the task is kept as an outcome_unknown dead letter, logged at
// ERROR, for an operator to check and replay.
func (s *Server) outcomeUnknown(ctx context.Context, t *task, out tasks.Outbound, rec store.OutboundRecord) outcome {
	if err := s.deps.Outbound.MarkFailed(ctx, out.IdempotencyKey, int(rec.LastErrorCode), errOutcomeUnknown.Error()); err != nil {
		// Without the failed record a replay could not reopen it; let Cloud Tasks retry.
		return s.fail(ctx, t, temporaryFailure(err, 0))
	}
	return s.deadLetter(ctx, t, &failure{kind: permanent, err: errOutcomeUnknown, code: int(rec.LastErrorCode), class: reasonOutcomeUnknown})
}

// reply asks for the reply: the tenant's (membership first, then its responder), or the
// default Responder's for the single-tenant default. When ok is false, o ends the attempt: the
// responder failed, or has no reply for this message.
func (s *Server) reply(ctx context.Context, t *task, out tasks.Outbound, from sender) (reply responder.Reply, o outcome, ok bool) {
	var err error
	if from.tenant != nil {
		reply, err = s.tenantReply(ctx, from.tenant, out.Message)
	} else {
		reply, err = s.deps.Responder.Respond(ctx, out.Message)
	}
	if err != nil {
		s.markRetry(ctx, out.IdempotencyKey, temporaryFailure(err, 0), true)
		return reply, s.fail(ctx, t, err), false
	}
	if reply.IsZero() {
		if err := s.deps.Outbound.MarkSkipped(ctx, out.IdempotencyKey); err != nil {
			return reply, s.fail(ctx, t, err), false
		}
		logging.FromContext(ctx).InfoContext(ctx, "no reply for this message", "event", "outbound_skipped")
		return reply, outcome{kind: skipped}, false
	}
	return reply, outcome{}, true
}

// send sends the reply and, beside it, marks the inbound message as read unless an earlier
// attempt did. Mark-as-read never holds the reply up; send waits for it (bounded by its timeout)
// so no goroutine outlives the request, and reports it with the send's outcome.
func (s *Server) send(ctx context.Context, out tasks.Outbound, token string, reply responder.Reply, rec store.OutboundRecord) (graphID string, readMarked bool, err error) {
	readDone := make(chan bool, 1)
	if rec.ReadMarked {
		readDone <- true
	} else {
		go func() { readDone <- s.markRead(context.WithoutCancel(ctx), token, out) }()
	}
	replyTo := ""
	if reply.Quote {
		replyTo = out.Message.ID
	}
	graphID, err = s.deps.Sender.Send(ctx, token, out.PhoneNumberID, out.To, reply, out.IdempotencyKey, replyTo)
	return graphID, <-readDone, err
}

// settleSent records a reply WhatsApp accepted.
func (s *Server) settleSent(ctx context.Context, out tasks.Outbound, rec store.OutboundRecord, graphID string, readMarked bool, start time.Time) outcome {
	logger := logging.FromContext(ctx)
	if _, err := s.deps.Outbound.MarkSent(ctx, out.IdempotencyKey, graphID, readMarked); err != nil {
		// Meta has the message; the status webhook that echoes the key will settle the
		// record. Answering 200 stops a retry from sending it again.
		logger.ErrorContext(ctx, "reply sent but record not updated: the status webhook will reconcile it",
			"event", "outbound_record_failed", "error", err)
	}
	logger.InfoContext(ctx, "reply sent", "event", "outbound_sent", logging.MessageID(graphID),
		"attempt", rec.Attempts, "duration_ms", s.deps.Now().Sub(start).Milliseconds())
	return outcome{kind: sent, messageID: graphID}
}

// settleFailure records a failed send by its classification: refused for good, or to retry.
func (s *Server) settleFailure(ctx context.Context, t *task, out tasks.Outbound, err error) outcome {
	logger := logging.FromContext(ctx)
	f := classifySend(err)
	if f.kind == refused || f.kind == refusedAuth {
		if merr := s.deps.Outbound.MarkFailed(ctx, out.IdempotencyKey, f.code, err.Error()); merr != nil {
			// Without the failed record a retry would try again; let Cloud Tasks retry.
			return s.fail(ctx, t, temporaryFailure(merr, f.code))
		}
		if f.kind == refusedAuth {
			// A bad or expired token fails every reply, not this one: keep each as a dead
			// letter to replay once an operator has fixed the token.
			s.keepDeadLetter(ctx, t, f)
		}
		logger.ErrorContext(ctx, "reply refused by WhatsApp: not retrying", "event", "outbound_failed",
			"meta_error_code", f.code, "class", f.class, "error", err)
		return outcome{kind: refusedByMeta, code: f.code}
	}
	s.markRetry(ctx, out.IdempotencyKey, f, f.definite)
	if s.isLastAttempt(t) {
		if merr := s.deps.Outbound.MarkFailed(ctx, out.IdempotencyKey, f.code, "retries exhausted: "+err.Error()); merr != nil {
			logger.ErrorContext(ctx, "record not marked failed", "event", "outbound_record_failed", "error", merr)
		}
	}
	logger.WarnContext(ctx, "reply not sent: will retry", "event", "outbound_retry", "meta_error_code", f.code,
		"class", f.class, "outcome_known", f.definite, "error", err)
	return s.fail(ctx, t, f)
}

// markRetry records a failed attempt on the record, best effort: definite says nothing was sent.
func (s *Server) markRetry(ctx context.Context, key string, f *failure, definite bool) {
	if err := s.deps.Outbound.MarkRetry(ctx, key, definite, f.code, f.Error()); err != nil {
		logging.FromContext(ctx).WarnContext(ctx, "record not updated after a failed send", "event", "outbound_record_failed", "error", err)
	}
}

// markRead marks the inbound message as read, best effort: a failure is logged and retried with
// the next attempt, if any.
func (s *Server) markRead(ctx context.Context, token string, out tasks.Outbound) bool {
	ctx, cancel := context.WithTimeout(ctx, s.deps.MarkReadTimeout)
	defer cancel()
	if err := s.deps.Sender.MarkRead(ctx, token, out.PhoneNumberID, out.Message.ID); err != nil {
		logging.FromContext(ctx).WarnContext(ctx, "mark as read failed (best effort)", "event", "mark_read_failed", "error", err)
		return false
	}
	return true
}

func validateOutbound(o tasks.Outbound) error {
	var errs []error
	if !tasks.IsIdempotencyKey(o.IdempotencyKey) {
		errs = append(errs, errors.New("idempotency_key is missing or malformed"))
	}
	if o.PhoneNumberID == "" {
		errs = append(errs, errors.New("phone_number_id is empty"))
	}
	if o.To == "" {
		errs = append(errs, errors.New("to is empty"))
	}
	if o.Message.ID == "" {
		errs = append(errs, errors.New("message.id is empty"))
	}
	return errors.Join(errs...)
}
