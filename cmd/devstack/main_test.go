package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wapipe/wapipe/internal/firestoreemu"
	"github.com/wapipe/wapipe/internal/testenv"
	"github.com/wapipe/wapipe/tasks"
)

func TestMain(m *testing.M) {
	code := testenv.RunWithFirestore(m)
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

func TestParseFlags(t *testing.T) {
	t.Parallel()
	got, err := parseFlags([]string{"--firestore-emulator", "127.0.0.1:1"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	want := config{webhookAddr: "127.0.0.1:8080", workerAddr: "127.0.0.1:8081", apiAddr: "127.0.0.1:8083", tasksAddr: "127.0.0.1:8123",
		graphAddr: "127.0.0.1:8090", geminiAddr: "127.0.0.1:8094", actionAddr: "127.0.0.1:8095", consoleAddr: "127.0.0.1:8085", project: "wapipe-dev", location: "us-central1", firestoreHost: "127.0.0.1:1", logLevel: "INFO"}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(config{})); diff != "" {
		t.Errorf("defaults (-want, +got):\n%s", diff)
	}
	if _, err := parseFlags([]string{"serve"}, io.Discard); err == nil {
		t.Error("a stray argument was accepted")
	}
}

var (
	buildOnce sync.Once
	binDir    string
	buildErr  error
)

// binaries builds devstack and wapipe once per test binary.
func binaries(t *testing.T) (devstackBin, wapipeBin string) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs binaries: skipped under -short")
	}
	buildOnce.Do(func() {
		binDir, buildErr = os.MkdirTemp("", "wapipe-devstack-test-")
		if buildErr != nil {
			return
		}
		goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
		cmd := exec.Command(goBin, "build", "-o", binDir+string(os.PathSeparator), "github.com/wapipe/wapipe/cmd/devstack", "github.com/wapipe/wapipe/cmd/wapipe")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return filepath.Join(binDir, "devstack"), filepath.Join(binDir, "wapipe")
}

// syncBuffer is a bytes.Buffer safe for a child's output and the test's reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// childEnv is the test's environment without the settings a stray emulator could leak in, plus
// extra.
func childEnv(extra ...string) []string {
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "CLOUD_TASKS_EMULATOR_HOST", "FIRESTORE_EMULATOR_HOST", "GOOGLE_CLOUD_PROJECT", "WHATSAPP_APP_SECRET":
			continue
		}
		out = append(out, kv)
	}
	return append(out, extra...)
}

