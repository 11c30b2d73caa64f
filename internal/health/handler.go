package health

import (
	"context"
	"net/http"

	"github.com/wapipe/wapipe/internal/httpjson"
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
			httpjson.Write(w, http.StatusNotFound, map[string]string{"status": "error", "error": "health not configured"})
			return
		}
		report, err := rep.Check(r.Context())
		if err != nil {
			logging.FromContext(r.Context()).WarnContext(r.Context(), "health check incomplete", "event", "health_check_failed", "error", err)
		}
		code := http.StatusOK
		if report.Status == Failing {
			code = http.StatusServiceUnavailable
		}
		httpjson.Write(w, code, report)
	})
}
