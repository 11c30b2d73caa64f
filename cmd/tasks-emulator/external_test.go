package main

import (
	"context"
	"errors"
	"os"
	"testing"

	"cloud.google.com/go/cloudtasks/apiv2/cloudtaskspb"
	"google.golang.org/api/iterator"

	"github.com/wapipe/wapipe/internal/cloudtasksemu"
	"github.com/wapipe/wapipe/internal/testenv"
	"github.com/wapipe/wapipe/tasks"
)

// TestRunningEmulator checks the emulator binary that .ci/run starts, the way an operator would
// use it: CLOUD_TASKS_EMULATOR_HOST and the official client, with the queues of queues.yaml
// created at start. Outside CI it runs only when such an emulator is running.
func TestRunningEmulator(t *testing.T) {
	addr := os.Getenv("CLOUD_TASKS_EMULATOR_HOST")
	if addr == "" {
		if testenv.InCI() {
			t.Fatal("CLOUD_TASKS_EMULATOR_HOST is not set: .ci/run starts the emulator binary for this test")
		}
		t.Skip("no running emulator (CLOUD_TASKS_EMULATOR_HOST unset)")
	}
	project, location := os.Getenv("WAPIPE_TASKS_EMULATOR_PROJECT"), os.Getenv("WAPIPE_TASKS_EMULATOR_LOCATION")
	if project == "" {
		project = "wapipe-local"
	}
	if location == "" {
		location = "us-central1"
	}
	ctx := context.Background()
	c, err := cloudtasksemu.NewClient(ctx, addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	want := tasks.DefaultQueues()
	it := c.ListQueues(ctx, &cloudtaskspb.ListQueuesRequest{Parent: "projects/" + project + "/locations/" + location})
	seen := map[string]bool{}
	for {
		q, err := it.Next()
		if errors.Is(err, iterator.Done) {
			break
		}
		if err != nil {
			t.Fatalf("ListQueues: %v", err)
		}
		id := tasks.QueueID(q.Name)
		def, ok := want.Queue(id)
		if !ok {
			continue
		}
		seen[id] = true
		if q.RateLimits.MaxDispatchesPerSecond != def.RateLimits.MaxDispatchesPerSecond ||
			q.RetryConfig.MaxAttempts != def.RetryConfig.MaxAttempts ||
			q.RetryConfig.MinBackoff.AsDuration() != def.RetryConfig.MinBackoff.Duration {
			t.Errorf("queue %s = %v / %v, want the definition of queues.yaml", id, q.RateLimits, q.RetryConfig)
		}
	}
	for _, id := range want.IDs() {
		if !seen[id] {
			t.Errorf("queue %s not created at start", id)
		}
	}
}
