package httpserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
	"time"
)

// Defaults of BodyLimits: Meta and the businesses' servers upload from datacenters, where a body
// of a few MB takes well under a second; a client that cannot send 256 KiB a second after a two
// second start is holding the request, not sending it.
const (
	DefaultBodyGrace   = 2 * time.Second
	DefaultBodyMinRate = 256 << 10
	DefaultBudgetWait  = 500 * time.Millisecond
)

// ErrBodyTimeout is returned by a body under BodyLimits whose bytes did not arrive in time: the
// client fell below the floor rate (408 is the answer).
var ErrBodyTimeout = errors.New("request body arrived too slowly")

// ErrOverloaded is returned by Budget.ReadAll when a body's bytes could not be charged in time:
// too many bytes are held by requests in flight (503 is the answer; the client retries).
var ErrOverloaded = errors.New("too many request body bytes in flight")

// ErrClientOverloaded is ErrOverloaded (errors.Is matches both) when it was the client's share
// that was full, not the budget: that client's unverified bytes in flight are at its limit.
var ErrClientOverloaded = fmt.Errorf("%w from one client", ErrOverloaded)

// Budget bounds the request body bytes a service holds at once. Bytes are charged as they arrive,
// not by the declared Content-Length, so a slow upload holds only what it has sent. Unlike a FIFO
// semaphore, a small charge never waits behind a large one. A budget made by NewClientBudget also
// bounds what one client (an address) holds of it while its bodies are unverified.
type Budget struct {
	limit     int64
	perClient int64 // 0: no share per client
	wait      time.Duration

	mu      sync.Mutex
	used    int64
	peak    int64
	clients map[string]int64 // unverified bytes charged per client; no entry at zero
	freed   chan struct{}    // closed, then replaced, whenever bytes are released
}

// NewBudget returns a budget of limit bytes, where a charge waits up to wait (DefaultBudgetWait
// when zero) for other requests to release bytes.
func NewBudget(limit int64, wait time.Duration) *Budget {
	return NewClientBudget(limit, 0, wait)
}

// NewClientBudget is NewBudget where the bytes one client holds in unverified bodies
// (ReadAllFrom) may not pass perClient (0: no share), so that no one client can fill the budget.
func NewClientBudget(limit, perClient int64, wait time.Duration) *Budget {
	if wait <= 0 {
		wait = DefaultBudgetWait
	}
	return &Budget{limit: limit, perClient: perClient, wait: wait, clients: map[string]int64{}, freed: make(chan struct{})}
}

// Reserve charges n bytes, waiting for releases until they fit or ctx ends.
func (b *Budget) Reserve(ctx context.Context, n int64) error {
	return b.reserve(ctx, n, b.limit, "")
}

// reserve charges n bytes once the bytes in use leave room for them under ceiling and, for a
// client, under its share. When ctx ends first, the error wraps ErrClientOverloaded if the
// client's share was what was full.
func (b *Budget) reserve(ctx context.Context, n, ceiling int64, client string) error {
	for {
		b.mu.Lock()
		fits := b.used+n <= ceiling
		shared := client != "" && b.perClient > 0
		if fits && (!shared || b.clients[client]+n <= b.perClient) {
			b.used += n
			b.peak = max(b.peak, b.used)
			if shared {
				b.clients[client] += n
			}
			b.mu.Unlock()
			return nil
		}
		freed := b.freed
		b.mu.Unlock()
		select {
		case <-freed:
		case <-ctx.Done():
			if fits {
				return fmt.Errorf("%w: reserve %d of the client's %d body bytes (%d in use): %w", ErrClientOverloaded, n,
					b.perClient, b.ClientInUse(client), ctx.Err())
			}
			return fmt.Errorf("%w: reserve %d of %d body bytes (%d in use): %w", ErrOverloaded, n, b.limit, b.InUse(), ctx.Err())
		}
	}
}

