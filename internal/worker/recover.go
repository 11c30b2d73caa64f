package worker

import (
	"fmt"
	"net/http"
	"runtime/debug"

	"github.com/wapipe/wapipe/internal/logging"
)

// recoverPanic turns a panic in a handler into an answer Cloud Tasks acts on: a retry (500), or on
// the task's last attempt a dead letter, so a task that crashes the worker every time still ends
// where an operator can see and replay it. The panic is logged once, at ERROR, with the task's
// correlation id (the body's once a handler has read it).
func (s *Server) recoverPanic(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			v := recover()
			if v == nil {
				return
			}
			if v == http.ErrAbortHandler {
				// The server's own way to abort a response: not a crash.
				panic(v)
			}
			ctx := r.Context()
			t := taskFrom(ctx, r.URL.Path)
			logging.FromContext(ctx).ErrorContext(ctx, "handler panicked", "event", "panic_recovered",
				"correlation_id", t.correlationID, "path", t.path, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			o := outcome{kind: crashed}
			// Only an authenticated task is kept: anyone can make an unauthenticated request.
			if _, isTask := s.taskRoute(t.path); t.authenticated && isTask && s.isLastAttempt(t) {
				o = s.deadLetter(ctx, t, &failure{kind: temporary, err: fmt.Errorf("handler panicked: %v", v), class: "panic"})
			}
			respond(w, o)
		}()
		next.ServeHTTP(w, r)
	})
}
