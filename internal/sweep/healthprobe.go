package sweep

import (
	"context"
	"errors"
	"time"

	"github.com/wapipe/wapipe/internal/health"
)

// HealthProbe is the job that computes the health report as GET /internal/health does, so that
// every queue whose oldest task is older than health.StalledAge is logged (queue_stalled, at
// ERROR) each minute: the log-based alert on stalled queues (terraform/monitoring.tf) needs the
// report computed even when nobody looks at it, and Cloud Monitoring has no metric of a queue's
// oldest task.
type HealthProbe struct {
	Reporter health.Reporter
}

// Name is the job's name.
func (HealthProbe) Name() string { return "health_probe" }

// Sweep computes the report: Found counts the stalled queues, Done the queues reported. A part
// of the report that could not be read fails the job (the verdict is failing then too).
func (j HealthProbe) Sweep(ctx context.Context, _ time.Time) (Result, error) {
	if j.Reporter == nil {
		return Result{}, errors.New("health not configured: no reporter")
	}
	rep, stalled, err := health.Probe(ctx, j.Reporter)
	return Result{Found: len(stalled), Done: len(rep.Queues)}, err
}
