package devstack

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/tasks"
)

// DefaultSweepEvery is how often the stack posts the worker's sweep, as Cloud Scheduler does in
// production: stranded conversation inboxes are run again and the health report is probed
// locally too.
const DefaultSweepEvery = time.Minute

// startSweeps posts POST /internal/sweep to the worker every o.SweepEvery, with the internal
// token (the dev admission), until the stack stops. A sweep that fails is logged in the
// worker's log; the next tick tries again, as Cloud Scheduler's retry would.
func (s *Stack) startSweeps(ctx context.Context, o Options) {
	every := o.SweepEvery
	if every == 0 {
		every = DefaultSweepEvery
	}
	if every < 0 {
		return
	}
	logger := logging.New(o.logTo("worker"), logging.Options{Level: o.LogLevel, ProjectID: o.Project, Hasher: logging.DevHasher()})
	client := &http.Client{Timeout: time.Minute}
	s.wg.Go(func() {
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			if err := s.postSweep(ctx, client); err != nil && ctx.Err() == nil {
				logger.WarnContext(ctx, "the local sweep failed: the next tick runs it again", "event", "devstack_sweep_failed",
					"error", err.Error())
			}
		}
	})
}

// postSweep posts one sweep to the worker.
func (s *Stack) postSweep(ctx context.Context, client *http.Client) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.WorkerURL+tasks.SweepPath, http.NoBody)
	if err != nil {
		return fmt.Errorf("sweep request: %w", err)
	}
	req.Header.Set(tasks.HeaderInternalToken, s.InternalToken)
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("POST %s: %w", tasks.SweepPath, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("POST %s: %s", tasks.SweepPath, resp.Status)
	}
	return nil
}
