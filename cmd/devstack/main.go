// Command devstack runs the whole wapipe pipeline on this machine with APP_ENV=dev: the Firestore
// emulator (started through gcloud on a free port, or the one FIRESTORE_EMULATOR_HOST names), the
// Cloud Tasks emulator with the queues of tasks/queues.yaml, the fake Graph API, the webhook and
// the worker, wired as in production. It prints the URLs, the dev secrets to use and the
// environment to export for the wapipe CLI, writes each component's logs to a file of its own,
// and stops everything, emulator included, on Ctrl-C (SIGINT) or SIGTERM.
//
// Default addresses: webhook 127.0.0.1:8080, worker 127.0.0.1:8081, api 127.0.0.1:8083, Cloud
// Tasks emulator 127.0.0.1:8123, fake Graph API 127.0.0.1:8090, fake Vertex AI Gemini
// 127.0.0.1:8094, fake business action endpoint 127.0.0.1:8095 (the sample tenant's action_url
// follows it), operators' console 127.0.0.1:8085; --port-base N moves them all (ports.go). Every
// port is checked before anything starts. While it runs, devstack writes its environment to the
// file of internal/devenv, where the wapipe CLI finds it.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"

	"github.com/wapipe/wapipe/internal/devenv"
	"github.com/wapipe/wapipe/internal/devstack"
	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/tasks"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(os.Stderr, "devstack: panic: %v\n", r)
			os.Exit(2)
		}
	}()
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	switch {
	case errors.Is(err, flag.ErrHelp):
	case err != nil:
		fmt.Fprintln(os.Stderr, "devstack: "+strings.Join(strings.Fields(err.Error()), " "))
		os.Exit(1)
	}
}

// config is the command line.
type config struct {
	webhookAddr, workerAddr, apiAddr, tasksAddr, graphAddr string
	geminiAddr, actionAddr, consoleAddr                    string
	project, location, queues                              string
	firestoreHost, logDir, readyFile, logLevel             string
	// envFile is where the CLI finds this stack (internal/devenv); "" writes none.
	envFile string
}

const usage = `Usage: devstack [flags]

Runs the whole wapipe pipeline locally (APP_ENV=dev): Firestore emulator, Cloud Tasks emulator,
fake Graph API, webhook and worker. Stop it with Ctrl-C.

Every port is checked before anything starts; a taken one is named with the flag that moves it.
Two stacks side by side: devstack --port-base 9080. While it runs, the wapipe CLI finds it
through --env-file (no exports needed).

Flags:
`

func parseFlags(args []string, stdout io.Writer) (config, error) {
	var c config
	fs := flag.NewFlagSet("devstack", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	for _, p := range ports {
		fs.StringVar(p.field(&c), p.flag, portAddr(defaultPortBase, p.offset), p.help)
	}
	portBase := fs.Int("port-base", defaultPortBase, "move every --*-addr to 127.0.0.1:N+offset (offsets: "+portOffsets()+"); an --*-addr flag given wins")
	envFile, envErr := devenv.Path()
	fs.StringVar(&c.envFile, "env-file", envFile, "write the environment the wapipe CLI reads to this file while running (JSON, mode 0600, removed on exit); empty writes none")
	fs.StringVar(&c.project, "project", "wapipe-dev", "project id of the emulated project")
	fs.StringVar(&c.location, "location", "us-central1", "Cloud Tasks location")
	fs.StringVar(&c.queues, "queues", "", "queues file (default: the embedded tasks/queues.yaml)")
	fs.StringVar(&c.firestoreHost, "firestore-emulator", os.Getenv("FIRESTORE_EMULATOR_HOST"),
		"reuse the Firestore emulator at host:port (env FIRESTORE_EMULATOR_HOST); empty starts one through gcloud on a free port")
	fs.StringVar(&c.logDir, "log-dir", "", "directory for the components' logs (default: a new temporary directory)")
	fs.StringVar(&c.readyFile, "ready-file", "", "write the URLs as JSON to this file once everything answers")
	fs.StringVar(&c.logLevel, "log-level", "INFO", "log level of the services: DEBUG, INFO, WARNING or ERROR")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			var b strings.Builder
			b.WriteString(usage)
			fs.SetOutput(&b)
			fs.PrintDefaults()
			io.WriteString(stdout, b.String())
		}
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected argument %q (see devstack --help)", fs.Arg(0))
	}
	if *portBase < 1 || *portBase+maxPortOffset > 65535 {
		return c, fmt.Errorf("--port-base %d: want 1 to %d", *portBase, 65535-maxPortOffset)
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	for _, p := range ports {
		if !given[p.flag] {
			*p.field(&c) = portAddr(*portBase, p.offset)
		}
	}
	if envErr != nil && !given["env-file"] {
		return c, fmt.Errorf("%w (or give --env-file)", envErr)
	}
	return c, nil
}

