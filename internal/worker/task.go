package worker

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/tasks"
)

// task is what the worker knows about the task it runs: what Cloud Tasks' headers say, the route,
// and, once the body is decoded, the ids in it. Logs, retries and dead letters are decided and
// written from it.
type task struct {
	queue      string
	name       string
	retryCount int
	path       string
	// correlationID is the body's, else the header's (see correlate).
	correlationID  string
	inboundEventID string
	idempotencyKey string
	// tenantID is an outbound task's tenant; "" for the single-tenant default.
	tenantID string
	// raw is the body as received (cut at the size cap), kept whole in a dead letter.
	raw []byte
	// authenticated: the request proved it came from Cloud Tasks.
	authenticated bool
}

type taskKey struct{}

// taskFrom returns the task withTask put in the context, for a task run on path. It is the one
// task of the request: what a handler learns (the body's ids) is there for recoverPanic too.
func taskFrom(ctx context.Context, path string) *task {
	t, ok := ctx.Value(taskKey{}).(*task)
	if !ok {
		t = &task{}
	}
	t.path = path
	return t
}

// correlate sets the task's correlation id: the body's, else the header's.
func (t *task) correlate(fromBody string) string {
	if fromBody != "" {
		t.correlationID = fromBody
	}
	return t.correlationID
}

// taskRoute is one of the routes Cloud Tasks calls, with its handler: Routes serves them, and
// recoverPanic dead-letters a panic on the last attempt of any of them. What else a task route
// is (its queues, its body) is its row of tasks.Routes.
type taskRoute struct {
	path    string
	handler http.Handler
}

// taskRoutes is the worker's table of task routes.
func (s *Server) taskRoutes() []taskRoute {
	return []taskRoute{
		{tasks.ProcessInboundPath, taskHandler(s, tasks.ProcessInboundPath, inboundIDs, validateInbound, s.processInbound)},
		{tasks.ProcessOutboundPath, taskHandler(s, tasks.ProcessOutboundPath, outboundIDs, tasks.Outbound.Validate, s.runOutbound)},
		{tasks.ProcessActionPath, taskHandler(s, tasks.ProcessActionPath, s.actionIDs, validateAction, s.processAction)},
		{tasks.ProcessSendPath, taskHandler(s, tasks.ProcessSendPath, sendIDs, tasks.Send.Validate, s.processSend)},
	}
}

// taskRoute returns the task route of path.
func (s *Server) taskRoute(path string) (taskRoute, bool) {
	for _, r := range s.routes {
		if r.path == path {
			return r, true
		}
	}
	return taskRoute{}, false
}

// queueID is the queue the task came from, falling back, when Cloud Tasks' header is absent, to
// the queue its route's row says feeds it for the task's tenant ("" when that is unknown: a
// body read for no tenant where one decides).
func (s *Server) queueID(t *task) string {
	if t.queue != "" {
		return t.queue
	}
	r, ok := tasks.TaskRoute(t.path)
	if !ok {
		return ""
	}
	q, _ := r.QueueFor(t.tenantID)
	return q
}

// isLastAttempt reports whether Cloud Tasks will not retry the task after this attempt.
func (s *Server) isLastAttempt(t *task) bool {
	q, ok := s.deps.Queues.Queue(tasks.QueueID(s.queueID(t)))
	return ok && q.IsLastAttempt(t.retryCount)
}

// taskHandler is a task route's handler: it reads the body as a T (readAs) and, when it is
// well formed, runs it; the outcome is answered in one place (respond). start is when the
// attempt began, for the durations logged.
func taskHandler[T any](s *Server, path string, ids func(t *task, v *T), validate func(T) error,
	run func(ctx context.Context, t *task, v T, start time.Time) outcome) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := s.deps.Now()
		t, v, o, ok := readAs(s, r, path, ids, validate)
		if ok {
			o = run(r.Context(), t, v, start)
		}
		respond(w, o)
	})
}

// readAs reads the body of a task of path into a T, lets ids record what the task is (its ids,
// for logs, retries and dead letters; the body's correlation id), and checks it with validate.
// When ok is false, o ends the attempt: a retry for a body that could not be read, a dead
// letter for a malformed one (no retry can fix it).
func readAs[T any](s *Server, r *http.Request, path string, ids func(t *task, v *T), validate func(T) error) (t *task, v T, o outcome, ok bool) {
	t, o, ok, err := s.readTask(r, path, &v)
	if !ok {
		return t, v, o, false
	}
	ids(t, &v)
	if err == nil {
		err = validate(v)
	}
	if err != nil {
		what := strings.TrimPrefix(path, "/internal/process_")
		return t, v, s.deadLetter(r.Context(), t, permanentFailure(fmt.Errorf("malformed %s task: %w", what, err))), false
	}
	return t, v, outcome{}, true
}

// deadLetter is the task as a dead letter, failed by f.
func (t *task) deadLetter(f *failure) store.DeadLetter {
	return store.DeadLetter{
		Queue:          t.queue,
		TaskName:       t.name,
		Path:           t.path,
		Body:           string(t.raw),
		LastError:      f.Error(),
		LastErrorCode:  int64(f.code),
		Reason:         f.class,
		RetryCount:     int64(t.retryCount),
		CorrelationID:  t.correlationID,
		InboundEventID: t.inboundEventID,
		IdempotencyKey: t.idempotencyKey,
	}
}
