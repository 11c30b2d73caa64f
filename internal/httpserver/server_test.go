package httpserver_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/wapipe/wapipe/internal/httpserver"
)

// TestDrainsInFlight: when the context ends (SIGTERM), a request already running completes with
// its answer, new connections are refused, and Serve returns nil.
func TestDrainsInFlight(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	started, release := make(chan struct{}), make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		close(started)
		<-release
		_, _ = io.WriteString(w, "done")
	})
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- httpserver.Serve(ctx, ln, h, slog.New(slog.DiscardHandler)) }()

	url := "http://" + ln.Addr().String()
	answer := make(chan string, 1)
	go func() {
		resp, err := http.Get(url)
		if err != nil {
			answer <- "error: " + err.Error()
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		answer <- string(b)
	}()
	<-started
	cancel()
	// Draining: no new connections.
	deadline := time.Now().Add(5 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", ln.Addr().String(), 100*time.Millisecond)
		if err != nil {
			break
		}
		c.Close()
		if time.Now().After(deadline) {
			t.Fatal("still accepting connections after the context ended")
		}
		time.Sleep(10 * time.Millisecond)
	}
	close(release)
	if got := <-answer; got != "done" {
		t.Fatalf("in-flight request got %q, want its answer", got)
	}
	select {
	case err := <-served:
		if err != nil {
			t.Fatalf("Serve = %v", err)
		}
	case <-time.After(httpserver.DrainTimeout + time.Second):
		t.Fatal("Serve did not return after draining")
	}
}
