package taskqueue

import (
	"context"
	"errors"
	"fmt"
	"strings"

	betapb "cloud.google.com/go/cloudtasks/apiv2beta3/cloudtaskspb"
	"google.golang.org/api/iterator"
	"google.golang.org/protobuf/types/known/fieldmaskpb"

	"github.com/wapipe/wapipe/tasks"
)

// QueueStatsByPrefix reads the state and stats of every queue of the project and location whose
// id begins with prefix (tasks.TenantQueuePrefix: the tenants' send queues), by queue id. One
// ListQueues, paged: the queues that exist, including those of tenants created since start-up.
func (a *Admin) QueueStatsByPrefix(ctx context.Context, prefix string) (map[string]QueueStats, error) {
	parent := fmt.Sprintf("projects/%s/locations/%s", a.projectID, a.location)
	it := a.beta.ListQueues(ctx, &betapb.ListQueuesRequest{Parent: parent,
		ReadMask: &fieldmaskpb.FieldMask{Paths: []string{"name", "state", "stats"}}})
	out := map[string]QueueStats{}
	for {
		q, err := it.Next()
		if errors.Is(err, iterator.Done) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("list queues of %s: %w", parent, err)
		}
		if id := tasks.QueueID(q.GetName()); strings.HasPrefix(id, prefix) {
			out[id] = statsOf(q)
		}
	}
}
