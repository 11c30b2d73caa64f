package ops

import (
	"context"
	"errors"
	"fmt"
	"strings"

	cloudtasks "cloud.google.com/go/cloudtasks/apiv2"
	"cloud.google.com/go/firestore"

	"github.com/wapipe/wapipe/internal/taskqueue"
)

// Conn says where wapipe's state lives: a Google Cloud project's Firestore and Cloud Tasks, or the
// local emulators. The Firestore client reads FIRESTORE_EMULATOR_HOST itself.
type Conn struct {
	Project           string
	Location          string
	TasksEmulatorHost string
	FirestoreDatabase string
}

// Validate checks that the settings name a place to connect to.
func (c Conn) Validate() error {
	var errs []error
	if strings.TrimSpace(c.Project) == "" {
		errs = append(errs, errors.New("no project: set GOOGLE_CLOUD_PROJECT or --project"))
	}
	if strings.TrimSpace(c.Location) == "" {
		errs = append(errs, errors.New("no location: set TASKS_LOCATION or --location"))
	}
	return errors.Join(errs...)
}

// Firestore opens a client on the configured database; close it when done.
func (c Conn) Firestore(ctx context.Context) (*firestore.Client, error) {
	db := c.FirestoreDatabase
	if db == "" {
		db = firestore.DefaultDatabaseID
	}
	fs, err := firestore.NewClientWithDatabase(ctx, c.Project, db)
	if err != nil {
		return nil, fmt.Errorf("firestore.NewClientWithDatabase: %w", err)
	}
	return fs, nil
}

// CloudTasks opens the Cloud Tasks client: the emulator when TasksEmulatorHost is set, else Cloud
// Tasks with Application Default Credentials. Close it when done.
func (c Conn) CloudTasks(ctx context.Context) (*cloudtasks.Client, error) {
	return taskqueue.NewCloudTasksClient(ctx, c.TasksEmulatorHost)
}

// QueuePath returns the full name of a queue given its id (or its full name).
func (c Conn) QueuePath(queue string) string {
	if strings.HasPrefix(queue, "projects/") {
		return queue
	}
	return fmt.Sprintf("projects/%s/locations/%s/queues/%s", c.Project, c.Location, queue)
}

// TaskPath returns the full name of a task given its id (or its full name) and its queue.
func (c Conn) TaskPath(queue, task string) string {
	if strings.HasPrefix(task, "projects/") {
		return task
	}
	return c.QueuePath(queue) + "/tasks/" + task
}
