package media

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/semaphore"

	"github.com/wapipe/wapipe/internal/assistant"
)

// Footprint is what a media turn's file is charged while the turn runs, in multiples of its size:
// the file, its base64 in the request (a third larger) and the request built around it. Package
// llm writes the base64 into the request as it is sent (the Gemini SDK alone would hold four or
// five base64 copies), so a turn holds about the file once; the rest of the charge is the
// garbage collector's headroom, since a finished turn's buffer is freed only at its next cycle.
const Footprint = 3

// DefaultInflightBytes is MEDIA_INFLIGHT_BYTES's default: 96 MiB, two files at the 15 MiB cap
// (45 MiB each) at once, or many smaller ones; the rest of a 512 MiB worker is left to its other
// turns and to the garbage collector's headroom.
const DefaultInflightBytes = 96 << 20

// DefaultBudgetWait is how long a turn waits for other turns to release budget before it gives
// up and is retried (the worker answers 503 and Cloud Tasks retries it): long enough for a
// turn's model call to end, short enough that a waiting turn holds neither its Cloud Tasks
// dispatch nor its conversation for long.
const DefaultBudgetWait = 2 * time.Second

// ErrBusy is the kind of a Fetch failure that is no failure of the message: the instance's media
// budget is held by other turns. The error also wraps assistant.ErrRetry, so the assistant ends
// the turn for a retry even on the task's last attempt (it never tells the user to send the file
// again for this), and the worker answers 503.
var ErrBusy = errors.New("budget held by other turns")

// Budget bounds the bytes the media turns of one instance hold at once (MEDIA_INFLIGHT_BYTES):
// each turn charges Footprint times its file's size before the download and keeps it until its
// model call is done. It is a weighted semaphore, first come first served, so a large file is not
// passed over for ever by small ones. It is safe for concurrent use.
type Budget struct {
	sem  *semaphore.Weighted
	size int64
	wait time.Duration
	used atomic.Int64
	peak atomic.Int64
}

// NewBudget returns a budget of size bytes, where a charge waits up to wait (DefaultBudgetWait
// when zero) for other turns to release theirs.
func NewBudget(size int64, wait time.Duration) (*Budget, error) {
	if size <= 0 {
		return nil, fmt.Errorf("media: MEDIA_INFLIGHT_BYTES %d must be positive", size)
	}
	if wait <= 0 {
		wait = DefaultBudgetWait
	}
	return &Budget{sem: semaphore.NewWeighted(size), size: size, wait: wait}, nil
}

// Size is the budget's size in bytes.
func (b *Budget) Size() int64 { return b.size }

// InUse is the bytes charged now.
func (b *Budget) InUse() int64 { return b.used.Load() }

// Peak is the most bytes ever charged at once.
func (b *Budget) Peak() int64 { return b.peak.Load() }

// NewCharge starts one turn's charge; nil when b is nil (no budget: nothing is charged).
func (b *Budget) NewCharge() *Charge {
	if b == nil {
		return nil
	}
	return &Charge{b: b}
}

// Charge is what one turn holds of a Budget. A nil *Charge charges nothing. Release it when the
// turn's model call is done, also after an error: a charge is never given back by itself.
type Charge struct {
	b  *Budget
	mu sync.Mutex
	n  int64
}

// Add charges n more bytes, waiting up to the budget's wait for other turns to release theirs; it
// fails with an *Error of kind ErrBusy when they did not. One turn is never charged more than the
// whole budget, so a turn alone on the instance always runs.
func (c *Charge) Add(ctx context.Context, n int64) error {
	if c == nil || n <= 0 {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	n = min(n, c.b.size-c.n)
	if n <= 0 {
		return nil
	}
	wctx, cancel := context.WithTimeout(ctx, c.b.wait)
	defer cancel()
	if err := c.b.sem.Acquire(wctx, n); err != nil {
		if ctx.Err() != nil {
			// The turn's own deadline, not the budget: the caller sees its context ended.
			return fmt.Errorf("media budget: %w", ctx.Err())
		}
		return &Error{Kind: ErrBusy, Err: assistant.ErrRetry, Reason: fmt.Sprintf("%d bytes not free within %s (%d of %d in use)",
			n, c.b.wait, c.b.used.Load(), c.b.size)}
	}
	c.n += n
	used := c.b.used.Add(n)
	for {
		p := c.b.peak.Load()
		if used <= p || c.b.peak.CompareAndSwap(p, used) {
			return nil
		}
	}
}

// Held is the bytes the charge holds.
func (c *Charge) Held() int64 {
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// Release gives every byte of the charge back. It may be called more than once.
func (c *Charge) Release() {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == 0 {
		return
	}
	c.b.used.Add(-c.n)
	c.b.sem.Release(c.n)
	c.n = 0
}
