package cloudtasksemu

import (
	"math"
	"time"
)

// retryPolicy is a queue's (or a task's) RetryConfig with the defaults applied.
type retryPolicy struct {
	maxAttempts      int32 // counts the first attempt; -1 is unlimited
	minBackoff       time.Duration
	maxBackoff       time.Duration
	maxDoublings     int32
	maxRetryDuration time.Duration // 0 is no age limit
}

// Cloud Tasks' defaults for a queue created through the API without a retry_config.
var defaultRetry = retryPolicy{
	maxAttempts:  100,
	minBackoff:   100 * time.Millisecond,
	maxBackoff:   time.Hour,
	maxDoublings: 16,
}

// backoff is the delay before retry number n (n = 1 is the wait after the first failed attempt),
// exactly as RetryConfig.max_doublings documents it: start at min_backoff, double max_doublings
// times, then grow linearly by min_backoff*2^max_doublings per retry, and never exceed
// max_backoff. With min 10s, max 300s and 3 doublings: 10s, 20s, 40s, 80s, 160s, 240s, 300s, 300s.
func backoff(p retryPolicy, n int) time.Duration {
	if n < 1 {
		n = 1
	}
	minB, maxB := float64(p.minBackoff), float64(p.maxBackoff)
	var d float64
	if k := n - 1; k <= int(p.maxDoublings) {
		d = minB * math.Pow(2, float64(k))
	} else {
		step := minB * math.Pow(2, float64(p.maxDoublings))
		d = step * float64(n-int(p.maxDoublings))
	}
	// Compare in floating point first: a large n overflows a Duration long before it matters.
	if d >= maxB || math.IsInf(d, 1) || math.IsNaN(d) {
		return p.maxBackoff
	}
	return time.Duration(d)
}

// retriesExhausted reports whether a task that has failed its attempts-th attempt, age after its
// first attempt, is given up. Cloud Tasks stops only when both limits are reached; an unlimited
// limit (max_attempts -1, max_retry_duration 0) counts as reached, so the other one decides, and
// with both unlimited the task is retried until the retention limit.
func retriesExhausted(p retryPolicy, attempts int32, age time.Duration) bool {
	if p.maxAttempts < 0 && p.maxRetryDuration <= 0 {
		return false
	}
	attemptsDone := p.maxAttempts < 0 || attempts >= p.maxAttempts
	ageDone := p.maxRetryDuration <= 0 || age >= p.maxRetryDuration
	return attemptsDone && ageDone
}
