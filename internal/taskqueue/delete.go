package taskqueue

import (
	"context"
	"fmt"

	"cloud.google.com/go/cloudtasks/apiv2/cloudtaskspb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// DeleteTask deletes a task by its full name, so it never runs (wapipe bench --floor removes the
// tasks it made). A task already gone is not an error.
func (a *Admin) DeleteTask(ctx context.Context, name string) error {
	err := a.v2.DeleteTask(ctx, &cloudtaskspb.DeleteTaskRequest{Name: name})
	if err != nil && status.Code(err) != codes.NotFound {
		return fmt.Errorf("delete task %s: %w", name, err)
	}
	return nil
}
