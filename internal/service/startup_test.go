package service_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"cloud.google.com/go/cloudtasks/apiv2/cloudtaskspb"
	"cloud.google.com/go/firestore"
	"google.golang.org/api/iterator"

	"github.com/wapipe/wapipe/internal/config"
	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/internal/service"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/testenv"
	"github.com/wapipe/wapipe/internal/webhook"
	"github.com/wapipe/wapipe/internal/whatsapp"
	"github.com/wapipe/wapipe/tasks"
)

// gate is a TCP relay to target whose connections carry no byte until the gate opens, or, with
// a delay, until that long after each was accepted: the connection set-up (TLS, access token,
// gRPC channel) that a fresh Cloud Run instance pays on its first call, made as slow as the test
// says.
type gate struct {
	addr     string
	target   string
	delay    time.Duration
	open     chan struct{}
	openOnce sync.Once
	accepted atomic.Int64
}

func newGate(t *testing.T, target string, delay time.Duration) *gate {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := &gate{addr: ln.Addr().String(), target: target, delay: delay, open: make(chan struct{})}
	t.Cleanup(func() {
		ln.Close()
		g.Open()
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			g.accepted.Add(1)
			go g.relay(c)
		}
	}()
	return g
}

// Open lets every connection through, now and from now on.
func (g *gate) Open() { g.openOnce.Do(func() { close(g.open) }) }

func (g *gate) relay(c net.Conn) {
	defer c.Close()
	var timer <-chan time.Time
	if g.delay > 0 {
		timer = time.After(g.delay)
	}
	select {
	case <-g.open:
	case <-timer:
	}
	up, err := net.Dial("tcp", g.target)
	if err != nil {
		return
	}
	defer up.Close()
	go func() {
		_, _ = io.Copy(up, c)
		up.Close()
	}()
	_, _ = io.Copy(c, up)
}

const location = "us-central1"

// freshWebhook is a webhook service as cmd/webhook starts it (service.Start, then
// Clients.ServeOn), on new Firestore and Cloud Tasks clients that reach the emulators through
// gates, failing closed (a marker not written is a 500, as in prod) within the default call
// budget (1.5 s).
type freshWebhook struct {
	url         string
	project     string
	fs, tasksGW *gate
	queue       string
	listTasks   func() int
	markers     func() int
}

func startFreshWebhook(t *testing.T, delay time.Duration) *freshWebhook {
	t.Helper()
	ctx := t.Context()
	fsHost := testenv.FirestoreHost(t)
	project := testenv.ProjectID(t)
	emu, tc := testenv.Tasks(t, project, location, nil)
	queue := "projects/" + project + "/locations/" + location + "/queues/" + tasks.InboundQueueID
	// Paused, the inbound task stays where the test can see it.
	if _, err := tc.PauseQueue(ctx, &cloudtaskspb.PauseQueueRequest{Name: queue}); err != nil {
		t.Fatalf("pause queue: %v", err)
	}
	f := &freshWebhook{project: project, fs: newGate(t, fsHost, delay), tasksGW: newGate(t, emu.Addr(), delay), queue: queue}
	cfg := &webhook.Config{
		Base: config.Base{AppEnv: config.EnvDev, ProjectID: project, FirestoreDatabase: "(default)",
			TasksEmulatorHost: f.tasksGW.addr, TasksLocation: location, InternalTaskBaseURL: "http://127.0.0.1:1",
			InternalTaskToken: "dev-internal-token", LogLevel: "INFO", TraceExporter: "none", TraceSampleRatio: 1},
		InboundQueue: tasks.InboundQueueID, AppSecret: "app-secret", VerifyToken: "verify", DedupeTTL: time.Hour,
		DedupeFailMode: webhook.FailClosed,
	}
	cfg.SetDefaults()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	logger := logging.New(io.Discard, logging.Options{})
	c, cleanup, err := service.Start(ctx, service.Options{Name: "webhook", Base: &cfg.Base, Logger: logger,
		FirestoreEmulatorHost: f.fs.addr, InProcess: true, Tasks: true, WarmQueue: cfg.InboundQueue})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	serveCtx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() {
		served <- c.ServeOn(serveCtx, ln, webhook.NewServer(cfg, webhook.NewDeps(cfg, c.DB, c.Tasks, logger)).Routes())
	}()
	t.Cleanup(func() {
		f.fs.Open()
		f.tasksGW.Open()
		stop()
		if err := <-served; err != nil {
			t.Errorf("ServeOn: %v", err)
		}
		cleanup()
	})
	f.url = "http://" + ln.Addr().String()

	// The test's own view of the emulators, around the gates.
	fs, err := firestore.NewClient(ctx, project)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fs.Close() })
	f.markers = func() int {
		docs, err := fs.Collection(store.InboundEvents).Documents(ctx).GetAll()
		if err != nil {
			t.Fatalf("read inbound_events: %v", err)
		}
		return len(docs)
	}
	f.listTasks = func() int {
		it := tc.ListTasks(ctx, &cloudtaskspb.ListTasksRequest{Parent: queue})
		n := 0
		for {
			_, err := it.Next()
			if errors.Is(err, iterator.Done) {
				return n
			}
			if err != nil {
				t.Fatalf("ListTasks: %v", err)
			}
			n++
		}
	}
	return f
}

