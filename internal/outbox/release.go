package outbox

import (
	"context"
	"fmt"

	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/taskqueue"
	"github.com/wapipe/wapipe/tasks"
)

// ParkedStore releases parked records; *store.Sends implements it.
type ParkedStore interface {
	ReleaseParked(ctx context.Context, tenantID string) ([]store.OutboundRecord, error)
}

// ReleaseParked releases the sends parked while tenantID needed a new access token (CONTRACT.md,
// Token lifecycle) and returns how many tasks it enqueued (or found enqueued). A new token
// (wapipe tenants set-token, Embedded Signup) sets the tenant's auth_status ok (it must be), then
// each parked send becomes pending again and gets one process_send task on the tenant's send
// queue, in park order. Each task is named after the send's key and release generation, so a
// release run twice (or resumed after a crash) creates no second task, and the record's state
// makes each send go out once. On an error the rest stay marked for release: run it again.
func ReleaseParked(ctx context.Context, s ParkedStore, q Enqueuer, tenantID, correlationID string) (int, error) {
	recs, err := s.ReleaseParked(ctx, tenantID)
	if err != nil {
		return 0, err
	}
	for i, rec := range recs {
		task := tasks.SendTask(rec.IdempotencyKey, correlationID, tenantID, rec.ReleaseGen)
		// One at a time, so the queue receives them in park order.
		if _, err := q.Enqueue(ctx, taskqueue.FromSpec(task)); err != nil {
			return i, fmt.Errorf("enqueue the release of %s: %w", rec.IdempotencyKey, err)
		}
	}
	return len(recs), nil
}
