package httpserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/wapipe/wapipe/internal/httpserver"
	"github.com/wapipe/wapipe/internal/logging"
)

// TestMiddlewareCorrelationID: a well-formed X-Correlation-ID is kept, anything else is
// replaced by a new id; the id is answered, in the context, and on the request's log lines.
func TestMiddlewareCorrelationID(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, header string
		keep         bool
	}{
		{"well formed", "req-42:a.b_c", true},
		{"absent", "", false},
		{"spaces", "has spaces", false},
		{"too long", strings.Repeat("a", 129), false},
		{"newline", "a\nb", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var logs bytes.Buffer
			var inCtx string
			h := httpserver.Middleware{Service: "test", Logger: logging.New(&logs, logging.Options{})}.Wrap(
				http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					inCtx = httpserver.CorrelationID(r.Context())
					logging.FromContext(r.Context()).InfoContext(r.Context(), "handled", "event", "handled")
				}))
			r := httptest.NewRequest(http.MethodGet, "/x", nil)
			if tc.header != "" {
				r.Header.Set("X-Correlation-ID", tc.header)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			got := w.Header().Get("X-Correlation-ID")
			if tc.keep && got != tc.header {
				t.Errorf("answered correlation id %q, want the caller's %q", got, tc.header)
			}
			if !tc.keep && (got == tc.header || len(got) != 32) {
				t.Errorf("answered correlation id %q, want a new 32-digit id", got)
			}
			if inCtx != got {
				t.Errorf("context's correlation id %q, answered %q", inCtx, got)
			}
			var line map[string]any
			if err := json.Unmarshal(logs.Bytes(), &line); err != nil {
				t.Fatalf("log line: %v: %s", err, logs.String())
			}
			if line["correlation_id"] != got {
				t.Errorf("log line's correlation_id %v, want %q", line["correlation_id"], got)
			}
		})
	}
}

type taskKey struct{}

// TestMiddlewareRequest: what Request adds to the context reaches the handler, OnPanic (with the
// panic's value) and PanicAttrs, whose attributes are on the panic's log line.
func TestMiddlewareRequest(t *testing.T) {
	t.Parallel()
	var inHandler, inPanic, value any
	var logs bytes.Buffer
	h := httpserver.Middleware{Service: "test", Logger: logging.New(&logs, logging.Options{}),
		Request: func(r *http.Request) *http.Request {
			return r.WithContext(context.WithValue(r.Context(), taskKey{}, r.Header.Get("X-CloudTasks-TaskName")))
		},
		OnPanic: func(w http.ResponseWriter, r *http.Request, v any) {
			inPanic, value = r.Context().Value(taskKey{}), v
			w.WriteHeader(http.StatusServiceUnavailable)
		},
		PanicAttrs: func(r *http.Request) []any { return []any{"task", r.Context().Value(taskKey{})} },
	}.Wrap(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		inHandler = r.Context().Value(taskKey{})
		panic("boom")
	}))
	r := httptest.NewRequest(http.MethodPost, "/internal/process_inbound", nil)
	r.Header.Set("X-CloudTasks-TaskName", "task-1")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if inHandler != "task-1" || inPanic != "task-1" || value != "boom" || w.Code != http.StatusServiceUnavailable {
		t.Errorf("handler saw %v, OnPanic saw %v and %v, answered %d; want task-1, task-1 and boom, 503", inHandler, inPanic, value, w.Code)
	}
	if !strings.Contains(logs.String(), `"task":"task-1"`) {
		t.Errorf("the panic's line lacks PanicAttrs' attribute:\n%s", logs.String())
	}
}

// TestMiddlewareRecover: a panicking handler is answered (500 by default, or as OnPanic says)
// and logged once at CRITICAL with its correlation id.
func TestMiddlewareRecover(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		onPanic    func(http.ResponseWriter, *http.Request, any)
		wantStatus int
		wantBody   string
	}{
		{"default answer", nil, http.StatusInternalServerError, "internal error\n"},
		{"service's answer", func(w http.ResponseWriter, _ *http.Request, _ any) {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(`{"status":"retry"}`))
		}, http.StatusServiceUnavailable, `{"status":"retry"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var logs bytes.Buffer
			h := httpserver.Middleware{Service: "test", Logger: logging.New(&logs, logging.Options{}), OnPanic: tc.onPanic}.Wrap(
				http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("boom") }))
			r := httptest.NewRequest(http.MethodPost, "/p", nil)
			r.Header.Set("X-Correlation-ID", "corr-1")
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != tc.wantStatus || w.Body.String() != tc.wantBody {
				t.Errorf("answer %d %q, want %d %q", w.Code, w.Body.String(), tc.wantStatus, tc.wantBody)
			}
			lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
			if len(lines) != 1 {
				t.Fatalf("%d log lines, want 1: %s", len(lines), logs.String())
			}
			var line map[string]any
			if err := json.Unmarshal([]byte(lines[0]), &line); err != nil {
				t.Fatal(err)
			}
			if line["severity"] != "CRITICAL" || line["event"] != "panic_recovered" || line["correlation_id"] != "corr-1" || line["panic"] != "boom" {
				t.Errorf("panic log line %v", line)
			}
		})
	}
}
