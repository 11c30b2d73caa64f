package sweep

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/wapipe/wapipe/internal/logging"
)

// Job is one periodic check. Sweep does what is due at now and says how much it found and did;
// an error fails the sweep (Cloud Scheduler retries it), so a job must be safe to run again.
type Job interface {
	// Name names the job in the sweep's answer and log line: lower case words joined by
	// underscores, unique among a sweeper's jobs.
	Name() string
	Sweep(ctx context.Context, now time.Time) (Result, error)
}

// Result is what one job found and did; each job says what it counts (its Sweep comment).
type Result struct {
	Found int `json:"found"`
	Done  int `json:"done"`
}

// DefaultBudget bounds a sweep: Cloud Scheduler calls it every minute and waits for its answer
// up to the job's attempt deadline, so every job is told to stop well inside the minute.
const DefaultBudget = 45 * time.Second

// overrun is how long Run still waits, after the budget, for jobs to return once told to stop.
const overrun = 2 * time.Second

// Statuses of a sweep.
const (
	StatusOK     = "ok"
	StatusFailed = "failed"
)

// Sweeper runs its jobs. The zero value runs none.
type Sweeper struct {
	Jobs []Job
	// Budget bounds a run; DefaultBudget when zero.
	Budget time.Duration
}

// Report is what one run did: ok when every job ran and succeeded, failed otherwise.
type Report struct {
	At     time.Time   `json:"at"`
	Status string      `json:"status"`
	Jobs   []JobReport `json:"jobs"`
}

// JobReport is one job's part of a run.
type JobReport struct {
	Name string `json:"name"`
	Result
	DurationMS int64 `json:"duration_ms"`
	// Err is why the job failed (nil when it did not); Error is its text in the answer.
	Err   error  `json:"-"`
	Error string `json:"error,omitempty"`
}

// Failed reports whether any job failed.
func (r Report) Failed() bool { return r.Status != StatusOK }

// finished is a job's report, sent by the goroutine that ran it.
type finished struct {
	i   int
	rep JobReport
}

// Run runs every job once, concurrently, at now, and returns when all have returned or the
// budget (and a short overrun) is spent: a job still running then is reported failed and left
// to stop on its cancelled context. It logs one line, event sweep, with each job's counts.
func (s *Sweeper) Run(ctx context.Context, now time.Time) Report {
	budget := s.Budget
	if budget <= 0 {
		budget = DefaultBudget
	}
	start := time.Now()
	jobCtx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	rep := Report{At: now.UTC(), Status: StatusOK, Jobs: make([]JobReport, len(s.Jobs))}
	pending := make([]bool, len(s.Jobs))
	// Buffered: a job that ends after Run returned still has somewhere to send.
	results := make(chan finished, len(s.Jobs))
	for i, j := range s.Jobs {
		rep.Jobs[i].Name, pending[i] = j.Name(), true
		go func() { results <- finished{i, runJob(jobCtx, j, now)} }()
	}
	deadline := time.NewTimer(budget + overrun)
	defer deadline.Stop()
collect:
	for left := len(s.Jobs); left > 0; left-- {
		select {
		case f := <-results:
			rep.Jobs[f.i], pending[f.i] = f.rep, false
		case <-deadline.C:
			break collect
		}
	}
	for i, p := range pending {
		if p {
			rep.Jobs[i].Err = fmt.Errorf("still running after the sweep's budget of %s", budget)
			rep.Jobs[i].DurationMS = time.Since(start).Milliseconds()
		}
	}
	for i := range rep.Jobs {
		if err := rep.Jobs[i].Err; err != nil {
			rep.Status, rep.Jobs[i].Error = StatusFailed, err.Error()
		}
	}
	logReport(ctx, rep, time.Since(start))
	return rep
}

// runJob runs j, turning a panic into its error so the other jobs' results are still answered.
func runJob(ctx context.Context, j Job, now time.Time) (rep JobReport) {
	start := time.Now()
	rep.Name = j.Name()
	defer func() {
		if v := recover(); v != nil {
			rep.Err = fmt.Errorf("job %s panicked: %v", rep.Name, v)
		}
		rep.DurationMS = time.Since(start).Milliseconds()
	}()
	res, err := j.Sweep(ctx, now)
	rep.Result = res
	if err != nil {
		rep.Err = fmt.Errorf("job %s: %w", rep.Name, err)
	}
	return rep
}

// logReport logs the one line of a run: INFO when every job succeeded, ERROR when any failed.
func logReport(ctx context.Context, rep Report, d time.Duration) {
	attrs := []any{"event", "sweep", "status", rep.Status, "duration_ms", d.Milliseconds()}
	for _, j := range rep.Jobs {
		g := []any{"found", j.Found, "done", j.Done, "duration_ms", j.DurationMS}
		if j.Err != nil {
			g = append(g, "error", j.Error)
		}
		attrs = append(attrs, slog.Group(j.Name, g...))
	}
	logger := logging.FromContext(ctx)
	if rep.Failed() {
		logger.ErrorContext(ctx, "sweep failed: Cloud Scheduler runs it again", attrs...)
		return
	}
	logger.InfoContext(ctx, "sweep done", attrs...)
}
