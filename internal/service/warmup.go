package service

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/api/googleapi"

	"github.com/wapipe/wapipe/internal/httpserver"
	"github.com/wapipe/wapipe/internal/secrets"
	"github.com/wapipe/wapipe/tasks"
)

// StartupPath is every service's startup-only probe (Cloud Run's startup_probe): 503 until the
// warm-up has opened and exercised the service's clients, 200 after. Cloud Run sends an instance
// no traffic before it answers 200, so the first request pays no connection set-up (TLS, access
// tokens, gRPC channels), which on a cold instance took a webhook delivery's marker past its
// deadline. The liveness probe stays /healthz, which touches no client: a Firestore blip must
// not get instances restarted.
const StartupPath = "/startupz"

// Warm-up pacing: a check is retried after MinBackoff, doubling up to MaxBackoff, each attempt
// bounded by AttemptTimeout (a cold connection takes about a second, an unreachable one must not
// hold the retries).
const (
	MinBackoff     = 100 * time.Millisecond
	MaxBackoff     = 5 * time.Second
	AttemptTimeout = 10 * time.Second
)

// Check exercises one client once, the cheapest call that opens its connection.
type Check struct {
	// Name names the client in log lines: firestore, cloud_tasks, kms….
	Name string
	Run  func(ctx context.Context) error
}

// Warmup runs a service's checks when it starts, each until it has succeeded once, and answers
// the startup probe meanwhile (Handler). The checks run on the very clients the handlers use, so
// the connections they open are the ones the first requests find. A failed attempt is logged and
// retried with backoff; the warm-up never ends the process (the probe stays 503 and Cloud Run
// gives up on the instance, or a later attempt succeeds).
type Warmup struct {
	checks []Check
	logger *slog.Logger
	ready  atomic.Bool
	done   chan struct{}
	once   sync.Once
}

// NewWarmup returns the warm-up of checks, logging to logger.
func NewWarmup(logger *slog.Logger, checks ...Check) *Warmup {
	return &Warmup{checks: checks, logger: logger, done: make(chan struct{})}
}

// Run runs every check at once until each has succeeded or ctx ends, then marks the service
// ready (when they all succeeded). It returns when it is over; call it once.
func (w *Warmup) Run(ctx context.Context) {
	defer w.once.Do(func() { close(w.done) })
	start := time.Now()
	var wg sync.WaitGroup
	var failed atomic.Bool
	for _, c := range w.checks {
		wg.Go(func() {
			if !w.retry(ctx, c) {
				failed.Store(true)
			}
		})
	}
	wg.Wait()
	if failed.Load() {
		return
	}
	w.ready.Store(true)
	w.logger.InfoContext(ctx, "warm-up done: the service reports ready", "event", "startup_ready",
		"checks", len(w.checks), "duration_ms", time.Since(start).Milliseconds())
}

// retry runs c until it succeeds (true) or ctx ends (false).
func (w *Warmup) retry(ctx context.Context, c Check) bool {
	start, backoff := time.Now(), MinBackoff
	for attempt := 1; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, AttemptTimeout)
		err := c.Run(actx)
		cancel()
		if err == nil {
			w.logger.InfoContext(ctx, "warm-up: client ready", "event", "warmup_check_done", "check", c.Name,
				"attempts", attempt, "duration_ms", time.Since(start).Milliseconds())
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		w.logger.WarnContext(ctx, "warm-up: client not ready, retrying", "event", "warmup_retry", "check", c.Name,
			"attempt", attempt, "retry_in_ms", backoff.Milliseconds(), "error", err)
		select {
		case <-ctx.Done():
			return false
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, MaxBackoff)
	}
}

// Ready reports whether every check has succeeded.
func (w *Warmup) Ready() bool { return w.ready.Load() }

// Done is closed when Run has returned.
func (w *Warmup) Done() <-chan struct{} { return w.done }

// Handler answers StartupPath (503 while warming up, 200 once ready) and passes every other
// request to next. The probe is answered ahead of next's middleware and checks (the console's
// Host policy, the worker's callers): Cloud Run's prober sends no credentials, and a probe line
// per request would flood the logs.
func (w *Warmup) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.URL.Path != StartupPath {
			next.ServeHTTP(rw, r)
			return
		}
		rw.Header().Set("Content-Type", "text/plain; charset=utf-8")
		rw.Header().Set("Cache-Control", "no-store")
		if !w.Ready() {
			rw.WriteHeader(http.StatusServiceUnavailable)
			_, _ = io.WriteString(rw, "warming up")
			return
		}
		_, _ = io.WriteString(rw, "ok")
	})
}

// Warmup returns the warm-up of the clients Start built: a Firestore read on each database, a
// Cloud Tasks call on each task client (Options.WarmQueue), and, for Options.WarmSeal, a KMS
// seal with the keeper.
func (c *Clients) Warmup() *Warmup {
	var checks []Check
	if c.DB != nil {
		checks = append(checks, Check{Name: "firestore", Run: c.DB.Ping})
	}
	if c.InboundDB != nil && c.InboundDB != c.DB {
		checks = append(checks, Check{Name: "firestore_inbound", Run: c.InboundDB.Ping})
	}
	queue := c.warm.queue
	if queue == "" {
		queue = tasks.InboundQueueID
	}
	if c.Tasks != nil {
		checks = append(checks, Check{Name: "cloud_tasks", Run: func(ctx context.Context) error { return c.Tasks.Ping(ctx, queue) }})
	}
	if c.Admin != nil {
		checks = append(checks, Check{Name: "cloud_tasks_admin", Run: func(ctx context.Context) error { return c.Admin.Ping(ctx, queue) }})
	}
	if c.Keeper != nil {
		for _, purpose := range c.warm.seal {
			checks = append(checks, Check{Name: "kms_" + purpose, Run: c.sealCheck(purpose)})
		}
	}
	return NewWarmup(c.Logger, checks...)
}

// sealCheck seals a throwaway value for purpose: one KMS Encrypt (nothing with the development
// key). An answer from KMS, even a refusal, has opened the connection and counts as done: the
// service's main routes do not need the key, so a key it may not use must not keep it from
// serving; the refusal is logged, as sealing will fail.
func (c *Clients) sealCheck(purpose string) func(context.Context) error {
	return func(ctx context.Context) error {
		_, err := c.Keeper.Encrypt(ctx, []byte("warm-up"), secrets.AD("wapipe-startup", purpose))
		var answer *googleapi.Error
		if errors.As(err, &answer) {
			c.Logger.WarnContext(ctx, "warm-up: KMS refused the seal; sealing will fail", "event", "warmup_kms_refused",
				"purpose", purpose, "status", answer.Code)
			return nil
		}
		return err
	}
}

// Serve listens on :port and serves h there (ServeOn).
func (c *Clients) Serve(ctx context.Context, port string, h http.Handler) error {
	ln, err := listen(port)
	if err != nil {
		return err
	}
	return c.ServeOn(ctx, ln, h)
}

// ServeOn serves h on ln until ctx ends, then drains in-flight requests (httpserver.Serve), the
// startup probe answered by the warm-up of c's clients, which runs meanwhile. The caller's
// deferred cleanup runs after, so requests finish on open clients and the warm-up has ended.
func (c *Clients) ServeOn(ctx context.Context, ln net.Listener, h http.Handler) error {
	w := c.Warmup()
	wctx, stop := context.WithCancel(ctx)
	go w.Run(wctx)
	defer func() {
		stop()
		<-w.Done()
	}()
	return httpserver.Serve(ctx, ln, w.Handler(h), c.Logger)
}
