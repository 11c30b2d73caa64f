package console

import (
	"errors"
	"fmt"

	"github.com/wapipe/wapipe/internal/config"
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
}

// Validate checks the console's values on top of the shared ones.
func (c *Config) Validate() error {
	errs := []error{c.Base.Validate()}
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
