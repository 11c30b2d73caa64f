package httpserver_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/wapipe/wapipe/internal/httpserver"
	"github.com/wapipe/wapipe/internal/httpserver/httpservertest"
)

// TestBudgetReadAll: a body is read whole, charged as its buffer grows (under 1.5 times its size
// for an honest declared length, the first buffer only for a body that has not come), given back
// on release; over the cap it fails with *http.MaxBytesError; a buffer the budget cannot hold
// fails with ErrOverloaded.
func TestBudgetReadAll(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		size        int
		declared    bool
		max         int64
		budget      int64
		wantErr     func(error) bool
		wantCharged func(int64) bool
	}{
		{"small declared", 1000, true, 4 << 20, 1 << 20, nil, func(c int64) bool { return c == 1001 }},
		{"large declared", 3 << 20, true, 4 << 20, 64 << 20, nil, func(c int64) bool { return c < 3<<20*3/2 }},
		{"declared at the cap", 4 << 20, true, 4 << 20, 64 << 20, nil, func(c int64) bool { return c < 4<<20*3/2 }},
		{"chunked", 100 << 10, false, 4 << 20, 64 << 20, nil, func(c int64) bool { return c < 4*100<<10+16<<10 }},
		{"over the cap", 5 << 20, false, 4 << 20, 64 << 20, func(err error) bool {
			var mb *http.MaxBytesError
			return errors.As(err, &mb)
		}, nil},
		{"budget too small", 3 << 20, true, 4 << 20, 1 << 20, func(err error) bool { return errors.Is(err, httpserver.ErrOverloaded) }, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := httpserver.NewBudget(tc.budget, 50*time.Millisecond)
			want := bytes.Repeat([]byte("x"), tc.size)
			var body io.Reader = bytes.NewReader(want)
			if !tc.declared {
				body = io.MultiReader(body) // hides the length
			}
			r := httptest.NewRequest(http.MethodPost, "/", body)
			if !tc.declared {
				r.ContentLength = -1
			}
			got, release, err := b.ReadAll(httptest.NewRecorder(), r, tc.max)
			charged := b.InUse()
			release()
			if tc.wantErr != nil {
				if !tc.wantErr(err) {
					t.Fatalf("ReadAll error %v, not the one expected", err)
				}
			} else {
				if err != nil {
					t.Fatalf("ReadAll: %v", err)
				}
				if !bytes.Equal(got, want) {
					t.Fatalf("read %d bytes, want %d", len(got), len(want))
				}
				if !tc.wantCharged(charged) {
					t.Errorf("%d bytes charged for a %d-byte body", charged, tc.size)
				}
			}
			if n := b.InUse(); n != 0 {
				t.Errorf("%d bytes still charged after release", n)
			}
		})
	}
}

// TestBudgetSmallNotBehindLarge: a small charge goes through while a large one waits.
func TestBudgetSmallNotBehindLarge(t *testing.T) {
	t.Parallel()
	b := httpserver.NewBudget(100, 0)
	if err := b.Reserve(context.Background(), 90); err != nil {
		t.Fatal(err)
	}
	large := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		large <- b.Reserve(ctx, 50)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := b.Reserve(ctx, 10); err != nil {
		t.Fatalf("a small charge waited behind a large one: %v", err)
	}
	b.Release(100)
	if err := <-large; err != nil {
		t.Fatalf("the large charge once bytes were released: %v", err)
	}
	if got := b.Peak(); got != 100 {
		t.Errorf("peak %d, want 100", got)
	}
}

