package operator

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/wapipe/wapipe/internal/keyedid"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/taskqueue"
)

// Conn says where wapipe's state lives: a Google Cloud project's Firestore and Cloud Tasks, or the
// local emulators.
type Conn struct {
	Project           string
	Location          string
	TasksEmulatorHost string
	// FirestoreEmulatorHost names the Firestore emulator; when empty the client library reads
	// FIRESTORE_EMULATOR_HOST itself, and without it connects to Firestore.
	FirestoreEmulatorHost string
	FirestoreDatabase     string
	// Keyer names people's documents as the services do (their LOG_HASH_KEY); the development
	// key's when nil.
	Keyer *keyedid.Keyer
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

// Store opens the configured database as the services do; close it when done.
func (c Conn) Store(ctx context.Context) (*store.DB, error) {
	var db *store.DB
	var err error
	if c.FirestoreEmulatorHost != "" {
		db, err = store.OpenEmulator(ctx, c.FirestoreEmulatorHost, c.Project, c.FirestoreDatabase)
	} else {
		db, err = store.Open(ctx, c.Project, c.FirestoreDatabase)
	}
	if err == nil {
		db.SetKeyer(c.Keyer)
	}
	return db, err
}

// Queues opens the Cloud Tasks admin client: the emulator when TasksEmulatorHost is set, else
// Cloud Tasks with Application Default Credentials. Close it when done.
func (c Conn) Queues(ctx context.Context) (*taskqueue.Admin, error) {
	a, err := taskqueue.NewAdmin(ctx, c.Project, c.Location, c.TasksEmulatorHost)
	if err != nil {
		return nil, fmt.Errorf("taskqueue.NewAdmin: %w", err)
	}
	return a, nil
}
