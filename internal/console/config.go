package console

import (
	"context"
	"errors"
	"fmt"
	"net/url"

	"github.com/wapipe/wapipe/internal/config"
	"github.com/wapipe/wapipe/internal/operator"
	"github.com/wapipe/wapipe/internal/secrets"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/tasks"
)

// Config is the console service's configuration, read from the environment. The shared Base
// gives Firestore, Cloud Tasks and the worker's URL and token: a replay creates the same task
// `wapipe replay` does.
type Config struct {
	config.Base

	// InboundQueue and OutboundQueue are the queues the health report watches.
	InboundQueue  string `env:"INBOUND_TASK_QUEUE_NAME, default=wa-inbound"`
	OutboundQueue string `env:"OUTBOUND_TASK_QUEUE_NAME, default=wa-outbound"`
	// PublicBaseURL is the api service's public URL: with it set, a tenant's Reconnect button
	// makes an Embedded Signup link (as `wapipe tenants connect-link`), sealed with
	// ConnectStateKMSKeyName's key (the development key in dev when unset). Unset, Reconnect says
	// it is not available.
	PublicBaseURL string `env:"PUBLIC_BASE_URL"`
	// ConnectStateKMSKeyName is the key of connect links' states. The console holds no key of
	// tenant secrets (KMS_KEY_NAME): it neither reads nor writes them.
	ConnectStateKMSKeyName string `env:"CONNECT_STATE_KMS_KEY_NAME"`
}

// Secrets is the configuration of the keeper that seals connect links.
func (c *Config) Secrets() secrets.Config {
	return secrets.Config{KMSKeyName: c.ConnectStateKMSKeyName, Dev: c.IsDev(), Variable: "CONNECT_STATE_KMS_KEY_NAME"}
}

// OpenKeeper opens the console's keeper: connect states only (secrets.Split), so a tenant secret
// is refused rather than sealed under the states' key. The caller closes it.
func (c *Config) OpenKeeper(ctx context.Context) (*secrets.Keeper, error) {
	state := c.Secrets()
	k, err := secrets.NewSplit(ctx, nil, &state)
	if err != nil {
		return nil, fmt.Errorf("secrets.NewSplit: %w", err)
	}
	return k, nil
}

// UseInboundDatabase points the inspector at the webhook's own database
// (INBOUND_FIRESTORE_DATABASE) for dedupe markers, when it is not FIRESTORE_DATABASE, and returns
// what closes it.
func (c *Config) UseInboundDatabase(ctx context.Context, deps *Deps) (func(), error) {
	in := c.InboundDatabase()
	inspector, ok := deps.Inspector.(*operator.Inspector)
	if in == c.FirestoreDatabase || !ok {
		return func() {}, nil
	}
	db, err := store.Open(ctx, c.ProjectID, in)
	if err != nil {
		return nil, err
	}
	inspector.Markers = store.NewMarkers(db, store.MarkerOptions{EventRef: c.Hasher().Ref})
	return func() { db.Close() }, nil
}

// Validate checks the console's values on top of the shared ones.
func (c *Config) Validate() error {
	errs := []error{c.Base.Validate()}
	if c.PublicBaseURL != "" {
		if u, err := url.Parse(c.PublicBaseURL); err != nil || u.Host == "" || (u.Scheme != "https" && !(c.IsDev() && u.Scheme == "http")) {
			errs = append(errs, errors.New("PUBLIC_BASE_URL: must be the api service's absolute https URL (http allowed in dev)"))
		}
		errs = append(errs, c.Secrets().Validate())
	}
	for _, q := range []struct{ env, id string }{
		{"INBOUND_TASK_QUEUE_NAME", tasks.QueueID(c.InboundQueue)},
		{"OUTBOUND_TASK_QUEUE_NAME", tasks.QueueID(c.OutboundQueue)},
	} {
		if _, ok := tasks.DefaultQueues().Queue(q.id); !ok {
			errs = append(errs, fmt.Errorf("%s: queue %q is not defined in tasks/queues.yaml", q.env, q.id))
		}
	}
	return errors.Join(errs...)
}