// TestBodyLimits, on the real server: a body that keeps pace is read whole, and the handler may
// work past the body's deadline without its request being cancelled; a body that trickles is cut
// off after the grace with ErrBodyTimeout.
func TestBodyLimits(t *testing.T) {
	t.Parallel()
	const grace = 500 * time.Millisecond
	type result struct {
		n   int
		err error
		ctx error
	}
	results := make(chan result, 2)
	h := httpserver.BodyLimits{Grace: grace, MinRate: 1 << 20}.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err == nil {
			// Longer than the body's deadline: the server's watch for a vanished client must not
			// trip on it.
			time.Sleep(2 * grace)
		}
		results <- result{len(b), err, r.Context().Err()}
		if errors.Is(err, httpserver.ErrBodyTimeout) {
			w.WriteHeader(http.StatusRequestTimeout)
		}
	}))
	base := httpservertest.Serve(t, h)

	resp, err := http.Post(base, "text/plain", strings.NewReader(strings.Repeat("x", 100<<10)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := <-results; got.err != nil || got.n != 100<<10 || got.ctx != nil {
		t.Errorf("a body at pace: %+v, want 102400 bytes, no error, context alive", got)
	}

	u, _ := url.Parse(base)
	up, err := httpservertest.Start(u.Host, "/", httpservertest.Options{Declared: 1 << 20, Chunk: 8, Tick: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer up.Close()
	code, after, err := up.Wait(10 * time.Second)
	if err != nil || code != http.StatusRequestTimeout || after < grace {
		t.Errorf("a trickling body: %d after %s (%v), want 408 after at least %s", code, after, err, grace)
	}
	if got := <-results; !errors.Is(got.err, httpserver.ErrBodyTimeout) {
		t.Errorf("a trickling body read with %v, want ErrBodyTimeout", got.err)
	}
}

// TestBodyRefusedUnread: a handler that answers without reading the body (a refused signature or
// key) is not kept waiting by the server's own read of what is left of a slow body: the answer
// comes within the grace, not at the server's read timeout.
func TestBodyRefusedUnread(t *testing.T) {
	t.Parallel()
	const grace = 500 * time.Millisecond
	h := httpserver.BodyLimits{Grace: grace}.Handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusUnauthorized)
	}))
	u, _ := url.Parse(httpservertest.Serve(t, h))
	// Under the 256 KiB the server reads after a handler before answering.
	up, err := httpservertest.Start(u.Host, "/", httpservertest.Options{Declared: 100 << 10, Chunk: 8, Tick: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer up.Close()
	code, after, err := up.Wait(10 * time.Second)
	if err != nil || code != http.StatusUnauthorized || after > grace+time.Second {
		t.Errorf("refused unread: %d after %s (%v), want 401 within %s", code, after, err, grace+time.Second)
	}
}

// TestBudgetClientShare: with NewClientBudget, a client's unverified bodies hold at most its
// share: a body that does not fit fails with ErrClientOverloaded (an ErrOverloaded) while another
// client's is read; once the first body is verified its bytes leave the share (they stay charged
// to the budget until release), and the client's next body fits. NewBudget has no share.
func TestBudgetClientShare(t *testing.T) {
	t.Parallel()
	const share = 100 << 10
	b := httpserver.NewClientBudget(1<<20, share, 50*time.Millisecond)
	read := func(client string, size int) ([]byte, func(), func(), error) {
		r := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(bytes.Repeat([]byte("x"), size)))
		return b.ReadAllFrom(httptest.NewRecorder(), r, 4<<20, client)
	}
	first, verified, release, err := read("a", 60<<10)
	if err != nil || len(first) != 60<<10 {
		t.Fatalf("first body: %d bytes, %v", len(first), err)
	}
	charged := b.InUse()
	if got := b.ClientInUse("a"); got != charged || got > share {
		t.Errorf("client a holds %d of %d charged, want all of it, within its share %d", got, charged, share)
	}
	_, _, refusedRelease, err := read("a", 60<<10)
	refusedRelease()
	if !errors.Is(err, httpserver.ErrClientOverloaded) || !errors.Is(err, httpserver.ErrOverloaded) {
		t.Fatalf("a second unverified body over the share: %v, want ErrClientOverloaded", err)
	}
	_, _, otherRelease, err := read("b", 60<<10)
	if err != nil {
		t.Fatalf("another client's body: %v", err)
	}
	otherRelease()
	verified()
	if got := b.ClientInUse("a"); got != 0 || b.InUse() != charged {
		t.Errorf("after verified: client a holds %d, the budget %d; want 0 and %d", got, b.InUse(), charged)
	}
	_, _, nextRelease, err := read("a", 60<<10)
	if err != nil {
		t.Fatalf("the client's next body once the first was verified: %v", err)
	}
	nextRelease()
	release()
	verified() // after release: nothing more
	if b.InUse() != 0 || b.ClientInUse("a") != 0 {
		t.Errorf("after release: %d charged, %d on client a", b.InUse(), b.ClientInUse("a"))
	}

	plain := httpserver.NewBudget(1<<20, 50*time.Millisecond)
	var releases []func()
	for range 3 {
		r := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(bytes.Repeat([]byte("x"), 60<<10)))
		_, _, release, err := plain.ReadAllFrom(httptest.NewRecorder(), r, 4<<20, "a")
		releases = append(releases, release)
		if err != nil {
			t.Fatalf("NewBudget has no share per client: %v", err)
		}
	}
	for _, r := range releases {
		r()
	}
}