// processesWith lists the processes (other than this one) whose environment holds marker.
func processesWith(marker string) []string {
	entries, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range entries {
		if e.Name()[0] < '0' || e.Name()[0] > '9' || e.Name() == fmt.Sprint(os.Getpid()) {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err == nil && bytes.Contains(b, []byte(marker)) {
			cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
			out = append(out, e.Name()+" "+strings.ReplaceAll(string(cmdline), "\x00", " "))
		}
	}
	return out
}

// TestDevstackBinary runs the real binaries: devstack up, a text message in through `wapipe
// trigger`, its reply out at the fake Graph API, then SIGINT stops everything with exit 0.
func TestDevstackBinary(t *testing.T) {
	t.Parallel()
	fsHost := testenv.FirestoreHost(t)
	devstackBin, wapipeBin := binaries(t)
	dir := t.TempDir()
	addrs := make([]string, 5)
	for i := range addrs {
		port, err := firestoreemu.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		addrs[i] = fmt.Sprintf("127.0.0.1:%d", port)
	}
	mb := make([]byte, 8)
	_, _ = rand.Read(mb)
	marker := "WAPIPE_TEST_MARKER=" + hex.EncodeToString(mb)
	readyFile := filepath.Join(dir, "ready.json")
	logDir := filepath.Join(dir, "logs")

	cmd := exec.Command(devstackBin,
		"--webhook-addr", addrs[0], "--worker-addr", addrs[1], "--tasks-addr", addrs[2], "--graph-addr", addrs[3],
		"--console-addr", addrs[4],
		"--firestore-emulator", fsHost, "--project", testenv.ProjectID(t),
		"--ready-file", readyFile, "--log-dir", logDir)
	cmd.Env = childEnv(marker)
	var stdout, stderr syncBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	var exitErr error
	testenv.Eventually(t, 60*time.Second, func() bool {
		select {
		case exitErr = <-exited:
			stopped = true
			t.Fatalf("devstack exited before it was ready: %v\nstdout:\n%s\nstderr:\n%s", exitErr, stdout.String(), stderr.String())
		default:
		}
		_, err := os.Stat(readyFile)
		return err == nil
	}, "devstack never wrote %s\nstderr:\n%s", readyFile, stderr.String())

	var ready Ready
	b, err := os.ReadFile(readyFile)
	if err != nil || json.Unmarshal(b, &ready) != nil {
		t.Fatalf("ready file: %v\n%s", err, b)
	}
	if ready.WebhookURL != "http://"+addrs[0]+"/webhooks/whatsapp" || ready.WorkerURL != "http://"+addrs[1] ||
		ready.TasksAddr != addrs[2] || ready.FakeRequestsURL != "http://"+addrs[3]+"/_fake/requests" || ready.FirestoreHost != fsHost ||
		ready.ConsoleURL != "http://"+addrs[4] {
		t.Errorf("ready file = %+v, want the addresses given", ready)
	}
	banner := stdout.String()
	for _, want := range []string{ready.WebhookURL, "verify token  dev-verify-token", "app secret    dev-app-secret",
		ready.FakeRequestsURL, "export CLOUD_TASKS_EMULATOR_HOST=" + addrs[2], "export FIRESTORE_EMULATOR_HOST=" + fsHost,
		"export GOOGLE_CLOUD_PROJECT=" + ready.Project, "export TASKS_LOCATION=us-central1",
		"export INTERNAL_TASK_TOKEN=dev-internal-token", filepath.Join(logDir, "webhook.log"), filepath.Join(logDir, "worker.log")} {
		if !strings.Contains(banner, want) {
			t.Errorf("the banner lacks %q:\n%s", want, banner)
		}
	}

	// A text message in through the CLI binary…
	trig := exec.Command(wapipeBin, "trigger", "--url", ready.WebhookURL, "--text", "hello from the test")
	trig.Env = childEnv(marker)
	out, err := trig.CombinedOutput()
	if err != nil || !strings.Contains(string(out), `200 {"status":"accepted"}`) {
		t.Fatalf("wapipe trigger: %v\n%s", err, out)
	}
	var msgID string
	for _, line := range strings.Split(string(out), "\n") {
		if ids, ok := strings.CutPrefix(line, "message ids: "); ok {
			msgID = strings.Fields(ids)[0]
		}
	}
	// …and its reply out at the fake Graph API.
	key := tasks.IdempotencyKey(msgID)
	testenv.Eventually(t, 30*time.Second, func() bool {
		resp, err := http.Get(ready.FakeRequestsURL)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		var v struct {
			Requests []struct {
				Kind   string         `json:"kind"`
				Status int            `json:"status"`
				Body   map[string]any `json:"body"`
			} `json:"requests"`
		}
		if json.NewDecoder(resp.Body).Decode(&v) != nil {
			return false
		}
		for _, r := range v.Requests {
			if r.Kind == "send" && r.Status == http.StatusOK && r.Body["biz_opaque_callback_data"] == key {
				return true
			}
		}
		return false
	}, "the reply to %s never reached the fake Graph API", msgID)
	for _, c := range []string{"webhook", "worker", "tasks-emulator", "graph"} {
		if st, err := os.Stat(filepath.Join(logDir, c+".log")); err != nil || st.Size() == 0 {
			t.Errorf("%s.log: %v, want a log with lines", c, err)
		}
	}

	// Ctrl-C stops everything: exit 0, no process left, every port free.
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case exitErr = <-exited:
		stopped = true
	case <-time.After(30 * time.Second):
		t.Fatalf("devstack still running 30s after SIGINT\nstderr:\n%s", stderr.String())
	}
	if exitErr != nil {
		t.Fatalf("devstack exited with %v after SIGINT, want 0\nstderr:\n%s", exitErr, stderr.String())
	}
	if !strings.Contains(stderr.String(), "devstack: stopped") {
		t.Errorf("stderr:\n%s\nwant the stop reported", stderr.String())
	}
	if _, err := os.Stat(readyFile); !os.IsNotExist(err) {
		t.Errorf("the ready file outlived devstack: %v", err)
	}
	if left := processesWith(marker); len(left) > 0 {
		t.Errorf("processes left after devstack exited: %v", left)
	}
	for _, a := range addrs {
		ln, err := net.Listen("tcp", a)
		if err != nil {
			t.Errorf("%s still taken after devstack exited: %v", a, err)
			continue
		}
		ln.Close()
	}
}

// TestDevstackWithoutGcloud: with no emulator to reuse and no gcloud, devstack says what to
// install in one line and exits 1.
func TestDevstackWithoutGcloud(t *testing.T) {
	t.Parallel()
	devstackBin, _ := binaries(t)
	cmd := exec.Command(devstackBin, "--webhook-addr", "127.0.0.1:0", "--worker-addr", "127.0.0.1:0",
		"--tasks-addr", "127.0.0.1:0", "--graph-addr", "127.0.0.1:0", "--log-dir", t.TempDir())
	env := []string{}
	for _, kv := range childEnv() {
		if !strings.HasPrefix(kv, "PATH=") {
			env = append(env, kv)
		}
	}
	cmd.Env = append(env, "PATH="+t.TempDir())
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	go func() { <-ctx.Done(); _ = cmd.Process.Kill() }()
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("devstack without gcloud: %v, want exit 1\nstderr:\n%s", err, stderr.String())
	}
	line := strings.TrimSuffix(stderr.String(), "\n")
	if strings.Contains(line, "\n") || !strings.HasPrefix(line, "devstack: ") || !strings.Contains(line, "gcloud") || !strings.Contains(line, "install") {
		t.Errorf("stderr %q: want one line saying what to install", stderr.String())
	}
	if stdout.Len() != 0 {
		t.Errorf("stdout %q, want nothing", stdout.String())
	}
}