// Release gives back n bytes charged by Reserve.
func (b *Budget) Release(n int64) {
	b.release(n, "", 0)
}

// release gives back n bytes of the budget, of which onClient were still counted against
// client's share.
func (b *Budget) release(n int64, client string, onClient int64) {
	if n == 0 && onClient == 0 {
		return
	}
	b.mu.Lock()
	b.used -= n
	if onClient > 0 {
		if b.clients[client] -= onClient; b.clients[client] <= 0 {
			delete(b.clients, client)
		}
	}
	close(b.freed)
	b.freed = make(chan struct{})
	b.mu.Unlock()
}

// ClientInUse returns the unverified bytes client holds now.
func (b *Budget) ClientInUse(client string) int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.clients[client]
}

// InUse returns the bytes charged now.
func (b *Budget) InUse() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// Peak returns the most bytes ever charged at once.
func (b *Budget) Peak() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.peak
}

// firstChunk is the buffer a body starts in: a declared length is a claim, not bytes.
const firstChunk = 16 << 10

// ReadAll reads r's body, at most maxBytes bytes (*http.MaxBytesError beyond), into a buffer that
// grows as bytes arrive, so a slow upload that declares a large length holds only about what it
// has sent. Each buffer is charged to the budget before it is allocated, and an outgrown one stays
// charged until release: it is garbage the collector has not reclaimed yet, memory all the same.
// The buffer grows fourfold, and to the whole declared length once half of it has come, so an
// honest body of n bytes is charged under 1.5n. The first buffer (16 KiB at most: a typical
// delivery's whole body) may use the last eighth of the budget, growth may not, so small bodies
// are served while large ones wait. A buffer that cannot be charged within the budget's wait
// fails the read with ErrOverloaded. release gives every charged byte back; call it
// when done with body, also after an error.
func (b *Budget) ReadAll(w http.ResponseWriter, r *http.Request, maxBytes int64) (body []byte, release func(), err error) {
	body, _, release, err = b.ReadAllFrom(w, r, maxBytes, "")
	return body, release, err
}

// ReadAllFrom is ReadAll for a body sent by client (its address) that the caller will verify (a
// signature over the whole body): until verified is called, its charged bytes also count against
// the client's share of a NewClientBudget, and a buffer that does not fit in the share within the
// budget's wait fails the read with ErrClientOverloaded. verified takes the body's bytes off the
// client's share (they stay charged to the budget until release); release gives every byte back.
// Both are always callable, in any order, more than once.
func (b *Budget) ReadAllFrom(w http.ResponseWriter, r *http.Request, maxBytes int64, client string) (body []byte, verified, release func(), err error) {
	var charged, onClient int64
	verified = func() {
		b.release(0, client, onClient)
		onClient = 0
	}
	release = func() {
		b.release(charged, client, onClient)
		charged, onClient = 0, 0
	}
	if b.perClient == 0 {
		client = ""
	}
	src := http.MaxBytesReader(w, r.Body, maxBytes)
	limit := maxBytes + 1 // room to read the end
	if r.ContentLength >= 0 && r.ContentLength < maxBytes {
		limit = r.ContentLength + 1
	}
	var buf []byte
	for {
		if len(buf) == cap(buf) {
			next := max(4*int64(cap(buf)), firstChunk)
			if r.ContentLength >= 0 && (next >= r.ContentLength || 2*int64(len(buf)) >= r.ContentLength) {
				next = limit
			}
			next = min(next, limit)
			if next <= int64(cap(buf)) {
				// More than declared: the server's body reader ends it at the declared length.
				next = int64(cap(buf)) + firstChunk
			}
			// A body's first buffer may use the whole budget; growing one may not use the
			// last eighth, so large bodies never keep a small delivery waiting.
			ceiling := b.limit
			if buf != nil {
				ceiling -= b.limit / 8
			}
			if err := b.charge(r.Context(), next, ceiling, client); err != nil {
				return nil, verified, release, err
			}
			charged += next
			if client != "" {
				onClient += next
			}
			grown := make([]byte, len(buf), next)
			copy(grown, buf)
			buf = grown
		}
		n, err := src.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, verified, release, nil
		}
		if err != nil {
			return nil, verified, release, err
		}
	}
}

