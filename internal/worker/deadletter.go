package worker

import (
	"context"

	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/internal/store"
)

// DeadLetters keeps tasks no retry will fix; the store's dead letters implement it.
type DeadLetters interface {
	PutDeadLetter(ctx context.Context, d store.DeadLetter) (string, error)
}

// fail is the outcome of a failed attempt: a retry (after the failure's Retry-After, when set),
// or, for a permanent failure or on the task's last attempt, a dead letter.
func (s *Server) fail(ctx context.Context, t *task, err error) outcome {
	f := asFailure(err)
	if f.kind == permanent || s.isLastAttempt(t) {
		return s.deadLetter(ctx, t, f)
	}
	logging.FromContext(ctx).WarnContext(ctx, "task attempt failed: Cloud Tasks will retry", "event", "task_retry",
		"path", t.path, "error", f, "meta_error_code", f.code, "retry_after_s", f.retryAfter.Seconds())
	return retryLater("temporary_failure", f.retryAfter)
}

// deadLetter writes the task to dead_letters, which ends it. If the dead letter cannot be written,
// the outcome is a retry instead: the task stays in the queue rather than being lost.
func (s *Server) deadLetter(ctx context.Context, t *task, f *failure) outcome {
	logger := logging.FromContext(ctx)
	id, err := s.deps.DeadLetters.PutDeadLetter(ctx, t.deadLetter(f))
	if err != nil {
		logger.ErrorContext(ctx, "dead letter not written: leaving the task to Cloud Tasks", "event", "dead_letter_failed",
			"error", err, "cause", f)
		return retryLater("dead_letter_failed", 0)
	}
	logger.ErrorContext(ctx, "task dead-lettered", "event", "dead_lettered", "path", t.path, "dead_letter_id", id,
		"error", f, "meta_error_code", f.code, "permanent", f.kind == permanent, "reason", f.class)
	return outcome{kind: deadLettered, deadLetterID: id}
}

// keepDeadLetter writes the task to dead_letters without changing its outcome: a reply refused
// for the access token, to replay once the token is fixed.
func (s *Server) keepDeadLetter(ctx context.Context, t *task, f *failure) {
	logger := logging.FromContext(ctx)
	id, err := s.deps.DeadLetters.PutDeadLetter(ctx, t.deadLetter(f))
	if err != nil {
		logger.ErrorContext(ctx, "dead letter not written", "event", "dead_letter_failed", "error", err)
		return
	}
	logger.ErrorContext(ctx, "reply kept as a dead letter: fix the access token, then replay", "event", "dead_lettered",
		"dead_letter_id", id, "meta_error_code", f.code)
}
