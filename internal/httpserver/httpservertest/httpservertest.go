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

// Start dials addr (host:port), sends a POST of path with header and a declared Content-Length,
// then writes chunk bytes of filler every tick until the body is complete, the server answers or
// Close is called. The answer is read as it comes.
func Start(addr, path string, header http.Header, declared int64, chunk int, tick time.Duration) (*Upload, error) {
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	var head strings.Builder
	fmt.Fprintf(&head, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\nContent-Type: application/json\r\n", path, addr, declared)
	for k, vs := range header {
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
	go u.trickle(declared, chunk, tick)
	go u.read()
	return u, nil
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
