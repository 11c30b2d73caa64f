package worker

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/wapipe/wapipe/internal/actionrun"
	"github.com/wapipe/wapipe/internal/conversation"
	"github.com/wapipe/wapipe/internal/delivery"
	"github.com/wapipe/wapipe/internal/fanout"
	"github.com/wapipe/wapipe/internal/httpserver"
	"github.com/wapipe/wapipe/internal/store"
)

// failureKind says what to do about a failed step. It is the worker's one classification of
// errors: a store error, a send to retry (package delivery) and a malformed task all end up as
// one of these.
type failureKind int

const (
	// temporary: a retry may succeed. Cloud Tasks retries (after the failure's Retry-After);
	// on the task's last attempt the task is kept as a dead letter.
	temporary failureKind = iota
	// permanent: no retry can fix the task (it is malformed, or its payload cannot be parsed): it
	// is kept as a dead letter at once.
	permanent
)

// failure is a failed step, classified.
type failure struct {
	kind failureKind
	err  error
	// code is Meta's error.code, 0 when none.
	code int
	// retryAfter is when Meta asked to be called again, 0 when it did not say.
	retryAfter time.Duration
	// class names the failure in logs.
	class string
}

func (f *failure) Error() string { return f.err.Error() }
func (f *failure) Unwrap() error { return f.err }

// permanentFailure marks err as a failure no retry can fix.
func permanentFailure(err error) *failure {
	return &failure{kind: permanent, err: err, class: "permanent"}
}

// asFailure returns the failure in err's chain, or the reply that held up the task
// (delivery.ReplyError: a turn's reply, an action's result) as one; an error nobody classified
// (a store call, an enqueue) is temporary.
func asFailure(err error) *failure {
	var f *failure
	if errors.As(err, &f) {
		return f
	}
	if re := (*delivery.ReplyError)(nil); errors.As(err, &re) {
		kind := temporary
		if re.Permanent {
			kind = permanent
		}
		return &failure{kind: kind, err: re, code: re.Code, retryAfter: re.RetryAfter, class: re.Class}
	}
	return &failure{kind: temporary, err: err, class: "temporary"}
}

// outcomeKind is how a task attempt ends.
type outcomeKind int

const (
	// fannedOut: the inbound task's outbound tasks exist and its statuses are applied.
	fannedOut outcomeKind = iota + 1
	// sent: the reply reached WhatsApp.
	sent
	// skipped: the responder had no reply for the message.
	skipped
	// settled: an earlier attempt already sent, failed or skipped the reply.
	settled
	// refusedByMeta: WhatsApp refused the reply for good; the record says failed.
	refusedByMeta
	// deadLettered: the task is kept in dead_letters and ends.
	deadLettered
	// retry: Cloud Tasks must run the task again.
	retry
	// unauthorized: the request did not prove it came from Cloud Tasks.
	unauthorized
	// crashed: the handler panicked before its last attempt: Cloud Tasks retries.
	crashed
	// conversed: the message is in its conversation, and its turn has run or will run in the
	// task that holds the conversation.
	conversed
	// actionDone: the action has its answer and the user was told (or cannot be).
	actionDone
	// parked: the send waits for its tenant's new access token.
	parked
	// held: the send's outcome is unknown and its record holds the wait (the sweep ends it).
	held
)

// outcome is how a task attempt ends, with what its answer says. Each handler step returns one,
// and response alone turns it into the status code Cloud Tasks acts on.
type outcome struct {
	kind outcomeKind
	// fanOut is fannedOut's counts.
	fanOut fanout.Counts
	// messageID is sent's Graph message id.
	messageID string
	// record is settled's outbound record.
	record store.OutboundRecord
	// code is refusedByMeta's Meta error code.
	code int
	// deadLetterID is deadLettered's document id.
	deadLetterID string
	// conversation is conversed's result.
	conversation conversation.Result
	// action is actionDone's record.
	action store.ActionRecord
	// reason is retry's "error" in the body, conversed's status; retryAfter its Retry-After,
	// 0 for none.
	reason     string
	retryAfter time.Duration
}

func retryLater(reason string, after time.Duration) outcome {
	return outcome{kind: retry, reason: reason, retryAfter: after}
}

