package taskqueue

import (
	"errors"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// TestPingResult: any answer from Cloud Tasks counts, a refusal of an enqueuer to read the queue
// (PermissionDenied) and a missing queue (NotFound) included; no answer does not.
func TestPingResult(t *testing.T) {
	t.Parallel()
	tests := []struct {
		err  error
		want bool
	}{
		{nil, true},
		{status.Error(codes.NotFound, "queue"), true},
		{status.Error(codes.PermissionDenied, "cloudtasks.queues.get"), true},
		{status.Error(codes.Unavailable, "connection refused"), false},
		{status.Error(codes.DeadlineExceeded, "deadline"), false},
		{status.Error(codes.Unauthenticated, "no token"), false},
		{errors.New("dial"), false},
	}
	for _, tc := range tests {
		if got := pingResult(tc.err) == nil; got != tc.want {
			t.Errorf("pingResult(%v) success %v, want %v", tc.err, got, tc.want)
		}
	}
}
