// Package firestoreemu starts and stops Google's Firestore emulator (`gcloud emulators firestore
// start`) for tests and the local stack, and clears its data between tests.
package firestoreemu

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// ErrNoGcloud is returned by Start when gcloud is not on the PATH.
var ErrNoGcloud = errors.New("gcloud not found on PATH: install the Google Cloud CLI and its firestore emulator component (gcloud components install cloud-firestore-emulator, or apt-get install google-cloud-cli-firestore-emulator)")

// Emulator is a running Firestore emulator.
type Emulator struct {
	// Host is the emulator's host:port, the value for FIRESTORE_EMULATOR_HOST.
	Host string

	cmd      *exec.Cmd
	done     chan struct{}
	waitErr  error
	stopOnce sync.Once
}

// Options configure Start.
type Options struct {
	// HostPort is where the emulator listens; empty picks a free port on 127.0.0.1.
	HostPort string
	// Log receives the emulator's own output; nil discards it.
	Log io.Writer
	// StartTimeout bounds the wait for the emulator to answer; zero means 90 s.
	StartTimeout time.Duration
}

// Start launches the emulator and returns once it answers requests.
func Start(ctx context.Context, opts Options) (*Emulator, error) {
	gcloud, err := exec.LookPath("gcloud")
	if err != nil {
		return nil, ErrNoGcloud
	}
	hostPort := opts.HostPort
	if hostPort == "" {
		port, err := FreePort()
		if err != nil {
			return nil, err
		}
		hostPort = "127.0.0.1:" + strconv.Itoa(port)
	}
	logw := opts.Log
	if logw == nil {
		logw = io.Discard
	}
	cmd := exec.Command(gcloud, "emulators", "firestore", "start", "--host-port="+hostPort, "--quiet")
	cmd.Stdout, cmd.Stderr = logw, logw
	// gcloud starts java as a child: a process group lets Stop end both.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start firestore emulator: %w", err)
	}
	e := &Emulator{Host: hostPort, cmd: cmd, done: make(chan struct{})}
	go func() {
		e.waitErr = cmd.Wait()
		close(e.done)
	}()

	timeout := opts.StartTimeout
	if timeout == 0 {
		timeout = 90 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := e.waitReady(ctx); err != nil {
		e.Stop()
		return nil, err
	}
	return e, nil
}

func (e *Emulator) waitReady(ctx context.Context) error {
	client := &http.Client{Timeout: time.Second}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		resp, err := client.Get("http://" + e.Host + "/")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-e.done:
			return fmt.Errorf("firestore emulator exited before it was ready: %v", e.waitErr)
		case <-ctx.Done():
			return fmt.Errorf("firestore emulator at %s not ready: %w", e.Host, ctx.Err())
		case <-tick.C:
		}
	}
}

// Stop ends the emulator and its java child, and waits for them.
func (e *Emulator) Stop() {
	e.stopOnce.Do(func() {
		pgid := -e.cmd.Process.Pid
		_ = syscall.Kill(pgid, syscall.SIGTERM)
		select {
		case <-e.done:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(pgid, syscall.SIGKILL)
			<-e.done
		}
		// The java child may outlive gcloud's python wrapper for a moment.
		_ = syscall.Kill(pgid, syscall.SIGKILL)
	})
}

// Reset deletes every document of one project's default database.
func Reset(ctx context.Context, host, projectID string) error {
	url := "http://" + host + "/emulator/v1/projects/" + projectID + "/databases/(default)/documents"
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, url, nil)
	if err != nil {
		return fmt.Errorf("reset firestore emulator: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("reset firestore emulator: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("reset firestore emulator: %s: %s", resp.Status, bytes.TrimSpace(b))
	}
	return nil
}

// FreePort asks the kernel for a free TCP port on 127.0.0.1.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Env is the environment variable the client libraries read.
const Env = "FIRESTORE_EMULATOR_HOST"

// FromEnv returns FIRESTORE_EMULATOR_HOST, if set.
func FromEnv() string { return os.Getenv(Env) }
