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
