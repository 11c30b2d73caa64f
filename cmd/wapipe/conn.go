package main

import (
	"context"
	"os"

	"github.com/wapipe/wapipe/internal/config"
	"github.com/wapipe/wapipe/internal/keyedid"
	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/internal/operator"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/tasks"
)

// connFlags are the settings that say where Firestore and Cloud Tasks are.
type connFlags struct {
	conn operator.Conn
}

func (c *connFlags) register(fs *flagSet) {
	c.registerFirestore(fs)
	fs.StringVar(&c.conn.Location, "location", env("TASKS_LOCATION", "us-central1"), "Cloud Tasks location (env TASKS_LOCATION)")
	fs.StringVar(&c.conn.TasksEmulatorHost, "tasks-emulator", os.Getenv("CLOUD_TASKS_EMULATOR_HOST"),
		"host:port of the Cloud Tasks emulator; empty means real Cloud Tasks with Application Default Credentials (env CLOUD_TASKS_EMULATOR_HOST)")
}

// registerFirestore registers the flags that say where Firestore is, for a command that needs no
// Cloud Tasks (send, whose --location is a message's); the location comes from TASKS_LOCATION.
func (c *connFlags) registerFirestore(fs *flagSet) {
	c.conn.Location = env("TASKS_LOCATION", "us-central1")
	fs.StringVar(&c.conn.Project, "project", os.Getenv("GOOGLE_CLOUD_PROJECT"), "Google Cloud project id (env GOOGLE_CLOUD_PROJECT)")
	fs.StringVar(&c.conn.FirestoreEmulatorHost, "firestore-emulator", "",
		"host:port of the Firestore emulator (default: env FIRESTORE_EMULATOR_HOST, read by the client library; empty means real Firestore)")
	fs.StringVar(&c.conn.FirestoreDatabase, "database", env("FIRESTORE_DATABASE", "(default)"), "Firestore database (env FIRESTORE_DATABASE)")
}

// resolve validates the settings, and keys people's ids as the services do.
func (c *connFlags) resolve() error {
	if err := c.conn.Validate(); err != nil {
		return usageError{err.Error()}
	}
	k, err := keyerFromEnv()
	if err != nil {
		return err
	}
	c.conn.Keyer = k
	return nil
}

// store opens the configured database as the services do. Against a real Firestore it needs the
// deployment's LOG_HASH_KEY: the documents about people are named with it, and under the dev key
// a lookup finds nobody and a write names people where no service looks (the dev default serves
// the emulator only).
func (c *connFlags) store(ctx context.Context) (*store.DB, error) {
	if os.Getenv("LOG_HASH_KEY") == "" && c.conn.FirestoreEmulatorHost == "" && os.Getenv("FIRESTORE_EMULATOR_HOST") == "" {
		return nil, usageErrorf("LOG_HASH_KEY is not set: wapipe names and finds people's documents with the deployment's key " +
			"(gcloud secrets versions access latest --secret=wapipe-log-hash-key); the dev default serves the Firestore emulator only")
	}
	return c.conn.Store(ctx)
}

// keyerFromEnv is the keyer of LOG_HASH_KEY (and LOG_HASH_KEY_PREVIOUS during a rotation), as
// the services build it; the dev key's when LOG_HASH_KEY and APP_ENV are unset (the local
// stack).
func keyerFromEnv() (*keyedid.Keyer, error) {
	key, appEnv := os.Getenv("LOG_HASH_KEY"), os.Getenv("APP_ENV")
	if key == "" && appEnv == "" {
		appEnv = "dev"
	}
	b := config.Base{AppEnv: appEnv, LogHashKey: key, LogHashKeyPrevious: os.Getenv("LOG_HASH_KEY_PREVIOUS")}
	if _, err := logging.HasherFromEnv(key, appEnv); err != nil {
		return nil, usageError{err.Error()}
	}
	return b.Keyer(), nil
}

// queueFlags are the queue ids the services use.
type queueFlags struct{ inbound, outbound string }

func (q *queueFlags) register(fs *flagSet) {
	fs.StringVar(&q.inbound, "inbound-queue", tasks.QueueID(env("INBOUND_TASK_QUEUE_NAME", tasks.InboundQueueID)), "inbound queue id (env INBOUND_TASK_QUEUE_NAME)")
	fs.StringVar(&q.outbound, "outbound-queue", tasks.QueueID(env("OUTBOUND_TASK_QUEUE_NAME", tasks.OutboundQueueID)), "outbound queue id (env OUTBOUND_TASK_QUEUE_NAME)")
}
