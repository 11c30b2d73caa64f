package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wapipe/wapipe/internal/devenv"
	"github.com/wapipe/wapipe/internal/firestoreemu"
	"github.com/wapipe/wapipe/internal/keyedid"
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
	envFile, err := devenv.Path()
	if err != nil {
		t.Fatal(err)
	}
	want := config{webhookAddr: "127.0.0.1:8080", workerAddr: "127.0.0.1:8081", apiAddr: "127.0.0.1:8083", tasksAddr: "127.0.0.1:8123",
		graphAddr: "127.0.0.1:8090", geminiAddr: "127.0.0.1:8094", actionAddr: "127.0.0.1:8095", consoleAddr: "127.0.0.1:8085", project: "wapipe-dev", location: "us-central1", firestoreHost: "127.0.0.1:1", logLevel: "INFO",
		envFile: envFile}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(config{})); diff != "" {
		t.Errorf("defaults (-want, +got):\n%s", diff)
	}
	if _, err := parseFlags([]string{"serve"}, io.Discard); err == nil {
		t.Error("a stray argument was accepted")
	}

	// --port-base moves every address by its offset; an address flag given wins.
	got, err = parseFlags([]string{"--port-base", "9000", "--action-addr", "127.0.0.1:7000", "--env-file", ""}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	want = config{webhookAddr: "127.0.0.1:9000", workerAddr: "127.0.0.1:9001", apiAddr: "127.0.0.1:9003", tasksAddr: "127.0.0.1:9043",
		graphAddr: "127.0.0.1:9010", geminiAddr: "127.0.0.1:9014", actionAddr: "127.0.0.1:7000", consoleAddr: "127.0.0.1:9005", project: "wapipe-dev", location: "us-central1", logLevel: "INFO",
		firestoreHost: os.Getenv("FIRESTORE_EMULATOR_HOST")}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(config{})); diff != "" {
		t.Errorf("--port-base 9000 (-want, +got):\n%s", diff)
	}
	for _, bad := range []string{"0", "65500", "x"} {
		if _, err := parseFlags([]string{"--port-base", bad}, io.Discard); err == nil {
			t.Errorf("--port-base %s was accepted", bad)
		}
	}
	var help strings.Builder
	if _, err := parseFlags([]string{"--help"}, &help); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("--help: %v", err)
	}
	if !strings.Contains(help.String(), "webhook +0, worker +1, api +3, console +5, graph +10, gemini +14, action +15, tasks +43") {
		t.Errorf("--help does not document the --port-base offsets:\n%s", help.String())
	}
}

// TestDevstackPortTaken: a taken port stops devstack at once, before the Firestore emulator
// starts (there is no gcloud here, which would otherwise be the error), in one line that names
// the flag that moves it and the chance of another devstack.
func TestDevstackPortTaken(t *testing.T) {
	t.Parallel()
	devstackBin, _ := binaries(t)
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	stdout, stderr := runWithoutGcloud(t, devstackBin, "--action-addr", taken.Addr().String())
	line := strings.TrimSuffix(stderr, "\n")
	for _, want := range []string{taken.Addr().String(), "--action-addr", "--port-base", "another devstack"} {
		if !strings.Contains(line, want) {
			t.Errorf("stderr %q lacks %q", line, want)
		}
	}
	if strings.Contains(line, "\n") || strings.Contains(line, "gcloud") {
		t.Errorf("stderr %q: want one line about the port, before anything starts", line)
	}
	if stdout != "" {
		t.Errorf("stdout %q, want nothing", stdout)
	}
}