func (f *freshWebhook) get(t *testing.T, path string) int {
	t.Helper()
	resp, err := http.Get(f.url + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// deliver posts one genuine (signed) delivery of a text message and returns the answer.
func (f *freshWebhook) deliver(t *testing.T) int {
	t.Helper()
	body := whatsapp.SampleText(whatsapp.SampleOptions{PhoneNumberID: "200000000000101", From: "33612345678"}, "hello")
	req, _ := http.NewRequest(http.MethodPost, f.url+webhook.Path, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Hub-Signature-256", whatsapp.Sign(body, "app-secret"))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST: %v", err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestFreshWebhookFirstDeliveryIsWarm is issue 35 item 8: a fresh webhook instance whose
// connections are slow to set up answers its startup probe 503 (its liveness probe 200, which
// touches no client) until the warm-up has opened and exercised its Firestore and Cloud Tasks
// clients, and once the probe says 200, its first genuine delivery is answered 200 with its marker
// written and its task created, on the connections the warm-up opened (no new one).
func TestFreshWebhookFirstDeliveryIsWarm(t *testing.T) {
	t.Parallel()
	f := startFreshWebhook(t, 0)
	// Firestore and Cloud Tasks are unreachable (every connection held at the gate).
	if code := f.get(t, service.StartupPath); code != http.StatusServiceUnavailable {
		t.Fatalf("startup probe before the warm-up: %d, want 503", code)
	}
	if code := f.get(t, "/healthz"); code != http.StatusOK {
		t.Fatalf("liveness with Firestore unreachable: %d, want 200", code)
	}
	// The warm-up is at the gates before any request asked for a connection.
	testenv.Eventually(t, 10*time.Second, func() bool { return f.fs.accepted.Load() > 0 && f.tasksGW.accepted.Load() > 0 },
		"the warm-up opened no connection to Firestore and Cloud Tasks")
	if code := f.get(t, service.StartupPath); code != http.StatusServiceUnavailable {
		t.Fatalf("startup probe while the connections are being set up: %d, want 503", code)
	}

	f.fs.Open()
	f.tasksGW.Open()
	testenv.Eventually(t, 20*time.Second, func() bool { return f.get(t, service.StartupPath) == http.StatusOK },
		"the startup probe never answered 200")
	fsConns, tasksConns := f.fs.accepted.Load(), f.tasksGW.accepted.Load()
	t.Logf("warm: %d connection(s) to Firestore, %d to Cloud Tasks", fsConns, tasksConns)

	if code := f.deliver(t); code != http.StatusOK {
		t.Fatalf("first delivery after the probe turned 200: %d, want 200", code)
	}
	if n := f.markers(); n != 1 {
		t.Errorf("%d inbound_events markers, want the delivery's", n)
	}
	if n := f.listTasks(); n != 1 {
		t.Errorf("%d tasks in the inbound queue, want the delivery's", n)
	}
	if fs, tq := f.fs.accepted.Load(), f.tasksGW.accepted.Load(); fs != fsConns || tq != tasksConns {
		t.Errorf("the delivery opened connections (Firestore %d -> %d, Cloud Tasks %d -> %d): the warm-up did not use the handlers' clients",
			fsConns, fs, tasksConns, tq)
	}
}

// TestFreshWebhookWithoutWarmup is the failure the warm-up prevents: on the same fresh instance,
// with connections that take 3 s to set up (a cold start under load took 1 s), a delivery sent
// before the startup probe turns 200 pays the set-up inside its call budget (1.5 s) and its
// marker cannot be written: 500 (fail closed), no marker.
func TestFreshWebhookWithoutWarmup(t *testing.T) {
	t.Parallel()
	f := startFreshWebhook(t, 3*time.Second)
	if code := f.deliver(t); code != http.StatusInternalServerError {
		t.Errorf("delivery during the connection set-up: %d, want 500 (marker past its budget)", code)
	}
	testenv.Eventually(t, 20*time.Second, func() bool { return f.get(t, service.StartupPath) == http.StatusOK },
		"the startup probe never answered 200")
	if n := f.markers(); n != 0 {
		t.Errorf("%d inbound_events markers, want none", n)
	}
}
