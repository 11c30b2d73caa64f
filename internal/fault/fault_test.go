package fault_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/wapipe/wapipe/internal/fault"
)

var (
	errBusy = fault.NewKind(fault.Retryable, "svc_busy", "svc busy")
	errBad  = fault.NewKind(fault.Permanent, "svc_bad", "svc refused")
)

// TestError: a classified failure, however wrapped, says its class, code and wait through
// errors.Is and errors.As; its text names kind, status, reason and wait and never the cause's text.
func TestError(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		err       error
		wantKind  error
		wantClass fault.Class
		wantCode  string
		wantWait  time.Duration
		wantText  string
	}{
		{"retryable with a wait", &fault.Error{Kind: errBusy, HTTPStatus: 503, RetryAfter: 7 * time.Second, Reason: "overloaded",
			Err: errors.New("body quoting secrets")}, errBusy, fault.Retryable, "svc_busy", 7 * time.Second,
			"svc busy (HTTP 503): overloaded (retry after 7s)"},
		{"permanent, wrapped", fmt.Errorf("call: %w", &fault.Error{Kind: errBad, HTTPStatus: 400, Reason: "bad request"}),
			errBad, fault.Permanent, "svc_bad", 0, "call: svc refused (HTTP 400): bad request"},
		{"cause reachable", &fault.Error{Kind: errBusy, Reason: "timed out", Err: context.DeadlineExceeded},
			context.DeadlineExceeded, fault.Retryable, "svc_busy", 0, "svc busy: timed out"},
		{"a kind without a class counts as retryable", &fault.Error{Kind: errors.New("plain")}, nil, fault.Retryable, "", 0, "plain"},
		{"not classified", errors.New("other"), nil, 0, "", 0, "other"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if tc.wantKind != nil && !errors.Is(tc.err, tc.wantKind) {
				t.Errorf("errors.Is(err, %v) = false", tc.wantKind)
			}
			if got := fault.ClassOf(tc.err); got != tc.wantClass {
				t.Errorf("ClassOf = %s, want %s", got, tc.wantClass)
			}
			if got := fault.CodeOf(tc.err); got != tc.wantCode {
				t.Errorf("CodeOf = %q, want %q", got, tc.wantCode)
			}
			if got, ok := fault.RetryAfter(tc.err); got != tc.wantWait || ok != (tc.wantWait > 0) {
				t.Errorf("RetryAfter = %v, %v, want %v", got, ok, tc.wantWait)
			}
			if got := tc.err.Error(); got != tc.wantText {
				t.Errorf("Error() = %q, want %q", got, tc.wantText)
			}
		})
	}
	if errors.Is(&fault.Error{Kind: errBusy}, errBad) {
		t.Error("one kind matched another")
	}
}
