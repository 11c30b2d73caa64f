package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/wapipe/wapipe/internal/graph/graphfake"
	wapipeservice "github.com/wapipe/wapipe/internal/service"
	"github.com/wapipe/wapipe/internal/whatsapp"
)

// The chaos run's processes and the faults it injects: the services as separately built
// binaries it can SIGKILL, a TCP proxy in front of Firestore it can take down, and wrappers that
// make the fake Graph API and the fake business endpoint fail a share of their calls.

// chaosBinaries holds the services built once per test binary.
var chaosBinaries struct {
	once sync.Once
	dir  string
	err  error
}

// buildServices builds the webhook, the worker and the api into a temporary directory, once per
// test binary. They are built without -race, with the flags of CI's "docker build's go build"
// step, so that under CI the build is a cache hit and the services run at full speed however
// the test binary itself was built.
func buildServices(t *testing.T) string {
	t.Helper()
	chaosBinaries.once.Do(func() {
		dir, err := os.MkdirTemp("", "wapipe-chaos-bin-")
		if err != nil {
			chaosBinaries.err = err
			return
		}
		chaosBinaries.dir = dir
		cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", dir+string(os.PathSeparator),
			"github.com/wapipe/wapipe/cmd/webhook", "github.com/wapipe/wapipe/cmd/worker", "github.com/wapipe/wapipe/cmd/api")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			chaosBinaries.err = fmt.Errorf("go build: %w\n%s", err, out)
		}
	})
	if chaosBinaries.err != nil {
		t.Fatal(chaosBinaries.err)
	}
	return chaosBinaries.dir
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// service is a service process that the run kills and restarts.
type service struct {
	t      *testing.T
	name   string
	bin    string
	port   int
	env    []string
	logDir string

	mu    sync.Mutex
	cmd   *exec.Cmd
	exit  chan struct{}
	kills atomic.Int64
	runs  int
	// restarting makes the run's two killers (random, last attempts) take turns.
	restarting sync.Mutex
}

// restart kills the service and starts it again, one restart at a time.
func (s *service) restart() {
	s.restarting.Lock()
	defer s.restarting.Unlock()
	s.kill()
	s.start()
}

// start runs the service and waits until its startup probe (StartupPath) answers 200, as Cloud
// Run does before it sends traffic; it fails the test when the process ends or does not report
// ready within 30 s.
func (s *service) start() {
	s.mu.Lock()
	s.runs++
	logf, err := os.Create(filepath.Join(s.logDir, fmt.Sprintf("%s-%03d.log", s.name, s.runs)))
	if err != nil {
		s.mu.Unlock()
		s.t.Error(err)
		return
	}
	cmd := exec.Command(s.bin)
	cmd.Env = append(append([]string(nil), s.env...), fmt.Sprintf("PORT=%d", s.port))
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		s.mu.Unlock()
		logf.Close()
		s.t.Errorf("start %s: %v", s.name, err)
		return
	}
	exit := make(chan struct{})
	s.cmd, s.exit = cmd, exit
	s.mu.Unlock()
	go func() { _ = cmd.Wait(); logf.Close(); close(exit) }()
	url := fmt.Sprintf("http://127.0.0.1:%d%s", s.port, wapipeservice.StartupPath)
	client := &http.Client{Timeout: time.Second}
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
		if resp, err := client.Get(url); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		select {
		case <-exit:
			s.t.Errorf("%s ended at start-up; its log: %s", s.name, logf.Name())
			return
		case <-time.After(20 * time.Millisecond):
		}
	}
	s.t.Errorf("%s did not report ready (%s) within 30 s", s.name, wapipeservice.StartupPath)
}

// kill sends SIGKILL and waits until the process is gone.
func (s *service) kill() {
	s.mu.Lock()
	cmd, exit := s.cmd, s.exit
	s.mu.Unlock()
	if cmd == nil || cmd.Process == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	<-exit
	s.kills.Add(1)
}

// stop ends the service for good (SIGTERM, so it drains) and waits for it.
func (s *service) stop() {
	s.mu.Lock()
	cmd, exit := s.cmd, s.exit
	s.mu.Unlock()
	if cmd == nil || cmd.Process == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exit:
	case <-time.After(15 * time.Second):
		_ = cmd.Process.Kill()
		<-exit
	}
}

