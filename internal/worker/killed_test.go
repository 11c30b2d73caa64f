package worker_test

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/wapipe/wapipe/internal/assistant"
	"github.com/wapipe/wapipe/internal/devstack"
	"github.com/wapipe/wapipe/internal/i18n"
	"github.com/wapipe/wapipe/internal/llm/geminifake"
	"github.com/wapipe/wapipe/internal/operator"
	"github.com/wapipe/wapipe/internal/secrets"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/taskqueue"
	"github.com/wapipe/wapipe/internal/testenv"
	"github.com/wapipe/wapipe/tasks"
)

// workerProcess runs cmd/worker as a process of its own against the stack, so a test can kill it
// with SIGKILL, as an instance dies.
type workerProcess struct {
	t    *testing.T
	bin  string
	env  []string
	logs *testenv.LogBuffer
	cmd  *exec.Cmd
}

func newWorkerProcess(t *testing.T, s *stack, addr string) *workerProcess {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "worker")
	build := exec.Command("go", "build", "-o", bin, "github.com/wapipe/wapipe/cmd/worker")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build cmd/worker: %v\n%s", err, out)
	}
	_, port, _ := net.SplitHostPort(addr)
	env := append(os.Environ(),
		"APP_ENV=dev", "GOOGLE_CLOUD_PROJECT="+s.Project, "TASKS_LOCATION="+s.Location,
		"FIRESTORE_EMULATOR_HOST="+s.FirestoreHost, "CLOUD_TASKS_EMULATOR_HOST="+s.TasksAddr,
		"INTERNAL_TASK_BASE_URL="+s.WorkerURL, "INTERNAL_TASK_TOKEN="+s.InternalToken, "PORT="+port,
		"GRAPH_API_BASE_URL="+s.GraphURL, "WHATSAPP_ACCESS_TOKEN="+devstack.DevAccessToken,
		"LLM_BASE_URL="+s.GeminiURL, "OUTBOUND_TASK_QUEUE_NAME="+tasks.OutboundQueueID,
		"INBOUND_TASK_QUEUE_NAME="+tasks.InboundQueueID,
		// A short lease, so the killed holder's conversation is taken over within the test.
		"CONVERSATION_LEASE=3s", "TRACE_EXPORTER=", "KMS_KEY_NAME=")
	return &workerProcess{t: t, bin: bin, env: env, logs: s.logs}
}

// start starts the worker and waits until it answers.
func (w *workerProcess) start(url string) {
	w.t.Helper()
	w.cmd = exec.Command(w.bin)
	w.cmd.Env, w.cmd.Stdout, w.cmd.Stderr = w.env, w.logs, w.logs
	if err := w.cmd.Start(); err != nil {
		w.t.Fatal(err)
	}
	cmd := w.cmd
	w.t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	testenv.Eventually(w.t, 30*time.Second, func() bool {
		c, err := net.DialTimeout("tcp", url, 200*time.Millisecond)
		if err == nil {
			c.Close()
		}
		return err == nil
	}, "the worker process never listened")
}

// kill ends the worker with SIGKILL: no drain, no deferred code.
func (w *workerProcess) kill() {
	w.t.Helper()
	if err := w.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		w.t.Fatal(err)
	}
	_ = w.cmd.Wait()
}

// TestAssistantWorkerKilledDuringLLMCall: the worker is killed with SIGKILL while its turn waits
// for the LLM. After a restart the user gets exactly one confirmation prompt, and after "yes"
// exactly one result; the action runs once.
func TestAssistantWorkerKilledDuringLLMCall(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs cmd/worker")
	}
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	s := newStack(t, stackOptions{externalWorkerAddr: addr})
	w := newWorkerProcess(t, s, addr)
	w.start(addr)

	// The tenant's queue retries for longer than the conversation's lease.
	ctx := context.Background()
	admin, err := taskqueue.NewAdmin(ctx, s.Project, s.Location, s.TasksAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	keeper, err := secrets.New(ctx, secrets.Config{Dev: true})
	if err != nil {
		t.Fatal(err)
	}
	defer keeper.Close()
	qf := testenv.FastQueues(t)
	for id, q := range qf.Templates {
		q.RetryConfig.MinBackoff.Duration, q.RetryConfig.MaxBackoff.Duration, q.RetryConfig.MaxAttempts = 300*time.Millisecond, time.Second, 60
		qf.Templates[id] = q
	}
	ops := &operator.Tenants{Store: store.NewTenants(store.NewDB(s.fs), store.Options{}), Queues: admin, QueueFile: qf, Sealer: keeper, Dev: true}
	tid := s.assistantTenantWith(ops, "acme-killed", numberA, "")

	reached, release := make(chan struct{}), make(chan struct{})
	var calls atomic.Int32
	if err := s.Gemini.AddRule(geminifake.Rule{Contains: "book", Respond: func(c geminifake.Call) geminifake.Answer {
		if calls.Add(1) == 1 {
			close(reached)
			<-release
		}
		for _, r := range geminifake.DefaultRules() {
			if r.Name == geminifake.IntentCreateBooking {
				return r.Respond(c)
			}
		}
		return geminifake.Answer{}
	}}); err != nil {
		t.Fatal(err)
	}
	defer func() {
		select {
		case <-release:
		default:
			close(release)
		}
	}()

	s.text(numberA, contact, booking, time.Time{})
	select {
	case <-reached:
	case <-time.After(30 * time.Second):
		t.Fatal("the turn never called the LLM")
	}
	w.kill()
	close(release)
	w.start(addr)

	prompt := s.waitSendsTo(contact, 1)[0]
	if got := buttons(prompt); len(got) != 2 || got[0] != assistant.ButtonYes {
		t.Fatalf("after the restart the user got %q with buttons %v, want the confirmation", body(prompt), got)
	}
	s.tap(numberA, contact, assistant.ButtonYes, prompt.MessageID)
	result := s.waitSendsTo(contact, 2)[1]
	s.settled(tid)
	if len(s.sendsTo(contact)) != 2 || body(result) != "Done: create_booking recorded" {
		t.Errorf("the user got %d messages (last %q), want exactly the prompt and the result", len(s.sendsTo(contact)), body(result))
	}
	if n := len(s.Action.Calls()); n != 1 {
		t.Errorf("%d action calls, want 1", n)
	}
	if body(result) == i18n.Text("en", i18n.ActionError) {
		t.Error("the action failed")
	}
	t.Logf("LLM calls: %d (the killed one and the redone turn)", calls.Load())
}
