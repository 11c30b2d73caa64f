package taskqueue_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/wapipe/wapipe/internal/taskqueue"
	"github.com/wapipe/wapipe/tasks"
)

// TestPing (issue 35 item 8): Ping answers nil once Cloud Tasks has answered, a queue that does
// not exist included (the call opens the connection, whatever the queue), and an error when Cloud
// Tasks cannot be reached.
func TestPing(t *testing.T) {
	t.Parallel()
	admin, tq := newAdmin(t)
	ctx := context.Background()
	for _, queue := range []string{tasks.InboundQueueID, "no-such-queue"} {
		if err := tq.Ping(ctx, queue); err != nil {
			t.Errorf("Client.Ping(%s) = %v, want nil", queue, err)
		}
		if err := admin.Ping(ctx, queue); err != nil {
			t.Errorf("Admin.Ping(%s) = %v, want nil", queue, err)
		}
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := ln.Addr().String()
	ln.Close()
	gone, err := taskqueue.New(ctx, taskqueue.Config{ProjectID: project, Location: location, EmulatorHost: down})
	if err != nil {
		t.Fatal(err)
	}
	defer gone.Close()
	short, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	if err := gone.Ping(short, tasks.InboundQueueID); err == nil {
		t.Error("Ping of an unreachable Cloud Tasks = nil, want an error")
	}
}
