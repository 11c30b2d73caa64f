package tenantcache

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wapipe/wapipe/internal/secrets"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/tenant"
)

// clock is a settable time for cache tests.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// countingLoad answers val or err and counts its calls.
type countingLoad struct {
	calls atomic.Int32
	val   string
	err   error
}

func (l *countingLoad) load(context.Context, string) (string, error) {
	l.calls.Add(1)
	return l.val, l.err
}

func testCache(l *countingLoad, ttl time.Duration, clk *clock) *cache[string] {
	c := newCache(ttl, l.load, func(err error) bool { return errors.Is(err, store.ErrNotFound) })
	c.now = clk.now
	return c
}

func TestCacheServesWithinTTLAndReloadsAfter(t *testing.T) {
	t.Parallel()
	clk := &clock{t: time.Unix(1_800_000_000, 0)}
	l := &countingLoad{val: "acme"}
	c := testCache(l, 5*time.Second, clk)
	ctx := context.Background()
	for i := 0; i < 3; i++ {
		if v, err := c.get(ctx, "106540352242922"); err != nil || v != "acme" {
			t.Fatalf("get = %q, %v", v, err)
		}
		clk.add(time.Second)
	}
	if n := l.calls.Load(); n != 1 {
		t.Fatalf("%d loads within the TTL, want 1", n)
	}
	clk.add(3 * time.Second) // 6 s after the load
	l.val = "acme-renamed"
	if v, _ := c.get(ctx, "106540352242922"); v != "acme-renamed" {
		t.Errorf("after the TTL got %q, want the reloaded value", v)
	}
	if n := l.calls.Load(); n != 2 {
		t.Errorf("%d loads after the TTL, want 2", n)
	}
}

func TestCacheKeepsNotFoundButNotFailures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		err       error
		wantLoads int32
	}{
		{"not found is an answer: cached", store.ErrNotFound, 1},
		{"a store failure is not: loaded again", errors.New("firestore unavailable"), 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			l := &countingLoad{err: tc.err}
			c := testCache(l, 5*time.Second, &clock{t: time.Unix(1_800_000_000, 0)})
			for i := 0; i < 3; i++ {
				if _, err := c.get(context.Background(), "k"); !errors.Is(err, tc.err) {
					t.Fatalf("get error %v, want %v", err, tc.err)
				}
			}
			if n := l.calls.Load(); n != tc.wantLoads {
				t.Errorf("%d loads for 3 gets, want %d", n, tc.wantLoads)
			}
		})
	}
}

func TestCacheSharesOneLoadAmongConcurrentMisses(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	var calls atomic.Int32
	c := newCache(5*time.Second, func(context.Context, string) (string, error) {
		calls.Add(1)
		<-release
		return "acme", nil
	}, nil)
	const callers = 50
	var wg sync.WaitGroup
	errs := make(chan error, callers)
	for i := 0; i < callers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if v, err := c.get(context.Background(), "k"); err != nil || v != "acme" {
				errs <- errors.Join(err, errors.New("got "+v))
			}
		}()
	}
	// Every caller is waiting on the one load before it is released.
	deadline := time.Now().Add(5 * time.Second)
	for calls.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	close(release)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("%d loads for %d concurrent misses, want 1", n, callers)
	}
}

// TestCacheWaiterGivesUpAlone: a caller whose context ends stops waiting, and the shared load
// still completes for the others.
func TestCacheWaiterGivesUpAlone(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	c := newCache(5*time.Second, func(context.Context, string) (string, error) {
		<-release
		return "acme", nil
	}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.get(ctx, "k"); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled caller: %v, want context.Canceled", err)
	}
	close(release)
	if v, err := c.get(context.Background(), "k"); err != nil || v != "acme" {
		t.Errorf("next caller: %q, %v; want the load's value", v, err)
	}
}

// fakeKeeper decrypts "sealed:<token>" and checks the associated data.
type fakeKeeper struct {
	calls atomic.Int32
}

func (k *fakeKeeper) Decrypt(_ context.Context, ciphertext, ad []byte) ([]byte, error) {
	k.calls.Add(1)
	pt, ok := bytes.CutPrefix(ciphertext, []byte("sealed:"))
	if !ok {
		return nil, secrets.ErrMalformed
	}
	if !bytes.Equal(ad, secrets.AD("acme", secrets.PurposeAccessToken)) {
		return nil, secrets.ErrNotAuthentic
	}
	return pt, nil
}

func TestTokenCache(t *testing.T) {
	t.Parallel()
	clk := &clock{t: time.Unix(1_800_000_000, 0)}
	k := &fakeKeeper{}
	tc := NewTokenCache(k, 5*time.Minute)
	tc.entries.now = clk.now
	ctx := context.Background()
	setAt := clk.now()
	rec := store.TenantRecord{Tenant: &tenant.Tenant{ID: "acme"}, AccessToken: []byte("sealed:EAAone"), TokenSetAt: setAt}

	for i := 0; i < 3; i++ {
		if tok, err := tc.Token(ctx, rec); err != nil || tok != "EAAone" {
			t.Fatalf("Token = %q, %v", tok, err)
		}
	}
	if n := k.calls.Load(); n != 1 {
		t.Errorf("%d decryptions for 3 sends, want 1", n)
	}

	// A new token (set-token) is used at once, cache or not.
	rec.AccessToken, rec.TokenSetAt = []byte("sealed:EAAtwo"), setAt.Add(time.Minute)
	if tok, _ := tc.Token(ctx, rec); tok != "EAAtwo" {
		t.Errorf("after set-token got %q, want the new token", tok)
	}

	// After 5 minutes the plaintext is dropped and opened again.
	clk.add(5*time.Minute + time.Second)
	before := k.calls.Load()
	if tok, _ := tc.Token(ctx, rec); tok != "EAAtwo" || k.calls.Load() != before+1 {
		t.Errorf("after the TTL: %q with %d new decryptions, want EAAtwo with 1", tok, k.calls.Load()-before)
	}

	// No token, or one sealed for another tenant.
	if _, err := tc.Token(ctx, store.TenantRecord{Tenant: &tenant.Tenant{ID: "acme"}}); !errors.Is(err, ErrNoToken) {
		t.Errorf("no token: %v, want ErrNoToken", err)
	}
	other := store.TenantRecord{Tenant: &tenant.Tenant{ID: "other"}, AccessToken: []byte("sealed:EAAx"), TokenSetAt: setAt}
	if _, err := tc.Token(ctx, other); !errors.Is(err, secrets.ErrNotAuthentic) {
		t.Errorf("token of another tenant: %v, want ErrNotAuthentic", err)
	}
}
