package ratelimit

import (
	"math"
	"sync"
	"time"
)

// DefaultMaxKeys bounds the buckets a Limiter keeps: about 100 bytes each.
const DefaultMaxKeys = 100_000

// Options adjust a Limiter; zero fields take the defaults.
type Options struct {
	// MaxKeys bounds the buckets kept at once (DefaultMaxKeys). When every one is in use, a key
	// without a bucket is refused until some go idle: the limit fails closed.
	MaxKeys int
	// Now is time.Now when nil.
	Now func() time.Time
}

// Limiter is a token bucket per key: each key may be served rate times a second on average, and
// burst times at once.
type Limiter struct {
	rate  float64
	burst float64
	max   int
	now   func() time.Time

	mu      sync.Mutex
	buckets map[string]*bucket
	swept   time.Time
}

type bucket struct {
	tokens float64
	at     time.Time // when tokens was last brought up to date
	// rate and burst are the bucket's own: the Limiter's, or what AllowLimit last gave.
	rate, burst float64
	// refused is true after a refusal, until the key is served again.
	refused bool
}

// New returns a limiter of rate a second with room for burst at once; rate must be positive and
// burst at least 1.
func New(rate float64, burst int, o Options) *Limiter {
	if o.MaxKeys <= 0 {
		o.MaxKeys = DefaultMaxKeys
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Limiter{rate: rate, burst: float64(max(burst, 1)), max: o.MaxKeys, now: o.Now, buckets: map[string]*bucket{}}
}

// Decision is the answer to one request.
type Decision struct {
	// OK: serve the request.
	OK bool
	// RetryAfter is, when refused, how long until the key has a token again.
	RetryAfter time.Duration
	// First is true on the first refusal since the key was last served: one log line per episode
	// instead of one per refused request.
	First bool
}

// RetryAfterSeconds is RetryAfter in whole seconds, rounded up and at least 1: the value of a
// refusal's Retry-After header.
func (d Decision) RetryAfterSeconds() int {
	return max(1, int((d.RetryAfter+time.Second-1)/time.Second))
}

// Allow takes a token from key's bucket.
func (l *Limiter) Allow(key string) Decision {
	return l.AllowLimit(key, Limit{Rate: l.rate, Burst: int(l.burst)})
}

// Limit is a bucket's rate a second and burst, for the keys whose limit is their own (a tenant's
// API keys, from its file).
type Limit struct {
	Rate  float64
	Burst int
}

// AllowLimit is Allow with key's bucket held to lim instead of the Limiter's rate and burst (a
// non-positive field takes the Limiter's). A new limit applies from this request on: the tokens
// the bucket has are kept, up to the new burst.
func (l *Limiter) AllowLimit(key string, lim Limit) Decision {
	rate, burst := l.rate, l.burst
	if lim.Rate > 0 {
		rate = lim.Rate
	}
	if lim.Burst > 0 {
		burst = float64(lim.Burst)
	}
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	b, ok := l.bucket(key, now)
	if !ok {
		return Decision{RetryAfter: time.Second, First: false}
	}
	if b == nil {
		b = &bucket{tokens: burst, at: now, rate: rate, burst: burst}
		l.buckets[key] = b
	}
	l.refill(b, now)
	b.rate, b.burst, b.tokens = rate, burst, min(b.tokens, burst)
	if b.tokens >= 1 {
		b.tokens--
		b.refused = false
		return Decision{OK: true}
	}
	return l.refuse(b)
}

// Check answers as Allow would, without taking a token: whether key has one now. A key without
// a bucket has its whole burst. A refusal counts as one for Decision.First, so a caller that
// checks and then allows logs one line per episode either way.
func (l *Limiter) Check(key string) Decision {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.buckets[key]
	if b == nil {
		return Decision{OK: true}
	}
	l.refill(b, now)
	if b.tokens >= 1 {
		return Decision{OK: true}
	}
	return l.refuse(b)
}

// bucket returns key's bucket, nil when it has none yet and there is room for one, and false
// when every bucket is busy: a new key would either cost memory without bound or, with an old
// bucket evicted for it, give its owner a fresh burst. Called with mu held.
func (l *Limiter) bucket(key string, now time.Time) (*bucket, bool) {
	_, known := l.buckets[key]
	if (!known && len(l.buckets) >= l.max) || now.Sub(l.swept) >= l.idle() {
		// Sweep for a new key when full, else once per refill period, not per request: the cost
		// stays linear in the traffic. A bucket it drops was full, the same as none.
		l.sweep(now)
	}
	b, ok := l.buckets[key]
	if !ok && len(l.buckets) >= l.max {
		return nil, false
	}
	return b, true
}

// refuse is the refusal of b's request: the time until b has a token again. Called with mu held.
func (l *Limiter) refuse(b *bucket) Decision {
	wait := time.Duration(math.Ceil((1 - b.tokens) / b.rate * float64(time.Second)))
	first := !b.refused
	b.refused = true
	return Decision{RetryAfter: wait, First: first}
}

// Len returns the buckets kept now.
func (l *Limiter) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.buckets)
}

// idle is how long an emptied bucket takes to fill: a full bucket is the same as none.
func (l *Limiter) idle() time.Duration {
	return max(time.Second, time.Duration(l.burst/l.rate*float64(time.Second)))
}

// refill brings b up to now, at its own rate. Called with mu held.
func (l *Limiter) refill(b *bucket, now time.Time) {
	if d := now.Sub(b.at); d > 0 {
		b.tokens = min(b.burst, b.tokens+d.Seconds()*b.rate)
		b.at = now
	}
}

// sweep drops the buckets that are full again: forgetting them changes no answer. Called with mu
// held.
func (l *Limiter) sweep(now time.Time) {
	l.swept = now
	for k, b := range l.buckets {
		l.refill(b, now)
		if b.tokens >= b.burst {
			delete(l.buckets, k)
		}
	}
}
