package graph

import (
	"context"
	"testing"
	"time"
)

// TestSpamRateLimitIsThrottledWithLongBackoff: Meta's 131048 (spam rate limit) limits the number,
// not the message, so the send is retried, and no sooner than the long backoff unless Meta says.
func TestSpamRateLimitIsThrottledWithLongBackoff(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		headers   map[string]string
		wantAfter time.Duration
	}{
		{"without Retry-After: the long backoff", nil, 10 * time.Minute},
		{"with Retry-After: Meta's wait", map[string]string{"Retry-After": "90"}, 90 * time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv, _ := endpoint(t, 400, metaError(131048, "OAuthException", "(#131048) Spam rate limit hit"), tc.headers)
			_, err := newTestClient(t, srv.URL).SendText(context.Background(), testPNID, testTo, Text{Body: "hello"}, SendOptions{})
			if got := Classify(err); got != Throttled {
				t.Errorf("Classify = %s; want throttled", got)
			}
			if !IsRetryable(err) {
				t.Errorf("IsRetryable = false; want true")
			}
			if got := RetryAfter(err); got != tc.wantAfter {
				t.Errorf("RetryAfter = %s; want %s", got, tc.wantAfter)
			}
		})
	}
}

// TestRetryAfterWithoutLongBackoff: other throttling codes keep the queue's own backoff (no
// Retry-After of ours), and a permanent error never waits.
func TestRetryAfterWithoutLongBackoff(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		err  error
	}{
		{"130429 without Retry-After", &Error{HTTPStatus: 400, Code: 130429, Kind: Throttled}},
		{"permanent 131026", &Error{HTTPStatus: 400, Code: 131026, Kind: Permanent}},
		{"131048 classified otherwise by a caller", &Error{HTTPStatus: 400, Code: 131048, Kind: Permanent}},
		{"not a graph error", context.DeadlineExceeded},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := RetryAfter(tc.err); got != 0 {
				t.Errorf("RetryAfter = %s; want 0", got)
			}
		})
	}
}
