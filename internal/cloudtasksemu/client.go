package cloudtasksemu

import (
	"context"
	"fmt"

	cloudtasks "cloud.google.com/go/cloudtasks/apiv2"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// ClientOptions are the options that point an official Cloud Tasks client (v2 or v2beta3) at an
// emulator: its host:port, plain gRPC, no credentials.
func ClientOptions(addr string) []option.ClientOption {
	return []option.ClientOption{
		option.WithEndpoint(addr),
		option.WithoutAuthentication(),
		option.WithGRPCDialOption(grpc.WithTransportCredentials(insecure.NewCredentials())),
	}
}

// NewClient returns the official v2 client talking to the emulator at addr (the value of
// CLOUD_TASKS_EMULATOR_HOST). The caller closes it.
func NewClient(ctx context.Context, addr string) (*cloudtasks.Client, error) {
	c, err := cloudtasks.NewClient(ctx, ClientOptions(addr)...)
	if err != nil {
		return nil, fmt.Errorf("cloudtasks.NewClient: %w", err)
	}
	return c, nil
}
