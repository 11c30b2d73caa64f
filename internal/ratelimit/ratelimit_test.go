package ratelimit_test

import (
	"fmt"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/wapipe/wapipe/internal/ratelimit"
)

// TestBurstThenRate: a key is served burst times at once, then refused with the time until its
// next token, then served again at the rate; another key has its own bucket.
func TestBurstThenRate(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_700_000_000, 0)
	l := ratelimit.New(2, 3, ratelimit.Options{Now: func() time.Time { return now }})
	for i := range 3 {
		if d := l.Allow("a"); !d.OK {
			t.Fatalf("request %d of the burst refused", i+1)
		}
	}
	d := l.Allow("a")
	if d.OK || d.RetryAfter != 500*time.Millisecond || !d.First {
		t.Fatalf("past the burst: %+v, want refused, retry after 500ms, first", d)
	}
	if d := l.Allow("a"); d.OK || d.First {
		t.Fatalf("second refusal: %+v, want refused, not first", d)
	}
	if d := l.Allow("b"); !d.OK {
		t.Fatal("another key refused")
	}
	now = now.Add(500 * time.Millisecond)
	if d := l.Allow("a"); !d.OK {
		t.Fatalf("after the refill period: %+v, want served", d)
	}
	if d := l.Allow("a"); d.OK || !d.First {
		t.Fatalf("after being served again: %+v, want refused, first", d)
	}
}

// TestCheckTakesNoToken: Check answers whether a key has a token without taking one, so a
// caller can refuse a key that is already over its limit before paying for the request, and
// charge it only once the request turned out to count (the api: an address pays only for the
// keys that fail).
func TestCheckTakesNoToken(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_700_000_000, 0)
	l := ratelimit.New(1, 2, ratelimit.Options{Now: func() time.Time { return now }})
	for range 5 {
		if d := l.Check("a"); !d.OK {
			t.Fatalf("Check of a fresh key: %+v, want OK", d)
		}
	}
	if n := l.Len(); n != 0 {
		t.Fatalf("Check made %d buckets, want none", n)
	}
	l.Allow("a")
	l.Allow("a")
	d := l.Check("a")
	if d.OK || d.RetryAfter != time.Second || !d.First {
		t.Fatalf("Check past the burst: %+v, want refused, retry after 1s, first", d)
	}
	if d := l.Allow("a"); d.OK || d.First {
		t.Fatalf("Allow after a refused Check: %+v, want refused, not first (one log line per episode)", d)
	}
	now = now.Add(time.Second)
	if d := l.Check("a"); !d.OK {
		t.Fatalf("Check after the refill: %+v, want OK", d)
	}
	if d := l.Allow("a"); !d.OK {
		t.Fatal("the token Check saw was taken by Check")
	}
}

// TestAllowLimit: a key held to a limit of its own (a tenant's API keys) gets that burst and
// rate, other keys the Limiter's; a changed limit applies from the next request, keeping the
// tokens left up to the new burst.
func TestAllowLimit(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_700_000_000, 0)
	l := ratelimit.New(1, 2, ratelimit.Options{Now: func() time.Time { return now }})
	own := ratelimit.Limit{Rate: 10, Burst: 5}
	served := func(key string, lim ratelimit.Limit, n int) int {
		ok := 0
		for range n {
			if l.AllowLimit(key, lim).OK {
				ok++
			}
		}
		return ok
	}
	if got := served("big", own, 8); got != 5 {
		t.Fatalf("own limit: %d of 8 served at once, want its burst of 5", got)
	}
	if got := served("plain", ratelimit.Limit{}, 8); got != 2 {
		t.Fatalf("zero limit: %d of 8 served at once, want the Limiter's burst of 2", got)
	}
	if d := l.AllowLimit("big", own); d.RetryAfter != 100*time.Millisecond {
		t.Fatalf("own limit refused: retry after %s, want 100ms at 10/s", d.RetryAfter)
	}
	now = now.Add(200 * time.Millisecond)
	if got := served("big", own, 5); got != 2 {
		t.Fatalf("after 200ms at 10/s: %d served, want 2", got)
	}
	// Lowered: what is left is capped to the new burst. Raised: the tokens left are kept (no
	// fresh burst for a key in use), and the bucket refills up to the new burst.
	now = now.Add(time.Second)
	if got := served("big", ratelimit.Limit{Rate: 10, Burst: 3}, 8); got != 3 {
		t.Fatalf("burst lowered to 3: %d served, want 3", got)
	}
	now = now.Add(100 * time.Millisecond)
	raised := ratelimit.Limit{Rate: 10, Burst: 20}
	if got := served("big", raised, 30); got != 1 {
		t.Fatalf("burst raised to 20, 100ms after emptying at 10/s: %d served, want the 1 refilled", got)
	}
	now = now.Add(10 * time.Second)
	if got := served("big", raised, 30); got != 20 {
		t.Fatalf("raised burst after the key sat idle: %d served, want 20", got)
	}
}

