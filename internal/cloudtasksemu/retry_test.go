package cloudtasksemu

import (
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc/codes"
)

func TestBackoff(t *testing.T) {
	t.Parallel()
	s := time.Second
	tests := []struct {
		name   string
		policy retryPolicy
		want   []time.Duration // retries 1, 2, 3...
	}{
		{
			// The example of RetryConfig.max_doublings' documentation.
			name:   "documented example",
			policy: retryPolicy{minBackoff: 10 * s, maxBackoff: 300 * s, maxDoublings: 3},
			want:   []time.Duration{10 * s, 20 * s, 40 * s, 80 * s, 160 * s, 240 * s, 300 * s, 300 * s},
		},
		{
			name:   "no doublings grows linearly",
			policy: retryPolicy{minBackoff: s, maxBackoff: 4 * s, maxDoublings: 0},
			want:   []time.Duration{s, 2 * s, 3 * s, 4 * s, 4 * s},
		},
		{
			name:   "wapipe queues.yaml",
			policy: retryPolicy{minBackoff: 5 * s, maxBackoff: 300 * s, maxDoublings: 5},
			want:   []time.Duration{5 * s, 10 * s, 20 * s, 40 * s, 80 * s, 160 * s, 300 * s, 300 * s},
		},
		{
			name:   "min equals max",
			policy: retryPolicy{minBackoff: 2 * s, maxBackoff: 2 * s, maxDoublings: 16},
			want:   []time.Duration{2 * s, 2 * s, 2 * s},
		},
		{
			name:   "sub-second defaults",
			policy: defaultRetry,
			want:   []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var got []time.Duration
			for n := 1; n <= len(tt.want); n++ {
				got = append(got, backoff(tt.policy, n))
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("backoffs (-want, +got):\n%s", diff)
			}
		})
	}
	t.Run("huge retry numbers stay at max_backoff", func(t *testing.T) {
		t.Parallel()
		for _, n := range []int{64, 1000, 1 << 30} {
			if got := backoff(defaultRetry, n); got != time.Hour {
				t.Errorf("backoff(default, %d) = %v, want 1h", n, got)
			}
		}
	})
}

func TestRetriesExhausted(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		policy   retryPolicy
		attempts int32
		age      time.Duration
		want     bool
	}{
		{"attempts left", retryPolicy{maxAttempts: 3}, 2, time.Hour, false},
		{"last attempt failed, no age limit", retryPolicy{maxAttempts: 3}, 3, 0, true},
		{"attempts used but age limit not reached", retryPolicy{maxAttempts: 3, maxRetryDuration: time.Minute}, 3, 30 * time.Second, false},
		{"both limits reached", retryPolicy{maxAttempts: 3, maxRetryDuration: time.Minute}, 3, time.Minute, true},
		{"age reached but attempts left", retryPolicy{maxAttempts: 3, maxRetryDuration: time.Minute}, 2, time.Hour, false},
		{"unlimited attempts, age limit decides", retryPolicy{maxAttempts: -1, maxRetryDuration: time.Minute}, 1000, time.Minute, true},
		{"unlimited attempts, age left", retryPolicy{maxAttempts: -1, maxRetryDuration: time.Minute}, 1000, time.Second, false},
		{"both unlimited", retryPolicy{maxAttempts: -1}, 1 << 30, 1000 * time.Hour, false},
		{"single attempt", retryPolicy{maxAttempts: 1}, 1, 0, true},
	}
	for _, tt := range tests {
		if got := retriesExhausted(tt.policy, tt.attempts, tt.age); got != tt.want {
			t.Errorf("%s: retriesExhausted = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestMaxBurstSize(t *testing.T) {
	t.Parallel()
	tests := []struct {
		rate float64
		want int32
	}{
		{500, 100}, // observed in production (the default queue)
		{5, 10},    // observed
		{1, 10},    // observed
		{0.5, 10},
		{10, 10},
		{20, 20},
		{99.5, 100},
		{100, 100},
		{250, 100},
	}
	for _, tt := range tests {
		if got := maxBurstSize(tt.rate); got != tt.want {
			t.Errorf("maxBurstSize(%v) = %d, want %d", tt.rate, got, tt.want)
		}
	}
}

func TestFormatETA(t *testing.T) {
	t.Parallel()
	at := time.Date(2024, 5, 6, 7, 8, 9, 12_345_678, time.UTC)
	if got, want := formatETA(at.UnixNano()), "1714979289.012345"; got != want {
		t.Errorf("formatETA = %q, want %q", got, want)
	}
}

func TestParseRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)
	tests := []struct {
		in   string
		want time.Duration
	}{
		{"", 0},
		{"3", 3 * time.Second},
		{"0", 0},
		{"-4", 0},
		{"soon", 0},
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second},
		{now.Add(-time.Minute).Format(http.TimeFormat), 0},
	}
	for _, tt := range tests {
		if got := parseRetryAfter(tt.in, now); got != tt.want {
			t.Errorf("parseRetryAfter(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestCodeForHTTP(t *testing.T) {
	t.Parallel()
	tests := []struct {
		status int
		errMsg string
		want   codes.Code
	}{
		{200, "", codes.OK},
		{204, "", codes.OK},
		{302, "", codes.Unknown},
		{400, "", codes.InvalidArgument},
		{401, "", codes.Unauthenticated},
		{403, "", codes.PermissionDenied},
		{404, "", codes.NotFound},
		{409, "", codes.Aborted},
		{418, "", codes.FailedPrecondition},
		{429, "", codes.ResourceExhausted},
		{500, "", codes.Internal},
		{501, "", codes.Unimplemented},
		{503, "", codes.Unavailable},
		{504, "", codes.DeadlineExceeded},
		{0, "dispatch deadline exceeded", codes.DeadlineExceeded},
		{0, "connection refused", codes.Unavailable},
	}
	for _, tt := range tests {
		if got := codeForHTTP(tt.status, tt.errMsg); got != tt.want {
			t.Errorf("codeForHTTP(%d, %q) = %v, want %v", tt.status, tt.errMsg, got, tt.want)
		}
	}
}
