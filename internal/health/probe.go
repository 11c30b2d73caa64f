package health

import "context"

// Probe computes a report with rep and logs each stalled queue (EventQueueStalled), exactly as
// Handler does, without an HTTP request: the worker's sweep runs it every minute so that the
// queue_stalled alert needs no one to look at the report. It returns the report, the ids of the
// stalled queues and the report's error (the parts that could not be read).
func Probe(ctx context.Context, rep Reporter) (Report, []string, error) {
	report, err := rep.Check(ctx)
	logStalled(ctx, report)
	return report, report.Stalled(), err
}

// Stalled are the ids of the report's queues whose oldest task is older than StalledAge,
// sorted.
func (r Report) Stalled() []string {
	var ids []string
	for _, id := range r.queueIDs() {
		if r.Queues[id].oldestAge() > StalledAge {
			ids = append(ids, id)
		}
	}
	return ids
}
