package setup

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"cloud.google.com/go/firestore"

	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/internal/taskqueue"
)

// Logger returns the service's JSON logger in Cloud Logging's format.
func (b *Base) Logger() *slog.Logger {
	return logging.New(os.Stdout, logging.Options{Level: logging.ParseLevel(b.LogLevel), ProjectID: b.ProjectID})
}

// Firestore connects to the configured database (the emulator when FIRESTORE_EMULATOR_HOST is
// set: the client library reads that itself).
func (b *Base) Firestore(ctx context.Context) (*firestore.Client, error) {
	c, err := firestore.NewClientWithDatabase(ctx, b.ProjectID, b.FirestoreDatabase)
	if err != nil {
		return nil, fmt.Errorf("firestore.NewClientWithDatabase: %w", err)
	}
	return c, nil
}

// Tasks connects to Cloud Tasks (or CLOUD_TASKS_EMULATOR_HOST) with the task settings of b.
func (b *Base) Tasks(ctx context.Context) (*taskqueue.Client, error) {
	c, err := taskqueue.New(ctx, taskqueue.Config{
		ProjectID:           b.ProjectID,
		Location:            b.TasksLocation,
		EmulatorHost:        b.TasksEmulatorHost,
		BaseURL:             b.InternalTaskBaseURL,
		Token:               b.InternalTaskToken,
		ServiceAccountEmail: b.TasksServiceAccountEmail,
	})
	if err != nil {
		return nil, fmt.Errorf("taskqueue.New: %w", err)
	}
	return c, nil
}
