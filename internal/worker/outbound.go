package worker

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"sync"

	"github.com/wapipe/wapipe/internal/graph"
	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/tasks"
)

// handleProcessOutbound sends the reply to one inbound message, exactly once: the idempotency
// record decides whether this attempt may send, and records the outcome.
func (s *Server) handleProcessOutbound() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		start := s.deps.Now()
		var out tasks.Outbound
		raw, ok, err := s.readTask(w, r, &out)
		if !ok {
			return
		}
		out.CorrelationID = correlationID(ctx, out.CorrelationID)
		if err == nil {
			err = validateOutbound(out)
		}
		if err != nil {
			s.deadLetterNow(ctx, w, raw, tasks.ProcessOutboundPath, errors.Join(errors.New("malformed outbound task"), err),
				0, out.InboundEventID, out.IdempotencyKey, out.CorrelationID)
			return
		}
		ctx, logger := logging.With(ctx, "inbound_event_id", out.InboundEventID, "correlation_id", out.CorrelationID,
			"idempotency_key", out.IdempotencyKey, "phone_number_id", out.PhoneNumberID, "to", logging.HashPhone(out.To),
			"message_type", out.Message.Type)
		fail := func(err error, code int, f sendFailure) {
			s.failOrRetry(ctx, w, raw, tasks.ProcessOutboundPath, err, code, f.RetryAfter, out.InboundEventID, out.IdempotencyKey, out.CorrelationID)
		}

		dec, rec, err := s.deps.Records.BeginSend(ctx, store.OutboundRecord{
			IdempotencyKey: out.IdempotencyKey,
			InboundEventID: out.InboundEventID,
			MessageID:      out.Message.ID,
			CorrelationID:  out.CorrelationID,
			PhoneNumberID:  out.PhoneNumberID,
			ToHash:         logging.HashPhone(out.To),
			ReceivedAt:     out.ReceivedAt,
		})
		if err != nil {
			fail(err, 0, sendFailure{})
			return
		}
		switch dec {
		case store.AlreadyDone:
			logger.InfoContext(ctx, "reply already settled: not sending again", "event", "outbound_duplicate", "state", rec.State)
			writeJSON(w, http.StatusOK, settledBody(rec))
			return
		case store.AwaitReconcile:
			// An earlier attempt's send may have reached Meta; its status webhook will say so.
			// Sending now could answer twice.
			err := errors.New("an earlier send's outcome is unknown: waiting for its status webhook")
			if s.isLastAttempt(ctx, tasks.ProcessOutboundPath) {
				fail(err, int(rec.LastErrorCode), sendFailure{})
				return
			}
			logger.WarnContext(ctx, "awaiting reconciliation of an earlier send", "event", "outbound_awaiting_reconcile",
				"sending_since", rec.SendingSince)
			retryLater(w, 0, map[string]any{"status": "retry", "error": "awaiting_reconciliation"})
			return
		}

		reply, err := s.deps.Responder.Respond(ctx, out.Message)
		if err != nil {
			s.markRetry(ctx, logger, out.IdempotencyKey, true, 0, err)
			fail(err, 0, sendFailure{})
			return
		}
		if reply.IsZero() {
			if err := s.deps.Records.MarkSkipped(ctx, out.IdempotencyKey); err != nil {
				fail(err, 0, sendFailure{})
				return
			}
			logger.InfoContext(ctx, "no reply for this message", "event", "outbound_skipped")
			writeJSON(w, http.StatusOK, map[string]any{"status": store.OutboundSkipped})
			return
		}

		// Mark-as-read runs beside the reply and never holds it up. Its outcome is recorded with
		// the send's, in the same write; the handler waits for it (bounded by its timeout) so no
		// goroutine outlives the request.
		readDone := make(chan bool, 1)
		if rec.ReadMarked {
			readDone <- true
		} else {
			go func() { readDone <- s.markRead(context.WithoutCancel(ctx), logger, out) }()
		}
		readMarked := false
		waitRead := sync.OnceFunc(func() { readMarked = <-readDone })
		defer waitRead()

		replyTo := ""
		if reply.Quote {
			replyTo = out.Message.ID
		}
		graphID, err := s.deps.Sender.Send(ctx, out.PhoneNumberID, out.To, reply, out.IdempotencyKey, replyTo)
		if err == nil {
			waitRead()
			if _, err := s.deps.Records.MarkSent(ctx, out.IdempotencyKey, graphID, readMarked); err != nil {
				// Meta has the message; the status webhook that echoes the key will settle
				// the record. Answering 200 stops a retry from sending it again.
				logger.ErrorContext(ctx, "reply sent but record not updated: the status webhook will reconcile it",
					"event", "outbound_record_failed", "error", err)
			}
			logger.InfoContext(ctx, "reply sent", "event", "outbound_sent", "graph_message_id", graphID,
				"attempt", rec.Attempts, "duration_ms", s.deps.Now().Sub(start).Milliseconds())
			writeJSON(w, http.StatusOK, map[string]any{"status": store.OutboundSent, "message_id": graphID})
			return
		}

		f := classify(err)
		if !f.Retryable {
			if merr := s.deps.Records.MarkFailed(ctx, out.IdempotencyKey, f.Code, err.Error()); merr != nil {
				// Without the failed record a retry would try again; let Cloud Tasks retry.
				fail(merr, f.Code, sendFailure{})
				return
			}
			if graph.Classify(err) == graph.Auth {
				// A bad or expired token fails every reply, not this one: keep each as a dead
				// letter to replay once an operator has fixed the token.
				s.keepDeadLetter(ctx, logger, raw, err, f.Code, out)
			}
			logger.ErrorContext(ctx, "reply refused by WhatsApp: not retrying", "event", "outbound_failed",
				"meta_error_code", f.Code, "class", f.Class, "error", err)
			writeJSON(w, http.StatusOK, map[string]any{"status": "failed", "error": "whatsapp_permanent_error", "code": f.Code})
			return
		}
		s.markRetry(ctx, logger, out.IdempotencyKey, f.Definite, f.Code, err)
		if s.isLastAttempt(ctx, tasks.ProcessOutboundPath) {
			if merr := s.deps.Records.MarkFailed(ctx, out.IdempotencyKey, f.Code, "retries exhausted: "+err.Error()); merr != nil {
				logger.ErrorContext(ctx, "record not marked failed", "event", "outbound_record_failed", "error", merr)
			}
		}
		logger.WarnContext(ctx, "reply not sent: will retry", "event", "outbound_retry", "meta_error_code", f.Code,
			"class", f.Class, "outcome_known", f.Definite, "error", err)
		fail(err, f.Code, f)
	})
}

