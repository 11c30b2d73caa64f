package delivery

import (
	"context"
	"errors"
	"net"
	"testing"

	"github.com/wapipe/wapipe/internal/graph"
)

func TestClassify(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name          string
		err           error
		wantRetryable bool
		wantDefinite  bool
		wantCode      int
	}{
		{"throttled by Meta (HTTP 400)", &graph.Error{HTTPStatus: 400, Code: 130429, Kind: graph.Throttled}, true, true, 130429},
		{"Meta's temporary error", &graph.Error{HTTPStatus: 503, Code: 2, Kind: graph.Temporary}, true, true, 2},
		{"gateway 502 without Meta's error", &graph.Error{HTTPStatus: 502, Kind: graph.Temporary}, true, false, 0},
		{"2xx Meta answered but unreadable", &graph.Error{HTTPStatus: 200, Kind: graph.Permanent}, true, false, 0},
		{"permanent", &graph.Error{HTTPStatus: 400, Code: 131026, Kind: graph.Permanent}, false, true, 131026},
		{"auth", &graph.Error{HTTPStatus: 401, Code: 190, Kind: graph.Auth}, false, true, 190},
		{"timeout", context.DeadlineExceeded, true, false, 0},
		{"network", &net.OpError{Op: "dial", Err: errors.New("connection refused")}, true, false, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := classify(tc.err)
			if retryable := !f.refused && !f.auth; retryable != tc.wantRetryable || f.definite != tc.wantDefinite || f.code != tc.wantCode {
				t.Errorf("classify = %+v, want retryable %v definite %v code %d", f, tc.wantRetryable, tc.wantDefinite, tc.wantCode)
			}
		})
	}
}
