package service_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/internal/service"
	"github.com/wapipe/wapipe/internal/testenv"
)

// probe answers GET path on h.
func probe(h http.Handler, path string) (int, string) {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	return rec.Code, rec.Body.String()
}

// TestWarmupRetriesUntilReady (issue 35 item 8): the startup probe answers 503 while a check
// fails (each failure logged, the check retried with backoff) and 200 once every check has
// succeeded; other paths pass through to the service at any time.
func TestWarmupRetriesUntilReady(t *testing.T) {
	t.Parallel()
	logs := &testenv.LogBuffer{}
	var flaky, steady atomic.Int32
	release := make(chan struct{})
	w := service.NewWarmup(logging.New(logs, logging.Options{}),
		service.Check{Name: "flaky", Run: func(context.Context) error {
			if flaky.Add(1) < 3 {
				return errors.New("connection refused")
			}
			return nil
		}},
		service.Check{Name: "steady", Run: func(ctx context.Context) error {
			steady.Add(1)
			select {
			case <-release: // held until the test has seen the probe say 503
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}},
	)
	h := w.Handler(http.HandlerFunc(func(rw http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(rw, "service") }))
	go w.Run(t.Context())

	if code, body := probe(h, service.StartupPath); code != http.StatusServiceUnavailable {
		t.Fatalf("probe while warming up: %d %q, want 503", code, body)
	}
	if code, body := probe(h, "/healthz"); code != http.StatusOK || body != "service" {
		t.Fatalf("another path while warming up: %d %q, want the service's answer", code, body)
	}
	testenv.Eventually(t, 5*time.Second, func() bool { return flaky.Load() >= 3 }, "the failing check was not retried")
	if code, _ := probe(h, service.StartupPath); code != http.StatusServiceUnavailable {
		t.Fatalf("probe with a check still running: %d, want 503", code)
	}
	close(release)
	<-w.Done()
	if code, body := probe(h, service.StartupPath); code != http.StatusOK || body != "ok" || !w.Ready() {
		t.Fatalf("probe after the warm-up: %d %q, ready %v; want 200 ok", code, body, w.Ready())
	}
	if n := logs.Count("warmup_retry"); n != 2 {
		t.Errorf("%d warmup_retry lines, want one per failed attempt (2)", n)
	}
	if steady.Load() != 1 || !logs.Has("warmup_check_done") || !logs.Has("startup_ready") {
		t.Errorf("steady ran %d times, logs %s; want once, warmup_check_done and startup_ready", steady.Load(), logs)
	}
}

// TestWarmupNeverReadyWhenStopped: a check that never succeeds keeps the probe at 503; the
// warm-up ends with its context, without marking the service ready (and never ends the process).
func TestWarmupNeverReadyWhenStopped(t *testing.T) {
	t.Parallel()
	logs := &testenv.LogBuffer{}
	w := service.NewWarmup(logging.New(logs, logging.Options{}),
		service.Check{Name: "down", Run: func(context.Context) error { return errors.New("unreachable") }})
	ctx, cancel := context.WithCancel(t.Context())
	go w.Run(ctx)
	testenv.Eventually(t, 5*time.Second, func() bool { return logs.Has("warmup_retry") }, "no warmup_retry line")
	cancel()
	<-w.Done()
	if code, _ := probe(w.Handler(http.NotFoundHandler()), service.StartupPath); code != http.StatusServiceUnavailable || w.Ready() {
		t.Errorf("probe after a failed warm-up: %d, ready %v; want 503, not ready", code, w.Ready())
	}
}
