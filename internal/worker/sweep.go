package worker

import (
	"net/http"

	"github.com/wapipe/wapipe/internal/delivery"
	"github.com/wapipe/wapipe/internal/httpserver"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/sweep"
	"github.com/wapipe/wapipe/internal/taskqueue"
	"github.com/wapipe/wapipe/tasks"
)

// handleSweep runs the periodic jobs (POST /internal/sweep, Cloud Scheduler every minute; the
// local stack's ticker in dev) and answers each job's result: 200 when every job ran, 500 when
// any failed, so that Cloud Scheduler tries again. The jobs are Deps.SweepJobs (package sweep).
func (s *Server) handleSweep() http.Handler {
	sw := &sweep.Sweeper{Jobs: s.deps.SweepJobs}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rep := sw.Run(r.Context(), s.deps.Now())
		code := http.StatusOK
		if rep.Failed() {
			code = http.StatusInternalServerError
		}
		if !s.cfg.IsDev() {
			// The sweep line logs why; the caller learns only which job failed.
			for i := range rep.Jobs {
				if rep.Jobs[i].Error != "" {
					rep.Jobs[i].Error = "failed"
				}
			}
		}
		httpserver.WriteJSON(w, code, rep)
	})
}

// sweepJobs are the periodic jobs of POST /internal/sweep (Deps.SweepJobs), on the stores and
// the task client NewDeps built: a new check is one more line.
func sweepJobs(cfg *Config, deps Deps, db *store.DB, conversations *store.ConversationStore, outbound *store.Outbound,
	tq *taskqueue.Client) []sweep.Job {
	queues := deps.Queues
	if queues == nil {
		queues = tasks.DefaultQueues()
	}
	return []sweep.Job{
		&sweep.StrandedInboxes{Inboxes: conversations, Tasks: tq, Keyer: db.Keyer(), Tenants: store.NewTenants(db, store.Options{})},
		// A send record untouched for three of the longest backoffs has no live task left.
		&delivery.HeldSweep{Records: outbound, Tasks: tq, ReconcileWindow: cfg.ReconcileWindow,
			StaleAfter: 3*queues.LongestSendBackoff() + cfg.ConversationLease},
		sweep.HealthProbe{Reporter: deps.Health},
	}
}
