package worker

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/tasks"
)

// permanentError marks a failure that no retry can fix.
type permanentError struct{ err error }

func (e permanentError) Error() string { return e.err.Error() }
func (e permanentError) Unwrap() error { return e.err }

func permanent(err error) error { return permanentError{err} }

func isPermanent(err error) bool {
	var p permanentError
	return errors.As(err, &p)
}

// queueFor returns the definition of the queue the current task came from, falling back to the
// queue the route is fed by when Cloud Tasks' header is absent.
func (s *Server) queueFor(ctx context.Context, path string) (tasks.Queue, bool) {
	id := taskFrom(ctx).Queue
	if id == "" {
		id = tasks.InboundQueueID
		if path == tasks.ProcessOutboundPath {
			id = tasks.QueueID(s.cfg.OutboundQueue)
		}
	}
	return s.deps.Queues.Queue(tasks.QueueID(id))
}

// isLastAttempt reports whether Cloud Tasks will not retry the current task after this attempt.
func (s *Server) isLastAttempt(ctx context.Context, path string) bool {
	q, ok := s.queueFor(ctx, path)
	return ok && q.IsLastAttempt(taskFrom(ctx).RetryCount)
}

// failOrRetry answers a failed attempt: 503 (Cloud Tasks retries, after retryAfter when set), or,
// for a permanent failure or on the task's last attempt, a dead letter and 200.
func (s *Server) failOrRetry(ctx context.Context, w http.ResponseWriter, raw []byte, path string, cause error,
	code int, retryAfter time.Duration, eventID, key, correlationID string) {
	if isPermanent(cause) || s.isLastAttempt(ctx, path) {
		s.deadLetterNow(ctx, w, raw, path, cause, code, eventID, key, correlationID)
		return
	}
	logging.FromContext(ctx).WarnContext(ctx, "task attempt failed: Cloud Tasks will retry", "event", "task_retry",
		"path", path, "error", cause, "meta_error_code", code, "retry_after_s", retryAfter.Seconds())
	retryLater(w, retryAfter, map[string]any{"status": "retry", "error": "temporary_failure"})
}

// deadLetterNow writes the task to dead_letters and answers 200 so Cloud Tasks stops. If the dead
// letter cannot be written, it answers 503 instead: the task stays in the queue rather than being
// lost.
func (s *Server) deadLetterNow(ctx context.Context, w http.ResponseWriter, raw []byte, path string, cause error,
	code int, eventID, key, correlationID string) {
	logger := logging.FromContext(ctx)
	id, err := s.putDeadLetter(ctx, raw, path, cause, code, eventID, key, correlationID)
	if err != nil {
		logger.ErrorContext(ctx, "dead letter not written: leaving the task to Cloud Tasks", "event", "dead_letter_failed",
			"error", err, "cause", cause)
		retryLater(w, 0, map[string]any{"status": "retry", "error": "dead_letter_failed"})
		return
	}
	logger.ErrorContext(ctx, "task dead-lettered", "event", "dead_lettered", "path", path, "dead_letter_id", id,
		"error", cause, "meta_error_code", code, "permanent", isPermanent(cause))
	writeJSON(w, http.StatusOK, map[string]any{"status": "dead_lettered", "dead_letter_id": id})
}

// putDeadLetter writes the current task to dead_letters with its body and last error.
func (s *Server) putDeadLetter(ctx context.Context, raw []byte, path string, cause error, code int,
	eventID, key, correlationID string) (string, error) {
	ti := taskFrom(ctx)
	return s.deps.Records.PutDeadLetter(ctx, store.DeadLetter{
		Queue:          ti.Queue,
		TaskName:       ti.Name,
		Path:           path,
		Body:           string(raw),
		LastError:      cause.Error(),
		LastErrorCode:  int64(code),
		RetryCount:     int64(ti.RetryCount),
		CorrelationID:  correlationID,
		InboundEventID: eventID,
		IdempotencyKey: key,
	})
}
