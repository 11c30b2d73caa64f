package store

import (
	"context"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// pingCollection holds no document: Ping reads one that never exists.
const pingCollection = "startup_ping"

// Ping makes one cheap read on db (a document that never exists, so NotFound is the expected
// answer): the first call on a new client opens its connection (TLS, the access token, the gRPC
// channel), and a service pays that at start-up (package service's warm-up) rather than inside
// its first request's deadline. Any other error means the database was not reached.
func (db *DB) Ping(ctx context.Context) error {
	_, err := db.fs.Collection(pingCollection).Doc("ping").Get(ctx)
	if err != nil && status.Code(err) != codes.NotFound {
		return fmt.Errorf("firestore ping: %w", err)
	}
	return nil
}