// charge reserves n bytes under ceiling, and under client's share, within the budget's wait; its
// error wraps ErrOverloaded (ErrClientOverloaded when the share was full).
func (b *Budget) charge(ctx context.Context, n, ceiling int64, client string) error {
	ctx, cancel := context.WithTimeout(ctx, b.wait)
	defer cancel()
	return b.reserve(ctx, n, ceiling, client)
}

// BodyLimits bound the time a request body may take: Grace, then a floor rate. Zero fields take
// the defaults.
type BodyLimits struct {
	// Grace is how long any body may take before the floor rate applies.
	Grace time.Duration
	// MinRate is the floor, in bytes a second: after Grace the body's bytes must have arrived at
	// least this fast on average, or its reads fail with ErrBodyTimeout.
	MinRate int64
}

// Handler wraps next so that its request bodies must keep pace: while next reads the body, the
// connection's read deadline (http.ResponseController) follows the floor rate. next sees
// ErrBodyTimeout from its reads and answers (408).
func (l BodyLimits) Handler(next http.Handler) http.Handler {
	if l.Grace <= 0 {
		l.Grace = DefaultBodyGrace
	}
	if l.MinRate <= 0 {
		l.MinRate = DefaultBodyMinRate
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody {
			next.ServeHTTP(w, r)
			return
		}
		b := &pacedBody{body: r.Body, limits: l, rc: http.NewResponseController(w)}
		// A copy: the server inspects its own request's body after the handler (how much is left
		// unread) and must still find its own type there.
		r = r.WithContext(r.Context())
		r.Body = b
		next.ServeHTTP(w, r)
		b.finish()
	})
}

// pacedBody is a request body that must keep pace with BodyLimits. Only the handler's goroutine
// reads it.
type pacedBody struct {
	body   io.ReadCloser
	limits BodyLimits
	rc     *http.ResponseController

	start time.Time
	read  int64 // bytes read so far
	eof   bool
	err   error // sticky: a body cut off stays cut off
}

// finish bounds what the server reads of the body after the handler: before answering, it reads
// what is left when that is under 256 KiB, so a body the handler refused unread (401, 429) must not
// hold its answer on a slow client for the server's whole read timeout.
func (b *pacedBody) finish() {
	if b.eof || b.err != nil {
		return
	}
	_ = b.rc.SetReadDeadline(time.Now().Add(b.limits.Grace))
}

func (b *pacedBody) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	if b.start.IsZero() {
		b.start = time.Now()
	}
	// The bytes read so far buy time at the floor rate: the next ones are due by then.
	allowed := b.limits.Grace + time.Duration(float64(b.read)/float64(b.limits.MinRate)*float64(time.Second))
	// Not every ResponseWriter reaches a connection (httptest.ResponseRecorder); such a body is
	// in memory and cannot be slow.
	_ = b.rc.SetReadDeadline(b.start.Add(allowed))
	n, err := b.body.Read(p)
	b.read += int64(n)
	switch {
	case err == io.EOF:
		b.eof = true
		// Done with the connection's reads: the server's own read that notices a client going
		// away must not run into this body's deadline while the handler still works.
		_ = b.rc.SetReadDeadline(time.Time{})
	case errors.Is(err, os.ErrDeadlineExceeded):
		// The deadline stays past: whatever the server would read of this body after the
		// handler fails at once instead of waiting on the slow client.
		b.err = fmt.Errorf("%w: %d bytes in %s", ErrBodyTimeout, b.read, time.Since(b.start).Round(time.Millisecond))
		return n, b.err
	}
	return n, err
}

func (b *pacedBody) Close() error { return b.body.Close() }
