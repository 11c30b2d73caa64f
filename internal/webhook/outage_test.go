package webhook_test

import (
	"context"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/testenv"
	"github.com/wapipe/wapipe/internal/webhook"
)

// tcpProxy forwards connections to target until Stop, which closes the listener and every
// connection: to its clients, the server behind it has gone away.
type tcpProxy struct {
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
}

func startTCPProxy(t *testing.T, target string) *tcpProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &tcpProxy{ln: ln}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, up)
			p.mu.Unlock()
			go func() { _, _ = io.Copy(up, c); up.Close() }()
			go func() { _, _ = io.Copy(c, up); c.Close() }()
		}
	}()
	t.Cleanup(p.Stop)
	return p
}

func (p *tcpProxy) Addr() string { return p.ln.Addr().String() }

func (p *tcpProxy) Stop() {
	p.ln.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// TestFirestoreStopped: Firestore answers, then goes away under a connected client. With the
// default call budget (WEBHOOK_CALL_BUDGET, 1.5 s) fail closed answers 500 and fail open enqueues,
// both well before Meta's 5 s timeout (the figures are logged).
func TestFirestoreStopped(t *testing.T) {
	t.Parallel()
	tests := []struct {
		mode      string
		wantCode  int
		wantTasks int
	}{
		{webhook.FailClosed, 500, 1},
		{webhook.FailOpen, 200, 2},
	}
	for _, tc := range tests {
		t.Run(tc.mode, func(t *testing.T) {
			t.Parallel()
			_, project := testenv.Firestore(t)
			proxy := startTCPProxy(t, testenv.FirestoreHost(t))
			db, err := store.OpenEmulator(context.Background(), proxy.Addr(), project, "")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			markers := store.NewMarkers(db, store.MarkerOptions{TTL: time.Hour, EventRef: logging.DevHasher().Ref})
			e := newEnv(t, envOptions{failMode: tc.mode, dedupe: markers, callBudget: webhook.DefaultCallBudget})
			if code, resp := e.post(textPayload("wamid.before-outage"), nil); code != 200 {
				t.Fatalf("with Firestore up: %d %s, want 200", code, resp)
			}
			proxy.Stop()
			start := time.Now()
			code, resp := e.post(textPayload("wamid.during-outage"), nil)
			took := time.Since(start)
			t.Logf("Firestore stopped, fail %s: %d after %s", tc.mode, code, took.Round(time.Millisecond))
			if code != tc.wantCode {
				t.Fatalf("with Firestore stopped: %d %s, want %d", code, resp, tc.wantCode)
			}
			if took >= 5*time.Second {
				t.Errorf("answered after %s: Meta has given up at 5 s", took)
			}
			e.wantTasks(tc.wantTasks)
		})
	}
}