// Ready is what --ready-file holds once the stack answers.
type Ready struct {
	WebhookURL      string `json:"webhook_url"`
	WorkerURL       string `json:"worker_url"`
	APIURL          string `json:"api_url"`
	ConsoleURL      string `json:"console_url"`
	GraphURL        string `json:"graph_url"`
	FakeRequestsURL string `json:"fake_requests_url"`
	// GeminiURL is the fake Vertex AI (its controls under /_fake/); ActionURL the fake business
	// endpoint, whose calls are listed at ActionCallsURL.
	GeminiURL      string            `json:"gemini_url"`
	ActionURL      string            `json:"action_url"`
	ActionCallsURL string            `json:"action_calls_url"`
	TasksAddr      string            `json:"tasks_emulator_host"`
	FirestoreHost  string            `json:"firestore_emulator_host"`
	Project        string            `json:"project"`
	Location       string            `json:"location"`
	LogDir         string            `json:"log_dir"`
	Logs           map[string]string `json:"logs"`
	Env            map[string]string `json:"env"`
	PID            int               `json:"pid"`
}

// logFiles opens one log file per component on first use.
type logFiles struct {
	dir   string
	mu    sync.Mutex
	files map[string]*os.File
	err   error
}

func (l *logFiles) writer(component string) io.Writer {
	l.mu.Lock()
	defer l.mu.Unlock()
	if f, ok := l.files[component]; ok {
		return f
	}
	f, err := os.OpenFile(filepath.Join(l.dir, component+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		if l.err == nil {
			l.err = fmt.Errorf("open log file: %w", err)
		}
		return io.Discard
	}
	l.files[component] = f
	return f
}

func (l *logFiles) paths() map[string]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[string]string{}
	for c, f := range l.files {
		out[c] = f.Name()
	}
	return out
}

func (l *logFiles) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, f := range l.files {
		f.Close()
	}
}

// run starts the stack, prints how to use it, and serves until ctx ends.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := parseFlags(args, stdout)
	if err != nil {
		return err
	}
	// A taken port is found now, in one clear line, not after the Firestore emulator's start.
	if err := checkPorts(cfg); err != nil {
		return err
	}
	queues, err := tasks.LoadQueues(cfg.queues)
	if err != nil {
		return fmt.Errorf("tasks.LoadQueues: %w", err)
	}
	logDir := cfg.logDir
	if logDir == "" {
		if logDir, err = os.MkdirTemp("", "wapipe-devstack-"); err != nil {
			return fmt.Errorf("create the log directory: %w", err)
		}
	} else if err := os.MkdirAll(logDir, 0o755); err != nil {
		return fmt.Errorf("create the log directory: %w", err)
	}
	logs := &logFiles{dir: logDir, files: map[string]*os.File{}}
	defer logs.close()

	if _, err := exec.LookPath("gcloud"); err == nil && cfg.firestoreHost == "" {
		fmt.Fprintln(stderr, "devstack: starting the Firestore emulator through gcloud (this takes a few seconds)…")
	}
	st, err := devstack.Start(ctx, devstack.Options{
		FirestoreHost: cfg.firestoreHost,
		Project:       cfg.project, Location: cfg.location, Queues: queues,
		WebhookAddr: cfg.webhookAddr, WorkerAddr: cfg.workerAddr, TasksAddr: cfg.tasksAddr, GraphAddr: cfg.graphAddr,
		GeminiAddr: cfg.geminiAddr, ActionAddr: cfg.actionAddr,
		APIAddr: cfg.apiAddr, ConsoleAddr: cfg.consoleAddr,
		Logs:     logs.writer,
		LogLevel: logging.ParseLevel(cfg.logLevel),
	})
	if devstack.IsNoGcloud(err) {
		return fmt.Errorf("the Firestore emulator needs gcloud: %w; or point FIRESTORE_EMULATOR_HOST at a running emulator", err)
	}
	if err != nil {
		return fmt.Errorf("devstack.Start: %w (logs in %s)", err, logDir)
	}
	defer st.Stop()
	if logs.err != nil {
		return logs.err
	}

	ready := readyInfo(st, logDir, logs.paths())
	io.WriteString(stdout, banner(st, ready))
	// The environment file first: whoever waits for the ready file may run the CLI at once, and
	// the CLI finds the stack through the environment file.
	if cfg.envFile != "" {
		if err := devenv.Write(cfg.envFile, devenv.File{PID: ready.PID, Env: ready.Env}); err != nil {
			return err
		}
		defer devenv.Remove(cfg.envFile, ready.PID)
		fmt.Fprintf(stderr, "devstack: the wapipe CLI finds this stack through %s\n", cfg.envFile)
	}
	if cfg.readyFile != "" {
		if err := writeReady(cfg.readyFile, ready); err != nil {
			return err
		}
		// A ready file left behind would tell the next reader a stopped stack is up.
		defer os.Remove(cfg.readyFile)
	}

	select {
	case <-ctx.Done():
		fmt.Fprintln(stderr, "devstack: stopping…")
		st.Stop()
		fmt.Fprintln(stderr, "devstack: stopped")
		return nil
	case err := <-st.Err():
		return fmt.Errorf("a component failed: %w (logs in %s)", err, logDir)
	}
}