func (s *Server) markRetry(ctx context.Context, logger *slog.Logger, key string, definite bool, code int, cause error) {
	if err := s.deps.Records.MarkRetry(ctx, key, definite, code, cause.Error()); err != nil {
		logger.WarnContext(ctx, "record not updated after a failed send", "event", "outbound_record_failed", "error", err)
	}
}

// markRead marks the inbound message as read, best effort: a failure is logged and retried with
// the next attempt, if any.
func (s *Server) markRead(ctx context.Context, logger *slog.Logger, out tasks.Outbound) bool {
	ctx, cancel := context.WithTimeout(ctx, s.deps.MarkReadTimeout)
	defer cancel()
	if err := s.deps.Sender.MarkRead(ctx, out.PhoneNumberID, out.Message.ID); err != nil {
		logger.WarnContext(ctx, "mark as read failed (best effort)", "event", "mark_read_failed", "error", err)
		return false
	}
	return true
}

// keepDeadLetter writes the task to dead_letters without changing the answer.
func (s *Server) keepDeadLetter(ctx context.Context, logger *slog.Logger, raw []byte, cause error, code int, out tasks.Outbound) {
	id, err := s.putDeadLetter(ctx, raw, tasks.ProcessOutboundPath, cause, code, out.InboundEventID, out.IdempotencyKey, out.CorrelationID)
	if err != nil {
		logger.ErrorContext(ctx, "dead letter not written", "event", "dead_letter_failed", "error", err)
		return
	}
	logger.ErrorContext(ctx, "reply kept as a dead letter: fix the access token, then replay", "event", "dead_lettered",
		"dead_letter_id", id, "meta_error_code", code)
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

// settledBody is the answer for a record that is already sent, failed or skipped.
func settledBody(rec store.OutboundRecord) map[string]any {
	if rec.State == store.OutboundFailed {
		return map[string]any{"status": "failed", "error": "whatsapp_permanent_error", "code": rec.LastErrorCode, "duplicate": true}
	}
	return map[string]any{"status": rec.State, "message_id": rec.GraphMessageID, "duplicate": true}
}
