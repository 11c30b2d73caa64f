package tenantcache

import (
	"context"
	"sync"
	"time"
)

// cache is a per-instance read-through cache with a time to live, for the tenant lookups on the
// hot path. Concurrent misses of one key share one load (single flight); a load's error is
// cached only when negative says it is an answer (the key does not exist), never when the
// store failed, so the next call tries again. It is safe for concurrent use.
type cache[V any] struct {
	ttl time.Duration
	// load reads a key from the source of truth.
	load func(ctx context.Context, key string) (V, error)
	// negative reports whether an error from load is an answer to cache ("not found").
	negative func(error) bool
	now      func() time.Time
	// loadTimeout bounds a shared load, which runs detached from the caller that started it
	// (that caller giving up must not fail the others).
	loadTimeout time.Duration
	// maxEntries triggers a sweep of expired entries when exceeded.
	maxEntries int

	mu      sync.Mutex
	entries map[string]*cacheEntry[V]
}

type cacheEntry[V any] struct {
	// done is closed when the load ends; val, err and expires are set before.
	done    chan struct{}
	val     V
	err     error
	expires time.Time
}

func newCache[V any](ttl time.Duration, load func(context.Context, string) (V, error), negative func(error) bool) *cache[V] {
	if negative == nil {
		negative = func(error) bool { return false }
	}
	return &cache[V]{ttl: ttl, load: load, negative: negative, now: time.Now, loadTimeout: 10 * time.Second,
		maxEntries: 10000, entries: map[string]*cacheEntry[V]{}}
}

// get returns the value of key: cached while fresh, else loaded once for every concurrent
// caller.
func (c *cache[V]) get(ctx context.Context, key string) (V, error) {
	return c.getWith(ctx, key, c.load)
}

// getWith is get with the load for this miss, for values whose key does not say how to load
// them (a token: the key names it, the ciphertext comes from the tenant).
func (c *cache[V]) getWith(ctx context.Context, key string, load func(context.Context, string) (V, error)) (V, error) {
	c.mu.Lock()
	e, ok := c.entries[key]
	if ok {
		select {
		case <-e.done:
			if c.now().Before(e.expires) {
				c.mu.Unlock()
				return e.val, e.err
			}
			ok = false // expired: load again below
		default:
			// A load is in flight: wait for it.
		}
	}
	if !ok {
		e = &cacheEntry[V]{done: make(chan struct{})}
		if len(c.entries) >= c.maxEntries {
			c.sweepLocked()
		}
		c.entries[key] = e
		c.mu.Unlock()
		go c.fill(context.WithoutCancel(ctx), key, e, load)
	} else {
		c.mu.Unlock()
	}
	select {
	case <-e.done:
		return e.val, e.err
	case <-ctx.Done():
		var zero V
		return zero, ctx.Err()
	}
}

// fill loads key into e. An error that is not an answer removes the entry, so the next get
// loads again.
func (c *cache[V]) fill(ctx context.Context, key string, e *cacheEntry[V], load func(context.Context, string) (V, error)) {
	ctx, cancel := context.WithTimeout(ctx, c.loadTimeout)
	defer cancel()
	val, err := load(ctx, key)
	c.mu.Lock()
	defer c.mu.Unlock()
	e.val, e.err, e.expires = val, err, c.now().Add(c.ttl)
	if err != nil && !c.negative(err) {
		if c.entries[key] == e {
			delete(c.entries, key)
		}
	}
	close(e.done)
}

// sweepLocked drops the expired entries; c.mu is held.
func (c *cache[V]) sweepLocked() {
	now := c.now()
	for k, e := range c.entries {
		select {
		case <-e.done:
			if !now.Before(e.expires) {
				delete(c.entries, k)
			}
		default:
		}
	}
}

// forget drops the entries whose key match says, loaded or in flight: the next get of such a
// key loads again (an in-flight load still answers its waiters, but is no longer kept).
func (c *cache[V]) forget(match func(key string) bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range c.entries {
		if match(k) {
			delete(c.entries, k)
		}
	}
}