func readyInfo(st *devstack.Stack, logDir string, logs map[string]string) Ready {
	// The fake's controls are at its root, beside the versioned API.
	root := st.GraphURL
	if u, err := url.Parse(st.GraphURL); err == nil {
		root = u.Scheme + "://" + u.Host
	}
	return Ready{
		WebhookURL: st.WebhookURL, WorkerURL: st.WorkerURL, GraphURL: st.GraphURL, APIURL: st.APIURL, ConsoleURL: st.ConsoleURL,
		FakeRequestsURL: root + "/_fake/requests",
		GeminiURL:       st.GeminiURL, ActionURL: st.ActionURL,
		ActionCallsURL: strings.TrimSuffix(st.ActionURL, "/wapipe/actions") + "/_fake/calls",
		TasksAddr:      st.TasksAddr, FirestoreHost: st.FirestoreHost,
		Project: st.Project, Location: st.Location, LogDir: logDir, Logs: logs,
		Env: map[string]string{
			"CLOUD_TASKS_EMULATOR_HOST": st.TasksAddr,
			"FIRESTORE_EMULATOR_HOST":   st.FirestoreHost,
			"GOOGLE_CLOUD_PROJECT":      st.Project,
			"TASKS_LOCATION":            st.Location,
			"INTERNAL_TASK_TOKEN":       st.InternalToken,
			"INTERNAL_TASK_BASE_URL":    st.WorkerURL,
			"WHATSAPP_APP_SECRET":       st.AppSecret,
			"APP_ENV":                   "dev",
			"GRAPH_API_BASE_URL":        st.GraphURL,
			"PUBLIC_BASE_URL":           st.APIURL,
		},
		PID: os.Getpid(),
	}
}

// banner is what a person reads once the stack is up. The dev secrets are fixed, public values
// (devstack.Dev*), printed on purpose so they can be used.
func banner(st *devstack.Stack, r Ready) string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	p("wapipe devstack is up (APP_ENV=dev, project %s, location %s)", st.Project, st.Location)
	p("")
	p("  webhook         %s", st.WebhookURL)
	p("    verify token  %s", st.VerifyToken)
	p("    app secret    %s   (signs X-Hub-Signature-256)", st.AppSecret)
	p("  worker          %s", st.WorkerURL)
	p("  api             %s   (POST /v1/messages; keys: wapipe tenants api-key ID)", st.APIURL)
	p("  console         %s   (operators' web console)", st.ConsoleURL)
	p("  fake Graph API  %s", st.GraphURL)
	p("    requests      %s", r.FakeRequestsURL)
	p("  fake Gemini     %s   (rules: %s/_fake/rules)", st.GeminiURL, st.GeminiURL)
	p("  fake actions    %s", st.ActionURL)
	p("    calls         %s   (secret %s)", r.ActionCallsURL, devstack.DevActionSecret)
	p("  Cloud Tasks     %s (emulator, gRPC)", st.TasksAddr)
	p("  Firestore       %s (emulator)", st.FirestoreHost)
	p("")
	p("For the wapipe CLI (it reads them from the devstack's environment file by itself; export them for other tools):")
	keys := make([]string, 0, len(r.Env))
	for k := range r.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		p("  export %s=%s", k, r.Env[k])
	}
	p("")
	p("Logs (%s):", r.LogDir)
	comps := make([]string, 0, len(r.Logs))
	for c := range r.Logs {
		comps = append(comps, c)
	}
	sort.Strings(comps)
	for _, c := range comps {
		p("  %-15s %s", c, r.Logs[c])
	}
	p("")
	if len(st.Tenants) > 0 {
		p("Tenants applied: %s (from tenants/sample.yaml, token %s, queue %s)", strings.Join(st.Tenants, ", "), devstack.DevAccessToken, tasks.TenantQueueID(st.Tenants[0]))
		p("Apply your own:")
		p("  go run ./cmd/wapipe tenants apply -f my-tenant.yaml")
		p("  echo %s | go run ./cmd/wapipe tenants set-token --no-verify MY-TENANT-ID", devstack.DevAccessToken)
		p("")
	}
	p("Try: go run ./cmd/wapipe trigger --text hello   then   curl -s %s", r.FakeRequestsURL)
	p("Ctrl-C stops everything.")
	return b.String()
}

// writeReady writes the file whole or not at all, so a reader never sees half of it.
func writeReady(path string, r Ready) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("encode the ready file: %w", err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write the ready file: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write the ready file: %w", err)
	}
	return nil
}
