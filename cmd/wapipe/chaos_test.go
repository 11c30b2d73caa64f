package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/wapipe/wapipe/internal/cloudtasksemu"
	"github.com/wapipe/wapipe/internal/graph/graphfake"
	"github.com/wapipe/wapipe/internal/operator"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/taskqueue"
	"github.com/wapipe/wapipe/internal/testenv"
	"github.com/wapipe/wapipe/internal/whatsapp"
	"github.com/wapipe/wapipe/tasks"
)

// The chaos run: go test ./cmd/wapipe -run TestChaos -chaos -v -timeout 30m
var (
	chaos            = flag.Bool("chaos", false, "run TestChaos: the pipeline under kills, Graph failures and a Firestore outage")
	chaosMessages    = flag.Int("chaos-n", 2000, "TestChaos: messages to send")
	chaosConcurrency = flag.Int("chaos-concurrency", 16, "TestChaos: deliveries in flight at once")
	chaosLogs        = flag.String("chaos-logs", "", "TestChaos: keep the services' logs in this directory")
)

const (
	chaosToken    = "chaos-internal-token-0123456789"
	chaosSecret   = "chaos-app-secret"
	chaosAccess   = "chaos-access-token"
	chaosLocation = "us-central1"
)

// TestChaos runs the webhook and the worker as processes against the emulators and sends
// --chaos-n messages, --chaos-concurrency at a time, redelivering each until it is answered 200 as
// Meta does, while: the webhook and the worker are each killed with SIGKILL and restarted at random
// moments; the Graph API fails 10 % of sends with retryable errors of mixed kinds, a third of them
// after the send went through (the answer is lost); Firestore goes away once for 5 s. Meta's part is
// played too: every send the Graph API took is followed by its "sent" status webhook. A send cut by
// a kill before it reached Meta has an unknown outcome that no status settles: the worker
// dead-letters it (outcome_unknown) rather than risk a second answer, and the run replays the dead
// letters as an operator would (wapipe replay --all). At the end every accepted message must have
// exactly one reply, no dead letter may wait, and the worker's health must be ok.
func TestChaos(t *testing.T) {
	if !*chaos {
		t.Skip("the chaos run takes minutes: -chaos runs it")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir := *chaosLogs
	if dir == "" {
		dir = t.TempDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := buildServices(t)

	project := testenv.ProjectID(t)
	fsProxy := newSwitchProxy(t, testenv.FirestoreHost(t))
	queues := chaosQueues()
	emu, err := cloudtasksemu.Start(ctx, cloudtasksemu.Options{Project: project, Location: chaosLocation, Queues: queues})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(emu.Stop)

	fake := graphfake.New(graphfake.WithToken(chaosAccess))
	graph := &flakyGraph{next: fake, rate: 0.10}
	graphSrv := httptest.NewServer(graph)
	t.Cleanup(graphSrv.Close)

	webhookPort, workerPort := freePort(t), freePort(t)
	workerURL := fmt.Sprintf("http://127.0.0.1:%d", workerPort)
	webhookURL := fmt.Sprintf("http://127.0.0.1:%d/webhooks/whatsapp", webhookPort)
	env := []string{
		"APP_ENV=dev", "GOOGLE_CLOUD_PROJECT=" + project, "FIRESTORE_EMULATOR_HOST=" + fsProxy.Addr(),
		"CLOUD_TASKS_EMULATOR_HOST=" + emu.Addr(), "TASKS_LOCATION=" + chaosLocation,
		"INTERNAL_TASK_BASE_URL=" + workerURL, "INTERNAL_TASK_TOKEN=" + chaosToken,
		"INBOUND_TASK_QUEUE_NAME=" + tasks.InboundQueueID, "OUTBOUND_TASK_QUEUE_NAME=" + tasks.OutboundQueueID,
		"WHATSAPP_APP_SECRET=" + chaosSecret, "WHATSAPP_VERIFY_TOKEN=chaos-verify", "DEDUPE_FAIL_MODE=closed",
		"GRAPH_API_BASE_URL=" + graphSrv.URL + "/v24.0", "WHATSAPP_ACCESS_TOKEN=" + chaosAccess, "LOG_LEVEL=INFO",
		"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"),
	}
	webhookProc := &service{t: t, name: "webhook", bin: filepath.Join(bin, "webhook"), port: webhookPort, env: env, logDir: dir}
	workerProc := &service{t: t, name: "worker", bin: filepath.Join(bin, "worker"), port: workerPort, env: env, logDir: dir}
	webhookProc.start()
	workerProc.start()
	t.Cleanup(webhookProc.stop)
	t.Cleanup(workerProc.stop)

	// Meta's part: a "sent" status webhook for every send the Graph API took.
	meta := &metaStatuses{url: webhookURL, fake: fake}
	metaCtx, stopMeta := context.WithCancel(ctx)
	metaDone := make(chan struct{})
	go func() { defer close(metaDone); meta.run(metaCtx) }()

	// The chaos: kills at random moments, one Firestore outage.
	chaosCtx, stopChaos := context.WithCancel(ctx)
	var kills sync.WaitGroup
	var outage atomic.Bool
	for _, s := range []*service{webhookProc, workerProc} {
		kills.Add(1)
		go func() {
			defer kills.Done()
			for {
				select {
				case <-chaosCtx.Done():
					return
				case <-time.After(time.Duration(2000+rand.IntN(4000)) * time.Millisecond):
				}
				s.kill()
				s.start()
			}
		}()
	}
	kills.Add(1)
	go func() {
		defer kills.Done()
		select {
		case <-chaosCtx.Done():
			return
		case <-time.After(3 * time.Second):
		}
		outage.Store(true)
		fsProxy.Down()
		time.Sleep(5 * time.Second)
		fsProxy.Up()
		t.Logf("Firestore was away for 5 s")
	}()

	// Meta's deliveries: each message redelivered until answered 200.
	start := time.Now()
	sent := deliverAll(ctx, t, webhookURL, *chaosMessages, *chaosConcurrency)
	sendPhase := time.Since(start)
	// The chaos goes on while the pipeline works through the backlog: 30 s at least.
	time.Sleep(time.Until(start.Add(30 * time.Second)))
	stopChaos()
	kills.Wait()
	if !outage.Load() {
		t.Log("the run ended before the Firestore outage: send more messages")
	}

	// Wait for every reply, then for the queues to drain.
	wantKeys := map[string]string{}
	for _, id := range sent.accepted {
		wantKeys[tasks.IdempotencyKey(id)] = id
	}
	admin, err := taskqueue.NewAdmin(ctx, project, chaosLocation, emu.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	drainedQueues := func() bool {
		for _, q := range []string{tasks.InboundQueueID, tasks.OutboundQueueID} {
			st, err := admin.QueueStats(ctx, q)
			if err != nil || st.Tasks > 0 || st.InFlight > 0 {
				return false
			}
		}
		return true
	}
	// settle waits until every reply is in and the queues are empty, or until the queues have
	// stayed empty for 20 s (what is missing then is missing for good), and counts the replies.
	settle := func() (missing, twice []string) {
		var emptySince time.Time
		for deadline := time.Now().Add(10 * time.Minute); time.Now().Before(deadline); time.Sleep(time.Second) {
			replies := repliesByKey(fake)
			n := 0
			for k := range wantKeys {
				if replies[k] == 0 {
					n++
				}
			}
			if !drainedQueues() {
				emptySince = time.Time{}
				continue
			}
			if emptySince.IsZero() {
				emptySince = time.Now()
			}
			if n == 0 || time.Since(emptySince) > 20*time.Second {
				break
			}
		}
		if !drainedQueues() {
			t.Error("the queues never drained")
		}
		replies := repliesByKey(fake)
		for k := range wantKeys {
			switch n := replies[k]; {
			case n == 0:
				missing = append(missing, k)
			case n > 1:
				twice = append(twice, fmt.Sprintf("%s×%d", k, n))
			}
		}
		sort.Strings(missing)
		sort.Strings(twice)
		return missing, twice
	}
	db, err := store.OpenEmulator(ctx, testenv.FirestoreHost(t), project, "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	deadLetters := store.NewDeadLetters(db, store.Options{})
	report := func(stage string, missing, twice []string) (pending int, h operator.Health, herr error) {
		dls, err := deadLetters.ListDeadLetters(ctx, true, 1000)
		if err != nil {
			t.Fatal(err)
		}
		reasons := map[string]int{}
		for _, d := range dls {
			reasons[d.Reason]++
		}
		h, herr = operator.FetchHealth(ctx, http.DefaultClient, workerURL, chaosToken)
		t.Logf(`%s, after %s:
  replies: %d accepted messages with exactly one, %d with none, %d with more than one
  dead letters waiting: %d %v; health: %s %s (%v)`, stage, time.Since(start).Round(time.Second),
			len(wantKeys)-len(missing)-len(twice), len(missing), len(twice), len(dls), reasons, h.Status, h.Reason, herr)
		return len(dls), h, herr
	}

	missing, twice := settle()
	t.Logf(`chaos run: %d messages, concurrency %d; sending phase %s (Meta's redeliveries included)
  deliveries: %d accepted of %d; %d POSTs in all, answers %s, transport errors %d
  kills: webhook %d, worker %d; Firestore outage 5 s: %v
  Graph API: %d sends failed on purpose (%d of them after the send went through), %d sends taken
  Meta's "sent" status webhooks: %d posted`,
		*chaosMessages, *chaosConcurrency, sendPhase.Round(time.Second),
		len(sent.accepted), *chaosMessages, sent.posts.Load(), sent.codes(), sent.transport.Load(),
		webhookProc.kills.Load(), workerProc.kills.Load(), outage.Load(),
		graph.failed.Load(), graph.lost.Load(), len(fake.Sends()), meta.posted.Load())
	if pending, _, _ := report("before replay", missing, twice); pending > 0 {
		// A send cut by a kill has an unknown outcome; when no status webhook settles it, the
		// worker dead-letters it rather than risk answering twice, and the operator replays.
		var out, errb bytes.Buffer
		err := run(ctx, []string{"replay", "--all", "--base-url", workerURL, "--token", chaosToken,
			"--project", project, "--location", chaosLocation, "--tasks-emulator", emu.Addr()}, &out, &errb)
		t.Logf("wapipe replay --all: %v\n%s%s", err, lastLine(out.String()), errb.String())
		missing, twice = settle()
	}
	stopMeta()
	<-metaDone
	pending, health, herr := report("after replay", missing, twice)

	if len(sent.accepted) != *chaosMessages {
		t.Errorf("%d of %d messages never accepted", *chaosMessages-len(sent.accepted), *chaosMessages)
	}
	if len(missing) > 0 {
		t.Errorf("%d accepted messages without a reply, first: %v", len(missing), missing[:min(5, len(missing))])
	}
	if len(twice) > 0 {
		t.Errorf("%d messages answered more than once: %v", len(twice), twice[:min(5, len(twice))])
	}
	if pending > 0 {
		t.Errorf("%d dead letters still waiting", pending)
	}
	if herr != nil || health.Status != "ok" {
		t.Errorf("health = %s %s (%v), want ok", health.Status, health.Reason, herr)
	}
}

// buildServices builds the webhook and the worker into a temporary directory.
func buildServices(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command("go", "build", "-o", dir+string(os.PathSeparator), "github.com/wapipe/wapipe/cmd/webhook", "github.com/wapipe/wapipe/cmd/worker")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return dir
}

// chaosQueues are the queues with backoffs short enough for a run of minutes; max_attempts stay
// those the services read from tasks/queues.yaml, so a task's last attempt is the same to both.
func chaosQueues() *tasks.QueueFile {
	f := tasks.DefaultQueues()
	for id, q := range f.Queues {
		q.RetryConfig.MinBackoff.Duration = 100 * time.Millisecond
		q.RetryConfig.MaxBackoff.Duration = time.Second
		q.RetryConfig.MaxDoublings = 3
		q.RateLimits.MaxDispatchesPerSecond = 500
		if id == tasks.OutboundQueueID {
			// A send of unknown outcome waits for its status webhook across the retries: keep
			// that window long enough for a status delayed by a kill or the outage.
			q.RetryConfig.MinBackoff.Duration = 500 * time.Millisecond
			q.RetryConfig.MaxBackoff.Duration = 5 * time.Second
		}
		f.Queues[id] = q
	}
	return f
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

// service is a webhook or worker process that the run kills and restarts.
type service struct {
	t      *testing.T
	name   string
	bin    string
	port   int
	env    []string
	logDir string

	mu    sync.Mutex
	cmd   *exec.Cmd
	kills atomic.Int64
	runs  int
}

// start runs the service and waits until it answers /healthz.
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
		s.t.Errorf("start %s: %v", s.name, err)
		return
	}
	s.cmd = cmd
	s.mu.Unlock()
	go func() { _ = cmd.Wait(); logf.Close() }()
	url := fmt.Sprintf("http://127.0.0.1:%d/healthz", s.port)
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
	}
	s.t.Errorf("%s did not answer /healthz within 30 s", s.name)
}

// kill sends SIGKILL and waits until the process is gone.
func (s *service) kill() {
	s.mu.Lock()
	cmd := s.cmd
	s.mu.Unlock()
	if cmd == nil || cmd.Process == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	for cmd.ProcessState == nil {
		time.Sleep(5 * time.Millisecond)
	}
	s.kills.Add(1)
}

// stop ends the service for good (SIGTERM, so it drains).
func (s *service) stop() {
	s.mu.Lock()
	cmd := s.cmd
	s.mu.Unlock()
	if cmd != nil && cmd.Process != nil {
		_ = cmd.Process.Signal(syscall.SIGTERM)
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

// metaStatuses posts a "sent" status webhook for each send the fake took, as Meta does.
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
			if s.Status != 200 || s.MessageID == "" || done[s.MessageID] {
				continue
			}
			key, _ := s.Body["biz_opaque_callback_data"].(string)
			to, _ := s.Body["to"].(string)
			body := whatsapp.SampleStatus(whatsapp.SampleOptions{MessageID: s.MessageID, From: to, BizOpaqueCallbackData: key}, "sent")
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

// deliveries is what deliverAll did.
type deliveries struct {
	mu        sync.Mutex
	accepted  []string
	answers   map[int]int
	posts     atomic.Int64
	transport atomic.Int64
}

func (d *deliveries) codes() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	keys := make([]int, 0, len(d.answers))
	for c := range d.answers {
		keys = append(keys, c)
	}
	sort.Ints(keys)
	parts := make([]string, len(keys))
	for i, c := range keys {
		parts[i] = fmt.Sprintf("%d×%d", c, d.answers[c])
	}
	return strings.Join(parts, " ")
}

// deliverAll sends n messages, concurrency at a time, each from its own contact, redelivering
// each until it is answered 200 (for up to 2 minutes), as Meta does.
func deliverAll(ctx context.Context, t *testing.T, url string, n, concurrency int) *deliveries {
	d := &deliveries{answers: map[int]int{}}
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: concurrency}}
	jobs := make(chan int)
	var wg sync.WaitGroup
	for range concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				id := whatsapp.NewMessageID()
				from := fmt.Sprintf("1650%07d", i)
				body := whatsapp.SampleText(whatsapp.SampleOptions{MessageID: id, From: from}, fmt.Sprintf("chaos message %d", i+1))
				if postUntilOK(ctx, client, url, body, d) {
					d.mu.Lock()
					d.accepted = append(d.accepted, id)
					d.mu.Unlock()
				}
			}
		}()
	}
	for i := range n {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	t.Logf("deliveries done: %d accepted", len(d.accepted))
	return d
}

// postUntilOK posts a signed body until it is answered 200, backing off as Meta does (faster).
func postUntilOK(ctx context.Context, client *http.Client, url string, body []byte, d *deliveries) bool {
	wait := 100 * time.Millisecond
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline) && ctx.Err() == nil; {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(whatsapp.SignatureHeader, whatsapp.Sign(body, chaosSecret))
		resp, err := client.Do(req)
		if d != nil {
			d.posts.Add(1)
		}
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if d != nil {
				d.mu.Lock()
				d.answers[resp.StatusCode]++
				d.mu.Unlock()
			}
			if resp.StatusCode == 200 {
				return true
			}
		} else if d != nil {
			d.transport.Add(1)
		}
		time.Sleep(wait)
		wait = min(2*wait, 2*time.Second)
	}
	return false
}

// repliesByKey counts the sends the fake took, by the idempotency key they carry.
func repliesByKey(fake *graphfake.Fake) map[string]int {
	out := map[string]int{}
	for _, s := range fake.Sends() {
		if s.Status != 200 {
			continue
		}
		if key, _ := s.Body["biz_opaque_callback_data"].(string); key != "" {
			out[key]++
		}
	}
	return out
}