// TestIdleBucketsDropped: buckets that have refilled are forgotten, so a flood of distinct keys
// keeps at most MaxKeys buckets; when all are busy a new key is refused (fail closed), and once
// they are idle new keys are served again.
func TestIdleBucketsDropped(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_700_000_000, 0)
	l := ratelimit.New(10, 20, ratelimit.Options{Now: func() time.Time { return now }, MaxKeys: 100})
	for i := range 100 {
		if d := l.Allow(fmt.Sprintf("k%d", i)); !d.OK {
			t.Fatalf("key %d refused", i)
		}
	}
	if d := l.Allow("one-too-many"); d.OK || d.RetryAfter <= 0 {
		t.Fatalf("a new key with every bucket busy: %+v, want refused with a retry time", d)
	}
	if n := l.Len(); n != 100 {
		t.Fatalf("%d buckets, want 100", n)
	}
	now = now.Add(2 * time.Second) // 20 tokens at 10/s: every bucket is full again
	if d := l.Allow("late"); !d.OK {
		t.Fatal("a new key refused once the others went idle")
	}
	if n := l.Len(); n != 1 {
		t.Fatalf("%d buckets after the sweep, want 1", n)
	}
}

// TestConcurrentAllow: under -race, many goroutines on the same keys are served exactly the burst.
func TestConcurrentAllow(t *testing.T) {
	t.Parallel()
	// A fixed time: no token comes back while they run.
	now := time.Unix(1_700_000_000, 0)
	l := ratelimit.New(1, 50, ratelimit.Options{Now: func() time.Time { return now }})
	var mu sync.Mutex
	served := 0
	var wg sync.WaitGroup
	for range 200 {
		wg.Go(func() {
			if l.Allow("k").OK {
				mu.Lock()
				served++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if served != 50 {
		t.Fatalf("served %d, want the burst of 50", served)
	}
}

func TestClientAddr(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		remote  string
		xff     []string
		trusted bool
		want    string
	}{
		{"remote v4", "192.0.2.7:5555", nil, false, "192.0.2.7"},
		{"remote v6 by /64", "[2001:db8:1:2:3:4:5:6]:443", nil, false, "2001:db8:1:2::/64"},
		{"mapped v4", "[::ffff:192.0.2.9]:80", nil, false, "192.0.2.9"},
		{"forwarded ignored when not trusted", "127.0.0.1:1", []string{"198.51.100.1"}, false, "127.0.0.1"},
		{"last entry, the front end's", "169.254.1.1:1", []string{"203.0.113.5, 198.51.100.1"}, true, "198.51.100.1"},
		{"client-supplied first entry ignored", "169.254.1.1:1", []string{"1.2.3.4,5.6.7.8", "198.51.100.2"}, true, "198.51.100.2"},
		{"forwarded v6", "169.254.1.1:1", []string{"2001:db8:aa:bb:1::1"}, true, "2001:db8:aa:bb::/64"},
		{"garbage falls back to remote", "169.254.1.1:1", []string{"1.2.3.4, not-an-ip"}, true, "169.254.1.1"},
		{"no header falls back to remote", "169.254.1.1:1", nil, true, "169.254.1.1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := httptest.NewRequest("GET", "/", nil)
			r.RemoteAddr = tc.remote
			for _, v := range tc.xff {
				r.Header.Add("X-Forwarded-For", v)
			}
			if got := ratelimit.ClientAddr(r, tc.trusted); got != tc.want {
				t.Errorf("ClientAddr = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestRetryAfterSeconds(t *testing.T) {
	t.Parallel()
	tests := []struct {
		after time.Duration
		want  int
	}{{0, 1}, {time.Millisecond, 1}, {time.Second, 1}, {1001 * time.Millisecond, 2}, {6 * time.Second, 6}}
	for _, tc := range tests {
		if got := (ratelimit.Decision{RetryAfter: tc.after}).RetryAfterSeconds(); got != tc.want {
			t.Errorf("RetryAfterSeconds(%s) = %d, want %d", tc.after, got, tc.want)
		}
	}
}
