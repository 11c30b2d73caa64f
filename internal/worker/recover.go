package worker

import (
	"context"
	"fmt"
	"net/http"
	"strconv"

	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/tasks"
)

// withTask is the worker's Request hook of the shared middleware: it reads Cloud Tasks' headers
// into the context and a logger that names the task.
func (s *Server) withTask(r *http.Request) *http.Request {
	t := &task{
		queue:         r.Header.Get(tasks.HeaderQueueName),
		name:          r.Header.Get(tasks.HeaderTaskName),
		correlationID: r.Header.Get(tasks.HeaderCorrelationID),
		path:          r.URL.Path,
	}
	t.retryCount, _ = strconv.Atoi(r.Header.Get(tasks.HeaderTaskRetryCount))
	// correlation_id is attached by each handler, from the body (see task.correlate).
	logger := s.deps.Logger.With("task_name", t.name, "queue", t.queue, "retry_count", t.retryCount)
	ctx := context.WithValue(r.Context(), taskKey{}, t)
	return r.WithContext(logging.WithLogger(ctx, logger))
}

// panicAttrs names the task's correlation id (the body's once a handler has read it) on the
// middleware's panic line: the request's logger was made before the body was read.
func panicAttrs(r *http.Request) []any {
	return []any{"correlation_id", taskFrom(r.Context(), r.URL.Path).correlationID}
}

// answerPanic is the worker's OnPanic hook: a panic becomes an answer Cloud Tasks acts on, a
// retry (500), or on the task's last attempt a dead letter, so a task that crashes the worker
// every time still ends where an operator can see and replay it. The middleware has logged it.
func (s *Server) answerPanic(w http.ResponseWriter, r *http.Request, v any) {
	ctx := r.Context()
	t := taskFrom(ctx, r.URL.Path)
	o := outcome{kind: crashed}
	// Only an authenticated task is kept: anyone can make an unauthenticated request.
	if _, isTask := s.taskRoute(t.path); t.authenticated && isTask && s.isLastAttempt(t) {
		o = s.deadLetter(ctx, t, &failure{kind: temporary, err: fmt.Errorf("handler panicked: %v", v), class: "panic"})
	}
	respond(w, o)
}