// switchProxy forwards TCP to target and can be taken down (listener and connections closed)
// and brought back on the same address: a Firestore outage, to the services.
type switchProxy struct {
	t      *testing.T
	target string
	addr   string
	mu     sync.Mutex
	ln     net.Listener
	conns  []net.Conn
}

func newSwitchProxy(t *testing.T, target string) *switchProxy {
	p := &switchProxy{t: t, target: target}
	p.addr = fmt.Sprintf("127.0.0.1:%d", freePort(t))
	p.Up()
	t.Cleanup(p.Down)
	return p
}

func (p *switchProxy) Addr() string { return p.addr }

func (p *switchProxy) Up() {
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		p.t.Errorf("proxy listen: %v", err)
		return
	}
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", p.target)
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
}

func (p *switchProxy) Down() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// flakyGraph fails a share of the sends it is given with retryable errors of mixed kinds; a third
// of the failures happen after the send reached the fake (the answer is lost on the way back).
type flakyGraph struct {
	next         http.Handler
	rate         float64
	failed, lost atomic.Int64
}

func (g *flakyGraph) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/messages") || rand.Float64() >= g.rate {
		g.next.ServeHTTP(w, r)
		return
	}
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	var send struct {
		To string `json:"to"`
	}
	if json.Unmarshal(body, &send) != nil || send.To == "" {
		g.next.ServeHTTP(w, r) // a mark-read, not a send
		return
	}
	g.failed.Add(1)
	metaError := func(status, code int, msg string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"error":{"message":%q,"type":"OAuthException","code":%d,"fbtrace_id":"chaos"}}`, msg, code)
	}
	// Each refusal carries Meta's error body, which proves nothing was sent; a bare 429 or 5xx
	// would leave the outcome unknown, which only a status webhook (that never comes for a send
	// that never reached Meta) can settle.
	switch rand.IntN(6) {
	case 0:
		metaError(400, 130429, "(#130429) Rate limit hit")
	case 1:
		metaError(500, 131000, "(#131000) Something went wrong")
	case 2:
		metaError(503, 133004, "(#133004) Server temporarily unavailable")
	case 3:
		metaError(429, 4, "(#4) Application request limit reached")
	default:
		// The send reaches Meta; its answer is lost: a gateway's 502 without Meta's body.
		g.lost.Add(1)
		g.next.ServeHTTP(httptest.NewRecorder(), r)
		w.WriteHeader(http.StatusBadGateway)
	}
}

// flakyAction fails a share of the action calls: half before they reach the business (a 503),
// half after the business ran them (the answer is lost: a gateway's 502). The business
// (actionfake with dedupe) answers a repeated Idempotency-Key with its first answer, as the
// contract asks of it.
type flakyAction struct {
	next         http.Handler
	rate         float64
	failed, lost atomic.Int64
}

func (a *flakyAction) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || strings.HasPrefix(r.URL.Path, "/_fake/") || rand.Float64() >= a.rate {
		a.next.ServeHTTP(w, r)
		return
	}
	a.failed.Add(1)
	if rand.IntN(2) == 0 {
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	a.lost.Add(1)
	a.next.ServeHTTP(httptest.NewRecorder(), r)
	w.WriteHeader(http.StatusBadGateway)
}

// metaStatuses posts a "sent" status webhook for each send the fake took, from the number that
// sent it, as Meta does.
type metaStatuses struct {
	url    string
	fake   *graphfake.Fake
	posted atomic.Int64
}

func (m *metaStatuses) run(ctx context.Context) {
	done := map[string]bool{}
	client := &http.Client{Timeout: 10 * time.Second}
	for ctx.Err() == nil {
		for _, s := range m.fake.Sends() {
			if s.MessageID == "" || done[s.MessageID] {
				continue
			}
			key, _ := s.Body["biz_opaque_callback_data"].(string)
			to, _ := s.Body["to"].(string)
			body := whatsapp.SampleStatus(whatsapp.SampleOptions{PhoneNumberID: s.PhoneNumberID, MessageID: s.MessageID, From: to, BizOpaqueCallbackData: key}, "sent")
			if postUntilOK(ctx, client, m.url, body, nil) {
				done[s.MessageID] = true
				m.posted.Add(1)
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
}
