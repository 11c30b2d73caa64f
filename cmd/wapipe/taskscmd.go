package main

import (
	"context"
	"io"
	"strings"

	"github.com/wapipe/wapipe/internal/operator"
	"github.com/wapipe/wapipe/tasks"
)

const tasksUsage = `Usage: wapipe tasks list [flags]
       wapipe tasks describe NAME|ID [flags]

Reads the tasks of a queue like gcloud tasks list/describe, from the Cloud Tasks emulator
(CLOUD_TASKS_EMULATOR_HOST) or from Cloud Tasks (Application Default Credentials).
list shows each task's id, schedule time, dispatch and response counts and last attempt status.
describe shows one task in full (an id ending in -out is looked up in wa-outbound unless --queue says otherwise): attempts, URL, headers (X-Internal-Token and Authorization
masked) and the JSON body (message text, names and places redacted, phone numbers hashed).`

func runTasks(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("tasks", tasksUsage)
	var (
		c      connFlags
		queue  string
		limit  int
		asJSON bool
	)
	c.register(fs)
	fs.StringVar(&queue, "queue", tasks.InboundQueueID, "queue id (or full name)")
	fs.IntVar(&limit, "limit", 100, "list at most this many tasks (0: all)")
	fs.BoolVar(&asJSON, "json", false, "print JSON")
	pos, err := fs.parse(args, stdout)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usageErrorf("want list or describe (see wapipe tasks --help)")
	}
	switch {
	case pos[0] == "list" && len(pos) != 1:
		return usageErrorf("list takes no argument, got %q", pos[1])
	case pos[0] == "describe" && len(pos) != 2:
		return usageErrorf("describe takes one task name or id")
	case pos[0] != "list" && pos[0] != "describe":
		return usageErrorf("unknown tasks command %q: want list or describe", pos[0])
	}
	if err := c.resolve(); err != nil {
		return err
	}
	queues, err := c.conn.Queues(ctx)
	if err != nil {
		return err
	}
	defer queues.Close()

	if pos[0] == "list" {
		ts, err := operator.ListTasks(ctx, queues, queue, limit)
		if err != nil {
			return err
		}
		if asJSON {
			if ts == nil {
				ts = []operator.Task{}
			}
			return operator.WriteJSON(stdout, ts)
		}
		return operator.WriteTaskTable(stdout, ts)
	}
	if !isSet(fs, "queue") && strings.HasSuffix(pos[1], "-out") {
		// Outbound task ids end in -out (tasks.OutboundTaskID): no need to name the queue.
		queue = tasks.OutboundQueueID
	}
	h, err := hasherFromEnv(stderr)
	if err != nil {
		return err
	}
	t, err := operator.GetTask(ctx, h, queues, queues.TaskPath(queue, pos[1]))
	if err != nil {
		return err
	}
	if asJSON {
		return operator.WriteJSON(stdout, t)
	}
	return operator.WriteTask(stdout, t)
}