// withoutKeys is env without the variables named.
func withoutKeys(env []string, keys ...string) []string {
	var out []string
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(keys, k) {
			out = append(out, kv)
		}
	}
	return out
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
	env := withoutKeys(os.Environ(), "CLOUD_TASKS_EMULATOR_HOST", "FIRESTORE_EMULATOR_HOST", "GOOGLE_CLOUD_PROJECT", "WHATSAPP_APP_SECRET")
	return append(env, extra...)
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
	// Every address on a free port: the test must pass beside a devstack on the defaults. To
	// prove it, the test holds every default port it can get (one already taken is the same
	// case).
	for _, p := range ports {
		if ln, err := net.Listen("tcp", portAddr(defaultPortBase, p.offset)); err == nil {
			t.Cleanup(func() { ln.Close() })
		}
	}
	addrs := make([]string, 8)
	seen := map[string]bool{}
	for i := range addrs {
		for addrs[i] == "" || seen[addrs[i]] {
			port, err := firestoreemu.FreePort()
			if err != nil {
				t.Fatal(err)
			}
			addrs[i] = fmt.Sprintf("127.0.0.1:%d", port)
		}
		seen[addrs[i]] = true
	}
	// The CLI finds the stack through a file under HOME/XDG_RUNTIME_DIR: both point into the test.
	home, runtimeDir := filepath.Join(dir, "home"), filepath.Join(dir, "run")
	envFile := filepath.Join(runtimeDir, "wapipe", "devstack.env")
	mb := make([]byte, 8)
	_, _ = rand.Read(mb)
	marker := "WAPIPE_TEST_MARKER=" + hex.EncodeToString(mb)
	readyFile := filepath.Join(dir, "ready.json")
	logDir := filepath.Join(dir, "logs")

	cmd := exec.Command(devstackBin,
		"--webhook-addr", addrs[0], "--worker-addr", addrs[1], "--tasks-addr", addrs[2], "--graph-addr", addrs[3],
		"--console-addr", addrs[4], "--api-addr", addrs[5], "--gemini-addr", addrs[6], "--action-addr", addrs[7],
		"--firestore-emulator", fsHost, "--project", testenv.ProjectID(t),
		"--ready-file", readyFile, "--log-dir", logDir)
	cmd.Env = childEnv(marker, "HOME="+home, "XDG_RUNTIME_DIR="+runtimeDir)
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
		ready.ConsoleURL != "http://"+addrs[4] || ready.APIURL != "http://"+addrs[5] || ready.GeminiURL != "http://"+addrs[6] ||
		ready.ActionURL != "http://"+addrs[7]+"/wapipe/actions" {
		t.Errorf("ready file = %+v, want the addresses given", ready)
	}
	wants := []string{ready.WebhookURL, "verify token  dev-verify-token", "app secret    dev-app-secret",
		ready.FakeRequestsURL, "export CLOUD_TASKS_EMULATOR_HOST=" + addrs[2], "export FIRESTORE_EMULATOR_HOST=" + fsHost,
		"export GOOGLE_CLOUD_PROJECT=" + ready.Project, "export TASKS_LOCATION=us-central1",
		"export INTERNAL_TASK_TOKEN=dev-internal-token", filepath.Join(logDir, "webhook.log"), filepath.Join(logDir, "worker.log")}
	// devstack prints the banner before it writes the ready file, but the banner reaches stdout
	// through exec's copying goroutine, which may not have run yet: wait for all of it.
	deadline := time.Now().Add(30 * time.Second)
	banner := stdout.String()
	for !containsAll(banner, wants) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
		banner = stdout.String()
	}
	for _, want := range wants {
		if !strings.Contains(banner, want) {
			t.Errorf("the banner lacks %q:\n%s", want, banner)
		}
	}

	// The environment file: the stack's settings, owner-only.
	if fi, err := os.Stat(envFile); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("environment file %s: %v, want mode 0600", envFile, err)
	}
	// The CLI with no exports at all (only HOME, XDG_RUNTIME_DIR and PATH) finds the stack and
	// lists the sample tenant, saying once which file it used.
	list := exec.Command(wapipeBin, "tenants", "list")
	list.Env = []string{"HOME=" + home, "XDG_RUNTIME_DIR=" + runtimeDir, "PATH=" + os.Getenv("PATH"), marker}
	var listOut, listErr bytes.Buffer
	list.Stdout, list.Stderr = &listOut, &listErr
	if err := list.Run(); err != nil {
		t.Fatalf("wapipe tenants list beside the devstack: %v\nstdout:\n%s\nstderr:\n%s", err, listOut.String(), listErr.String())
	}
	if !strings.Contains(listOut.String(), "sunrise-bus") {
		t.Errorf("wapipe tenants list:\n%s\nwant the sample tenant", listOut.String())
	}
	if want := "wapipe: using the running devstack's environment from " + envFile + "\n"; listErr.String() != want {
		t.Errorf("stderr %q, want %q", listErr.String(), want)
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
	key := tasks.IdempotencyKey(keyedid.Dev(), msgID)
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
	if _, err := os.Stat(envFile); !os.IsNotExist(err) {
		t.Errorf("the environment file outlived devstack: %v", err)
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
	stdout, stderr := runWithoutGcloud(t, devstackBin)
	line := strings.TrimSuffix(stderr, "\n")
	if strings.Contains(line, "\n") || !strings.HasPrefix(line, "devstack: ") || !strings.Contains(line, "gcloud") || !strings.Contains(line, "install") {
		t.Errorf("stderr %q: want one line saying what to install", stderr)
	}
	if stdout != "" {
		t.Errorf("stdout %q, want nothing", stdout)
	}
}

// runWithoutGcloud runs devstack with no gcloud on PATH, no Firestore emulator to reuse, every
// address on a free port (args given later win) and no environment file, and wants exit 1.
func runWithoutGcloud(t *testing.T, devstackBin string, args ...string) (stdout, stderr string) {
	t.Helper()
	all := []string{"--env-file", "", "--log-dir", t.TempDir()}
	for _, p := range ports {
		all = append(all, "--"+p.flag, "127.0.0.1:0")
	}
	cmd := exec.Command(devstackBin, append(all, args...)...)
	cmd.Env = append(withoutKeys(childEnv(), "PATH"), "PATH="+t.TempDir())
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	go func() { <-ctx.Done(); _ = cmd.Process.Kill() }()
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("devstack %v: %v, want exit 1\nstderr:\n%s", args, err, errOut.String())
	}
	return out.String(), errOut.String()
}

// containsAll reports whether s contains every one of subs.
func containsAll(s string, subs []string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
