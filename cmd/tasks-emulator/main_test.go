package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/cloudtasks/apiv2/cloudtaskspb"
	"github.com/google/go-cmp/cmp"

	"github.com/wapipe/wapipe/internal/cloudtasksemu"
)

func TestParseFlags(t *testing.T) {
	t.Setenv("GOOGLE_CLOUD_PROJECT", "")
	t.Setenv("TASKS_LOCATION", "")
	tests := []struct {
		name    string
		args    []string
		want    config
		wantErr string
	}{
		{
			name: "defaults",
			want: config{addr: "127.0.0.1:8123", project: "wapipe-local", location: "us-central1", nameReservation: time.Hour, logLevel: "INFO"},
		},
		{
			name: "all flags",
			args: []string{"--addr", "0.0.0.0:9000", "--project", "p", "--location", "europe-west1", "--queues", "q.yaml", "--name-reservation", "1m", "--log-level", "DEBUG"},
			want: config{addr: "0.0.0.0:9000", project: "p", location: "europe-west1", queues: "q.yaml", nameReservation: time.Minute, logLevel: "DEBUG"},
		},
		{name: "unknown flag", args: []string{"--port", "1"}, wantErr: "flags"},
		{name: "stray argument", args: []string{"serve"}, wantErr: "unexpected argument"},
		{name: "empty project", args: []string{"--project", ""}, wantErr: "--project"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseFlags(tt.args, io.Discard)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("parseFlags error = %v, want one mentioning %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("parseFlags: %v", err)
			}
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(config{})); diff != "" {
				t.Errorf("config (-want, +got):\n%s", diff)
			}
		})
	}
}

func TestRunCreatesQueuesAndStops(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addrs := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"--addr", "127.0.0.1:0", "--project", "proj", "--location", "loc"}, io.Discard,
			func(s *cloudtasksemu.Server) { addrs <- s.Addr() })
	}()
	var addr string
	select {
	case addr = <-addrs:
	case err := <-done:
		t.Fatalf("run: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("the emulator did not start")
	}

	c, err := cloudtasksemu.NewClient(ctx, addr)
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	defer c.Close()
	for _, id := range []string{"wa-inbound", "wa-outbound"} {
		if _, err := c.GetQueue(ctx, &cloudtaskspb.GetQueueRequest{Name: "projects/proj/locations/loc/queues/" + id}); err != nil {
			t.Errorf("GetQueue %s: %v", id, err)
		}
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("run after cancel: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("run did not return after its context ended")
	}
}

func TestRunRejectsBadQueuesFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "queues.yaml")
	if err := os.WriteFile(path, []byte("queues:\n  bad_id:\n    rate_limits: {}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	err := run(context.Background(), []string{"--addr", "127.0.0.1:0", "--queues", path}, io.Discard, nil)
	if err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("run with a bad queues file = %v, want an error naming %s", err, path)
	}
}
