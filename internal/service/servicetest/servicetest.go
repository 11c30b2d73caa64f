// Package servicetest runs a service's main in a test the way Cloud Run runs it: its
// configuration from the environment, on the test's emulators, on a port of its own, judged by
// its startup and liveness probes.
package servicetest

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/sethvargo/go-envconfig"

	"github.com/wapipe/wapipe/internal/config"
	"github.com/wapipe/wapipe/internal/service"
	"github.com/wapipe/wapipe/internal/testenv"
)

// Env is the environment every service reads, in dev: the Firestore emulator of the test binary
// (its TestMain calls testenv.RunWithFirestore), a Cloud Tasks emulator of the test's own, a
// project of its own and a free port; extra adds to it or overrides it.
func Env(t *testing.T, extra map[string]string) map[string]string {
	t.Helper()
	testenv.FirestoreHost(t)
	project := testenv.ProjectID(t)
	emu, _ := testenv.Tasks(t, project, "us-central1", nil)
	env := map[string]string{
		"APP_ENV": config.EnvDev, "GOOGLE_CLOUD_PROJECT": project, "TASKS_LOCATION": "us-central1",
		"CLOUD_TASKS_EMULATOR_HOST": emu.Addr(), "INTERNAL_TASK_BASE_URL": "http://127.0.0.1:1",
		"INTERNAL_TASK_TOKEN": "dev-internal-token-0123456789", "TRACE_EXPORTER": "none", "LOG_LEVEL": "WARN",
		"PORT": strconv.Itoa(freePort(t)),
	}
	for k, v := range extra {
		env[k] = v
	}
	return env
}

// CheckProbes loads cfg from env and runs realMain, as the service's main does, until it has
// checked the probes Cloud Run sends: the startup probe (service.StartupPath) answers 200 once the
// service's clients are warm, the liveness probe (/healthz) 200. Then it ends realMain's context
// and wants it to return nil: drained, clients closed.
func CheckProbes[C config.Validator](t *testing.T, cfg C, env map[string]string, realMain func(context.Context, C) error) {
	t.Helper()
	if err := config.Load(t.Context(), envconfig.MapLookuper(env), cfg); err != nil {
		t.Fatalf("config: %v", err)
	}
	ctx, stop := context.WithCancel(context.Background())
	ended := make(chan error, 1)
	go func() { ended <- realMain(ctx, cfg) }()
	base := "http://127.0.0.1:" + env["PORT"]
	client := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(30 * time.Second)
	for status(client, base+service.StartupPath) != http.StatusOK {
		select {
		case err := <-ended:
			stop()
			t.Fatalf("the service ended before its startup probe answered 200: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			stop()
			t.Fatalf("GET %s: not 200 within 30 s", service.StartupPath)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if code := status(client, base+"/healthz"); code != http.StatusOK {
		t.Errorf("GET /healthz = %d, want 200", code)
	}
	stop()
	select {
	case err := <-ended:
		if err != nil {
			t.Errorf("the service ended with %v, want nil", err)
		}
	case <-time.After(15 * time.Second):
		t.Error("the service did not end within 15 s of its context")
	}
}

// status is the answer's status to GET url, 0 without one.
func status(client *http.Client, url string) int {
	resp, err := client.Get(url)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// freePort is a port nothing listens on now.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(fmt.Errorf("find a free port: %w", err))
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}
