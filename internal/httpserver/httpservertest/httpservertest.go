// Package httpservertest serves a handler as the services do (httpserver.Serve on loopback) and
// opens slow uploads against it, the way an attacker holding connections would: a raw connection
// sends a request's head at once, then trickles its body a few bytes at a time, and reads
// whatever answer comes. Tests use it to prove a slow body cannot hold a service's requests or
// memory (httpserver.BodyLimits, httpserver.Budget).
package httpservertest

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wapipe/wapipe/internal/httpserver"
	"github.com/wapipe/wapipe/internal/testenv"
)

// Serve serves h with httpserver.Serve on a loopback port until the test ends, then checks that it
// drained; it returns the base URL.
func Serve(t testing.TB, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- httpserver.Serve(ctx, ln, h, slog.New(slog.DiscardHandler)) }()
	t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("httpserver.Serve: %v", err)
		}
	})
	return "http://" + ln.Addr().String()
}

// Upload is one slow upload in progress.
type Upload struct {
	conn    net.Conn
	started time.Time
	stop    chan struct{}
	once    sync.Once
	done    chan struct{}

	// Set before done closes.
	status int
	after  time.Duration
	err    error
}

// Options describe a slow upload.
type Options struct {
	// From is the local address to dial from ("127.0.0.2"): another client address on loopback.
	From string
	// Header is sent with the request's head.
	Header http.Header
	// Declared is the body's Content-Length.
	Declared int64
	// Chunk bytes of filler are written every Tick.
	Chunk int
	Tick  time.Duration
}

// Start dials addr (host:port) and sends a POST of path with a declared Content-Length, then
// writes the body slowly until it is complete, the server answers or Close is called. The answer
// is read as it comes.
func Start(addr, path string, o Options) (*Upload, error) {
	d := &net.Dialer{Timeout: 5 * time.Second}
	if o.From != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(o.From)}
	}
	conn, err := d.Dial("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	var head strings.Builder
	fmt.Fprintf(&head, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\nContent-Type: application/json\r\n", path, addr, o.Declared)
	for k, vs := range o.Header {
		for _, v := range vs {
			fmt.Fprintf(&head, "%s: %s\r\n", k, v)
		}
	}
	head.WriteString("\r\n")
	u := &Upload{conn: conn, started: time.Now(), stop: make(chan struct{}), done: make(chan struct{})}
	if _, err := conn.Write([]byte(head.String())); err != nil {
		conn.Close()
		return nil, fmt.Errorf("write request head: %w", err)
	}
	go u.trickle(o.Declared, o.Chunk, o.Tick)
	go u.read()
	return u, nil
}

// ClientFrom returns an HTTP client whose connections come from the local address from
// ("127.0.0.3"), so a test on loopback can be several client addresses.
func ClientFrom(from string) *http.Client {
	d := &net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
	return &http.Client{Transport: &http.Transport{DialContext: d.DialContext, MaxIdleConnsPerHost: 8}}
}

func (u *Upload) trickle(left int64, chunk int, tick time.Duration) {
	filler := []byte(strings.Repeat(" ", chunk))
	t := time.NewTicker(tick)
	defer t.Stop()
	for left > 0 {
		select {
		case <-u.stop:
			return
		case <-u.done:
			return
		case <-t.C:
		}
		n := min(int64(chunk), left)
		if _, err := u.conn.Write(filler[:n]); err != nil {
			return // the server cut the connection
		}
		left -= n
	}
}

func (u *Upload) read() {
	defer close(u.done)
	resp, err := http.ReadResponse(bufio.NewReader(u.conn), nil)
	u.after = time.Since(u.started)
	if err != nil {
		u.err = fmt.Errorf("read answer: %w", err)
		return
	}
	resp.Body.Close()
	u.status = resp.StatusCode
}

// Wait waits up to timeout for the server's answer: its status and how long after the upload
// started it came.
func (u *Upload) Wait(timeout time.Duration) (status int, after time.Duration, err error) {
	select {
	case <-u.done:
		return u.status, u.after, u.err
	case <-time.After(timeout):
		return 0, 0, fmt.Errorf("no answer within %s", timeout)
	}
}

// Close stops the upload and closes its connection.
func (u *Upload) Close() {
	u.once.Do(func() {
		close(u.stop)
		u.conn.Close()
	})
}

// HeapPeak samples the heap in use every 5 ms until stop is called, which returns the peak
// (testenv.HeapPeak at the interval these tests use).
func HeapPeak() (stop func() uint64) { return testenv.HeapPeak(5 * time.Millisecond) }
