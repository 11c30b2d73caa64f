package health

import (
	"context"
	"net/http"
	"time"

	"github.com/wapipe/wapipe/internal/httpserver"
	"github.com/wapipe/wapipe/internal/logging"
)

// Reporter makes a health report; *Checker implements it.
type Reporter interface {
	Check(ctx context.Context) (Report, error)
}

// Handler answers the health report: 200 when ok or degraded, 503 when failing, so an uptime
// check can alert on the status code alone; 404 when rep is nil (health not configured).
func Handler(rep Reporter) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if rep == nil {
			httpserver.WriteJSON(w, http.StatusNotFound, map[string]string{"status": "error", "error": "health not configured"})
			return
		}
		report, err := rep.Check(r.Context())
		if err != nil {
			logging.FromContext(r.Context()).WarnContext(r.Context(), "health check incomplete", "event", "health_check_failed", "error", err)
		}
		logStalled(r.Context(), report)
		code := http.StatusOK
		if report.Status == Failing {
			code = http.StatusServiceUnavailable
		}
		httpserver.WriteJSON(w, code, report)
	})
}

// StalledAge is the age of a queue's oldest task from which the health report logs the queue as
// stalled (EventQueueStalled): the contract's alert condition, "the oldest task of any queue
// older than 10 minutes".
const StalledAge = 10 * time.Minute

// EventQueueStalled is the event of the ERROR line logged, each time the report is served, for
// each queue whose oldest task is older than StalledAge; a log-based metric alerts on it
// (terraform/monitoring.tf). Cloud Monitoring has no metric of a queue's oldest task.
const EventQueueStalled = "queue_stalled"

// logStalled logs every queue of report whose oldest task is older than StalledAge.
func logStalled(ctx context.Context, report Report) {
	for _, id := range report.Stalled() {
		q := report.Queues[id]
		logging.FromContext(ctx).ErrorContext(ctx, "a queue's oldest task is older than 10 minutes", "event", EventQueueStalled,
			"queue", id, "oldest_task_age_s", int64(q.OldestTaskAgeS), "tasks", q.Tasks, "paused", q.Paused)
	}
}
