// Package parked releases the sends parked while a tenant needed a new access token (CONTRACT.md,
// Token lifecycle). A new token (wapipe tenants set-token, Embedded Signup) sets the tenant's
// auth_status ok, then Release makes each parked send pending again and enqueues one
// process_send task for it on the tenant's send queue, in park order. Each task is named after the
// send's key and release generation, so a release run twice (or resumed after a crash) creates no
// second task, and the record's state makes each send go out once.
package parked

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/taskqueue"
	"github.com/wapipe/wapipe/tasks"
)

// Store releases parked records; *store.Sends implements it.
type Store interface {
	ReleaseParked(ctx context.Context, tenantID string) ([]store.OutboundRecord, error)
}

// Enqueuer creates tasks; *taskqueue.Client implements it.
type Enqueuer interface {
	Enqueue(ctx context.Context, t taskqueue.Task) (taskqueue.Result, error)
}

// Release releases the parked sends of tenantID (whose auth_status must be ok) and returns how
// many tasks it enqueued (or found enqueued). On an error the rest stay marked for release: run
// it again.
func Release(ctx context.Context, s Store, q Enqueuer, tenantID, correlationID string) (int, error) {
	recs, err := s.ReleaseParked(ctx, tenantID)
	if err != nil {
		return 0, err
	}
	for i, rec := range recs {
		body, err := json.Marshal(tasks.Send{IdempotencyKey: rec.IdempotencyKey, CorrelationID: correlationID,
			TenantID: tenantID, ReleaseGen: rec.ReleaseGen})
		if err != nil {
			return i, fmt.Errorf("encode release task: %w", err)
		}
		// One at a time, so the queue receives them in park order.
		if _, err := q.Enqueue(ctx, taskqueue.Task{
			Queue: tasks.TenantQueueID(tenantID), ID: tasks.SendTaskID(rec.IdempotencyKey, rec.ReleaseGen),
			Path: tasks.ProcessSendPath, Body: body, CorrelationID: correlationID,
		}); err != nil {
			return i, fmt.Errorf("enqueue the release of %s: %w", rec.IdempotencyKey, err)
		}
	}
	return len(recs), nil
}