// response maps an outcome to the answer: 200 ends the task, 503 makes Cloud Tasks retry it.
func response(o outcome) (int, any) {
	switch o.kind {
	case fannedOut:
		c := o.fanOut
		c.Status = "ok"
		return http.StatusOK, c
	case sent:
		return http.StatusOK, map[string]any{"status": store.OutboundSent, "message_id": o.messageID}
	case skipped:
		return http.StatusOK, map[string]any{"status": store.OutboundSkipped}
	case settled:
		if o.record.State == store.OutboundFailed {
			return http.StatusOK, map[string]any{"status": "failed", "error": "whatsapp_permanent_error", "code": o.record.LastErrorCode, "duplicate": true}
		}
		return http.StatusOK, map[string]any{"status": o.record.State, "message_id": o.record.GraphMessageID, "duplicate": true}
	case refusedByMeta:
		return http.StatusOK, map[string]any{"status": "failed", "error": "whatsapp_permanent_error", "code": o.code}
	case deadLettered:
		return http.StatusOK, map[string]any{"status": "dead_lettered", "dead_letter_id": o.deadLetterID}
	case conversed:
		return http.StatusOK, map[string]any{"status": o.reason, "conversation_id": o.conversation.ConversationID, "turns": o.conversation.Turns}
	case parked:
		return http.StatusOK, map[string]any{"status": store.OutboundParked}
	case held:
		return http.StatusOK, map[string]any{"status": "held", "reason": o.reason}
	case actionDone:
		return http.StatusOK, map[string]any{"status": o.action.State, "action_id": o.action.ActionID, "http_status": o.action.HTTPStatus}
	case retry:
		return http.StatusServiceUnavailable, map[string]any{"status": "retry", "error": o.reason}
	case unauthorized:
		return http.StatusUnauthorized, map[string]string{"status": "error", "error": "unauthorized"}
	case crashed:
		return http.StatusInternalServerError, map[string]any{"status": "retry", "error": "internal"}
	default:
		// An outcome without a kind is a defect; 503 keeps the task rather than losing it.
		return http.StatusServiceUnavailable, map[string]any{"status": "retry", "error": "internal"}
	}
}

// respond writes o's answer. A retry's Retry-After is honoured by Cloud Tasks.
func respond(w http.ResponseWriter, o outcome) {
	if o.kind == retry && o.retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int((o.retryAfter+time.Second-1)/time.Second)))
	}
	code, body := response(o)
	httpserver.WriteJSON(w, code, body)
}

// deliveryOutcome is the outcome of a send's delivery.Result: the one place a delivery becomes
// an answer to Cloud Tasks (actionOutcome below is an action's). The result says whether its policy keeps the task as a dead letter.
func (s *Server) deliveryOutcome(ctx context.Context, t *task, r delivery.Result) outcome {
	switch r.Status {
	case delivery.Sent:
		return outcome{kind: sent, messageID: r.MessageID}
	case delivery.Settled:
		return outcome{kind: settled, record: r.Record}
	case delivery.Skipped:
		return outcome{kind: skipped}
	case delivery.Parked:
		return outcome{kind: parked}
	case delivery.Refused:
		if r.DeadLetter {
			// A bad or expired token fails every reply, not this one: keep each as a dead
			// letter to replay once an operator has fixed the token.
			s.keepDeadLetter(ctx, t, &failure{kind: permanent, err: r.Err, code: r.Code, class: r.Class})
		}
		return outcome{kind: refusedByMeta, code: r.Code}
	case delivery.Unsendable, delivery.OutcomeUnknown, delivery.Invalid:
		if r.DeadLetter || r.Status == delivery.Invalid {
			return s.deadLetter(ctx, t, &failure{kind: permanent, err: r.Err, code: r.Code, class: r.Class})
		}
		// The record is its own dead letter (delivery.Policy.RecordDeadLetter).
		return outcome{kind: deadLettered, deadLetterID: r.DeadLetterID}
	case delivery.Held:
		return outcome{kind: held, reason: r.Reason}
	case delivery.Retry:
		if r.Err == nil {
			return retryLater(r.Reason, 0)
		}
		return s.fail(ctx, t, &failure{kind: temporary, err: r.Err, code: r.Code, retryAfter: r.RetryAfter, class: r.Class})
	}
	return outcome{}
}

// actionOutcome is the outcome of an action's run: its dead letters kept, then its answer.
func (s *Server) actionOutcome(ctx context.Context, t *task, res actionrun.Result) outcome {
	for _, k := range res.Kept {
		kind := temporary
		if k.Permanent {
			kind = permanent
		}
		s.keepDeadLetter(ctx, t, &failure{kind: kind, err: k.Err, class: k.Class})
	}
	switch res.Status {
	case actionrun.Done:
		return outcome{kind: actionDone, action: res.Record}
	case actionrun.Busy:
		return retryLater("action_in_progress", 0)
	case actionrun.Gone:
		return s.deadLetter(ctx, t, permanentFailure(res.Err))
	}
	return s.fail(ctx, t, res.Err)
}
