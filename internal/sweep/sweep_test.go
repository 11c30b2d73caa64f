package sweep_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/internal/sweep"
	"github.com/wapipe/wapipe/internal/testenv"
)

func TestMain(m *testing.M) { os.Exit(testenv.RunWithFirestore(m)) }

// job is a Job whose Sweep is run.
type job struct {
	name string
	run  func(ctx context.Context) (sweep.Result, error)
	ran  chan time.Time
}

func (j *job) Name() string { return j.name }

func (j *job) Sweep(ctx context.Context, now time.Time) (sweep.Result, error) {
	if j.ran != nil {
		j.ran <- now
	}
	return j.run(ctx)
}

func counts(found, done int) func(context.Context) (sweep.Result, error) {
	return func(context.Context) (sweep.Result, error) { return sweep.Result{Found: found, Done: done}, nil }
}

// logged runs the sweeper with a logger and returns its report and log lines.
func logged(t *testing.T, s *sweep.Sweeper, now time.Time) (sweep.Report, []map[string]any) {
	t.Helper()
	logs := &testenv.LogBuffer{}
	ctx := logging.WithLogger(context.Background(), logging.New(logs, logging.Options{Level: slog.LevelDebug, Hasher: logging.DevHasher()}))
	rep := s.Run(ctx, now)
	var lines []map[string]any
	for line := range strings.Lines(logs.String()) {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		lines = append(lines, m)
	}
	return rep, lines
}

// TestSweeperRunsEveryJob: every job runs once at the sweep's time, whatever the others do; a
// job that fails, panics or overruns the budget is reported failed with the others' results
// intact, and the run is failed; one sweep log line carries each job's counts, at ERROR when a
// job failed.
func TestSweeperRunsEveryJob(t *testing.T) {
	t.Parallel()
	boom := errors.New("firestore unavailable")
	tests := []struct {
		name       string
		middle     func(context.Context) (sweep.Result, error)
		wantStatus string
		wantMiddle sweep.JobReport
		severity   string
	}{
		{"all succeed", counts(3, 2), sweep.StatusOK,
			sweep.JobReport{Name: "middle", Result: sweep.Result{Found: 3, Done: 2}}, "INFO"},
		{"one fails", func(context.Context) (sweep.Result, error) { return sweep.Result{Found: 4, Done: 1}, boom }, sweep.StatusFailed,
			sweep.JobReport{Name: "middle", Result: sweep.Result{Found: 4, Done: 1}, Error: "job middle: firestore unavailable"}, "ERROR"},
		{"one panics", func(context.Context) (sweep.Result, error) { panic("nil map") }, sweep.StatusFailed,
			sweep.JobReport{Name: "middle", Error: "job middle panicked: nil map"}, "ERROR"},
		{"one stops at the budget", func(ctx context.Context) (sweep.Result, error) {
			<-ctx.Done()
			return sweep.Result{Found: 1}, ctx.Err()
		},
			sweep.StatusFailed, sweep.JobReport{Name: "middle", Result: sweep.Result{Found: 1}, Error: "job middle: context deadline exceeded"}, "ERROR"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			now := time.Date(2026, 11, 22, 10, 7, 30, 0, time.UTC)
			first := &job{name: "first", run: counts(1, 1), ran: make(chan time.Time, 1)}
			last := &job{name: "last", run: counts(0, 0), ran: make(chan time.Time, 1)}
			s := &sweep.Sweeper{Jobs: []sweep.Job{first, &job{name: "middle", run: tc.middle}, last}, Budget: 200 * time.Millisecond}
			rep, lines := logged(t, s, now)
			for _, j := range []*job{first, last} {
				if got := <-j.ran; !got.Equal(now) {
					t.Errorf("%s ran at %v, want the sweep's time %v", j.name, got, now)
				}
			}
			want := sweep.Report{At: now, Status: tc.wantStatus, Jobs: []sweep.JobReport{
				{Name: "first", Result: sweep.Result{Found: 1, Done: 1}}, tc.wantMiddle, {Name: "last"}}}
			if diff := cmp.Diff(want, rep, cmpopts.IgnoreFields(sweep.JobReport{}, "DurationMS", "Err")); diff != "" {
				t.Errorf("report (-want, +got):\n%s", diff)
			}
			if rep.Failed() != (tc.wantStatus == sweep.StatusFailed) || (rep.Jobs[1].Err != nil) != (tc.wantMiddle.Error != "") {
				t.Errorf("Failed() = %v, middle Err = %v", rep.Failed(), rep.Jobs[1].Err)
			}
			if len(lines) != 1 || lines[0]["event"] != "sweep" || lines[0]["status"] != tc.wantStatus || lines[0]["severity"] != tc.severity {
				t.Fatalf("log = %v, want one sweep line, status %s at %s", lines, tc.wantStatus, tc.severity)
			}
			if g, _ := lines[0]["first"].(map[string]any); g["found"] != 1.0 || g["done"] != 1.0 {
				t.Errorf("the sweep line's first = %v, want found 1, done 1", lines[0]["first"])
			}
			if g, _ := lines[0]["middle"].(map[string]any); (g["error"] != nil) != (tc.wantMiddle.Error != "") {
				t.Errorf("the sweep line's middle = %v, want its error when it failed", lines[0]["middle"])
			}
		})
	}
}

// TestSweeperBoundsAJobThatIgnoresItsContext: a job that never returns does not hold the sweep
// past its budget and a short overrun; it is reported failed, the others with their results.
func TestSweeperBoundsAJobThatIgnoresItsContext(t *testing.T) {
	t.Parallel()
	stuck := make(chan struct{})
	defer close(stuck)
	s := &sweep.Sweeper{Budget: 100 * time.Millisecond, Jobs: []sweep.Job{
		&job{name: "stuck", run: func(context.Context) (sweep.Result, error) { <-stuck; return sweep.Result{}, nil }},
		&job{name: "quick", run: counts(2, 2)},
	}}
	start := time.Now()
	rep, _ := logged(t, s, start)
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the sweep took %v with a stuck job, want its budget and a short overrun", d)
	}
	if !rep.Failed() || rep.Jobs[0].Err == nil || !strings.Contains(rep.Jobs[0].Error, "budget") {
		t.Errorf("stuck job = %+v, want failed for the budget", rep.Jobs[0])
	}
	if rep.Jobs[1].Err != nil || rep.Jobs[1].Found != 2 || rep.Jobs[1].Done != 2 {
		t.Errorf("quick job = %+v, want its result", rep.Jobs[1])
	}
}

// TestSweeperWithoutJobs: a sweeper with no job succeeds and says so.
func TestSweeperWithoutJobs(t *testing.T) {
	t.Parallel()
	rep, lines := logged(t, &sweep.Sweeper{}, time.Now())
	if rep.Failed() || len(rep.Jobs) != 0 || len(lines) != 1 {
		t.Errorf("report %+v, %d log lines; want ok, no jobs, one line", rep, len(lines))
	}
}
