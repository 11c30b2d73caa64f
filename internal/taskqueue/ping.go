package taskqueue

import (
	"context"
	"fmt"

	"cloud.google.com/go/cloudtasks/apiv2/cloudtaskspb"
	betapb "cloud.google.com/go/cloudtasks/apiv2beta3/cloudtaskspb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Ping makes one cheap call on the client (GetQueue of queue, an id or full name): the first call
// on a new client opens its connection (TLS, the access token, the gRPC channel), and a service
// pays that at start-up (package service's warm-up) rather than inside its first enqueue's
// deadline. An answer from Cloud Tasks is success, PermissionDenied and NotFound included: an
// enqueuer (roles/cloudtasks.enqueuer) may not read queues, and the call was made to open the
// connection, which it did. Anything else means Cloud Tasks was not reached.
func (c *Client) Ping(ctx context.Context, queue string) error {
	_, err := c.tc.GetQueue(ctx, &cloudtaskspb.GetQueueRequest{Name: c.QueuePath(queue)})
	return pingResult(err)
}

// Ping is Client.Ping for both of the admin client's connections (v2 and v2beta3, which serves
// queue stats).
func (a *Admin) Ping(ctx context.Context, queue string) error {
	name := a.QueuePath(queue)
	if _, err := a.v2.GetQueue(ctx, &cloudtaskspb.GetQueueRequest{Name: name}); pingResult(err) != nil {
		return pingResult(err)
	}
	_, err := a.beta.GetQueue(ctx, &betapb.GetQueueRequest{Name: name})
	return pingResult(err)
}

func pingResult(err error) error {
	switch status.Code(err) {
	case codes.OK, codes.NotFound, codes.PermissionDenied:
		return nil
	}
	return fmt.Errorf("cloud tasks ping: %w", err)
}
