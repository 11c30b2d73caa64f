package httpserver

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"runtime/debug"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"

	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/internal/randid"
)

// CorrelationHeader carries a request's correlation id in and out (CONTRACT.md).
const CorrelationHeader = "X-Correlation-ID"

// correlationPattern is what a caller's correlation id may be; anything else is replaced, so a
// log line never carries a caller's arbitrary text under that name.
var correlationPattern = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,128}$`)

type correlationKey struct{}

// CorrelationID returns the request's correlation id that Middleware put in ctx, or "".
func CorrelationID(ctx context.Context) string {
	id, _ := ctx.Value(correlationKey{}).(string)
	return id
}

// NewCorrelationID returns a fresh random correlation id (32 hex digits).
func NewCorrelationID() string {
	return randid.Hex(16)
}

// Middleware is the one middleware set of wapipe's services, around each service's routes: a
// trace span per request (otelhttp), a correlation id (the caller's X-Correlation-ID when well
// formed, else a new one; echoed in the answer), the service's logger in the context carrying
// it, and a recovery that logs a panicking handler once at CRITICAL and answers instead of
// dropping the connection.
type Middleware struct {
	// Service names the spans and the panic's log line ("api", "webhook"…).
	Service string
	// Logger is the service's logger; each request's carries correlation_id.
	Logger *slog.Logger
	// Request, when set, adds what the service reads from every request (the worker: the Cloud
	// Tasks headers) to its context, after the correlation id and the logger, so that both the
	// handler and OnPanic see it.
	Request func(r *http.Request) *http.Request
	// OnPanic answers a request whose handler panicked with v, after the panic is logged; nil answers
	// 500 "internal error". The worker's answer depends on the task (a retry, or a dead letter
	// on its last attempt).
	OnPanic func(w http.ResponseWriter, r *http.Request, v any)
	// PanicAttrs, when set, adds attributes to the panic's log line that the service learned
	// while handling the request (the worker: the task body's correlation id), which the
	// request's logger cannot carry because the handler learned them after Request ran.
	PanicAttrs func(r *http.Request) []any
}

// Wrap returns h inside the middleware set.
func (m Middleware) Wrap(h http.Handler) http.Handler {
	inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get(CorrelationHeader)
		if !correlationPattern.MatchString(id) {
			id = NewCorrelationID()
		}
		logger := m.Logger.With("correlation_id", id)
		ctx := context.WithValue(logging.WithLogger(r.Context(), logger), correlationKey{}, id)
		r = r.WithContext(ctx)
		if m.Request != nil {
			r = m.Request(r)
		}
		defer m.recover(w, r)
		w.Header().Set(CorrelationHeader, id)
		h.ServeHTTP(w, r)
	})
	return otelhttp.NewHandler(inner, m.Service,
		otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string { return r.Method + " " + r.URL.Path }))
}

// recover is Wrap's deferred recovery.
func (m Middleware) recover(w http.ResponseWriter, r *http.Request) {
	v := recover()
	if v == nil {
		return
	}
	if v == http.ErrAbortHandler {
		// The server's own way to abort a response: not a crash.
		panic(v)
	}
	ctx := r.Context()
	attrs := []any{"event", "panic_recovered", "path", r.URL.Path, "panic", fmt.Sprint(v), "stack", string(debug.Stack())}
	if m.PanicAttrs != nil {
		attrs = append(attrs, m.PanicAttrs(r)...)
	}
	logging.FromContext(ctx).Log(ctx, logging.LevelCritical, m.Service+" handler panicked", attrs...)
	if m.OnPanic != nil {
		m.OnPanic(w, r, v)
		return
	}
	http.Error(w, "internal error", http.StatusInternalServerError)
}
