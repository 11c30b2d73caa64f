// Package testenv gives integration tests their real dependencies: one Firestore emulator per test
// binary (started from TestMain, or reused from FIRESTORE_EMULATOR_HOST), and a fresh, isolated
// project id per test so tests never see each other's documents. OpCounter, a proxy in front of
// the emulator, counts what the code under test costs in Firestore operations and finds its hot
// documents; PerThousand prices such counts in dollars (cost.go). A QueryRecorder, another proxy, sits in front of the emulator for every test binary
// and records the shape of every query, so that RunWithFirestore can check, once the tests have
// passed, that terraform/firestore.tf declares the index each needs (the emulator ignores
// indexes; Firestore refuses a query without its index).
//
// When the emulator cannot be had, tests skip locally but fail under CI=true, so a CI run can
// never pass by skipping what it was meant to prove. Integration tests skip under -short.
package testenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	cloudtasks "cloud.google.com/go/cloudtasks/apiv2"
	"cloud.google.com/go/firestore"

	"github.com/wapipe/wapipe/internal/cloudtasksemu"
	"github.com/wapipe/wapipe/internal/firestoreemu"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/tasks"
)

var (
	mu          sync.Mutex
	fsHost      string // the query recorder in front of the emulator
	fsEmulator  string // the emulator itself
	fsStartErr  error
	fsRequested bool
)

// InCI reports whether the tests run in CI, where a missing emulator is a failure, not a skip.
func InCI() bool {
	v := strings.ToLower(os.Getenv("CI"))
	return v == "true" || v == "1"
}

// RunWithFirestore is for TestMain: it makes a Firestore emulator available to the tests (reusing
// FIRESTORE_EMULATOR_HOST when set, else starting one on a free port), behind a QueryRecorder
// whose address becomes FIRESTORE_EMULATOR_HOST (and FirestoreHost's answer) for the whole
// binary, runs them, stops the emulator it started and returns the exit code. Under -short no
// emulator is started.
//
// When the tests passed, it checks every query shape they ran against terraform/firestore.tf
// (CheckIndexes) and fails the binary when one has no index, printing the resource to declare.
// With TESTENV_QUERY_SHAPES set to a directory, it also writes there (as JSON) the shapes and
// the check's figures.
func RunWithFirestore(m *testing.M) int {
	mu.Lock()
	fsRequested = true
	mu.Unlock()
	target := firestoreemu.FromEnv()
	if target == "" {
		if isShort() {
			return m.Run()
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		emu, err := firestoreemu.Start(ctx, firestoreemu.Options{})
		cancel()
		if err != nil {
			fsStartErr = err
			return m.Run()
		}
		defer emu.Stop()
		target = emu.Host
	}
	rec, err := startQueryRecorder(target)
	if err != nil {
		fsStartErr = fmt.Errorf("start the query recorder in front of the emulator at %s: %w", target, err)
		return m.Run()
	}
	defer rec.Stop()
	fsEmulator, fsHost = target, rec.Addr
	os.Setenv(firestoreemu.Env, rec.Addr)
	code := m.Run()
	queries := rec.Shapes()
	if dir := os.Getenv("TESTENV_QUERY_SHAPES"); dir != "" {
		if err := writeShapes(dir, queries); err != nil {
			fmt.Fprintf(os.Stdout, "testenv: TESTENV_QUERY_SHAPES: %v\n", err)
		}
	}
	if code == 0 {
		code = CheckIndexes(queries, os.Stdout)
	}
	return code
}

// CheckIndexes checks the recorded queries against terraform/firestore.tf, writes what is
// missing (or, under -test.v, the figures) to w, and returns the exit code: 1 when an index is
// missing or the file cannot be read.
func CheckIndexes(queries []RecordedQuery, w io.Writer) int {
	if len(queries) == 0 {
		return 0
	}
	cfg, err := LoadIndexConfig()
	if err != nil {
		fmt.Fprintf(w, "testenv: cannot check the indexes of the %d Firestore query shapes these tests ran: %v\nFAIL\n", len(queries), err)
		return 1
	}
	report := cfg.Check(queries)
	if len(report.Missing) > 0 {
		fmt.Fprint(w, report.Format(), "FAIL\n")
		return 1
	}
	if testing.Verbose() {
		fmt.Fprintf(w, "testenv: %d Firestore query shapes, %d of them needing a composite index, all with their index in %s\n",
			report.Shapes, report.NeedComposite, FirestoreTF)
	}
	return 0
}

// writeShapes writes the recorded queries, and what the check finds of them, to a file of its own
// in dir (the tests passed or not).
func writeShapes(dir string, queries []RecordedQuery) error {
	cfg, err := LoadIndexConfig()
	if err != nil {
		return err
	}
	report := cfg.Check(queries)
	pkg := "."
	if root, err := moduleRoot(); err == nil {
		if wd, err := os.Getwd(); err == nil {
			if rel, err := filepath.Rel(root, wd); err == nil {
				pkg = filepath.ToSlash(rel)
			}
		}
	}
	b, err := json.MarshalIndent(struct {
		Package string
		Report  IndexReport
		Queries []RecordedQuery
	}{pkg, report, queries}, "", "  ")
	if err != nil {
		return err
	}
	base := strings.ReplaceAll(pkg, "/", "_")
	if pkg == "." {
		base = "root"
	}
	name := fmt.Sprintf("%s-%d.json", base, os.Getpid())
	return os.WriteFile(filepath.Join(dir, name), b, 0o644)
}

// isShort reads -test.short before m.Run has parsed flags into testing.Short.
func isShort() bool {
	for _, a := range os.Args[1:] {
		if a == "-test.short" || a == "-test.short=true" {
			return true
		}
	}
	return false
}

// FirestoreHost returns the host:port of the emulator (of the QueryRecorder in front of it),
// skipping the test when there is none (failing it under CI).
func FirestoreHost(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: skipped under -short")
	}
	mu.Lock()
	requested := fsRequested
	mu.Unlock()
	if !requested {
		t.Fatal("testenv: the package's TestMain must call testenv.RunWithFirestore")
	}
	if fsHost == "" {
		msg := fmt.Sprintf("Firestore emulator unavailable: %v", fsStartErr)
		if InCI() {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return fsHost
}

var projectSanitizer = regexp.MustCompile(`[^a-z0-9-]+`)

// ProjectID returns a project id unique to this test, so its documents are its own.
func ProjectID(t testing.TB) string {
	name := projectSanitizer.ReplaceAllString(strings.ToLower(t.Name()), "-")
	if len(name) > 40 {
		name = name[:40]
	}
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return "t-" + strings.Trim(name, "-") + "-" + hex.EncodeToString(b)
}

// Firestore returns a client on the emulator for a project of the test's own, closed when the
// test ends, and the project id.
func Firestore(t testing.TB) (*firestore.Client, string) {
	t.Helper()
	FirestoreHost(t)
	project := ProjectID(t)
	c, err := firestore.NewClient(context.Background(), project)
	if err != nil {
		t.Fatalf("firestore.NewClient: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c, project
}

// Store returns the store database on the emulator for a project of the test's own, closed when
// the test ends, and the project id.
func Store(t testing.TB) (*store.DB, string) {
	t.Helper()
	c, project := Firestore(t)
	return store.NewDB(c), project
}

// StoreDatabase returns the named database of project on the emulator (a deployment may split
// its data across databases), closed when the test ends.
func StoreDatabase(t testing.TB, project, database string) *store.DB {
	t.Helper()
	FirestoreHost(t)
	db, err := store.Open(context.Background(), project, database)
	if err != nil {
		t.Fatalf("store.Open %s: %v", database, err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// Eventually polls cond every interval until it returns true or the deadline passes, then fails
// the test with msg. It is the only way tests wait: never a bare sleep.
func Eventually(t testing.TB, timeout time.Duration, cond func() bool, msg string, args ...any) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		if cond() {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %v: "+msg, append([]any{timeout}, args...)...)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Tasks starts a Cloud Tasks emulator of the test's own (in-process, on a free port) with the
// given queues (the embedded queues.yaml when nil), stopped when the test ends. It returns the
// emulator and an official client connected to it.
func Tasks(t testing.TB, project, location string, queues *tasks.QueueFile) (*cloudtasksemu.Server, *cloudtasks.Client) {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: skipped under -short")
	}
	if queues == nil {
		queues = tasks.DefaultQueues()
	}
	ctx := context.Background()
	emu, err := cloudtasksemu.Start(ctx, cloudtasksemu.Options{Addr: "127.0.0.1:0", Project: project, Location: location, Queues: queues})
	if err != nil {
		t.Fatalf("start tasks emulator: %v", err)
	}
	t.Cleanup(emu.Stop)
	c, err := cloudtasksemu.NewClient(ctx, emu.Addr())
	if err != nil {
		t.Fatalf("tasks client: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return emu, c
}

// FastQueues is queues.yaml with backoffs short enough for tests to watch retries happen.
func FastQueues(t testing.TB) *tasks.QueueFile {
	t.Helper()
	f := tasks.DefaultQueues()
	fast := func(q tasks.Queue) tasks.Queue {
		q.RetryConfig.MinBackoff.Duration = 50 * time.Millisecond
		q.RetryConfig.MaxBackoff.Duration = 200 * time.Millisecond
		q.RetryConfig.MaxAttempts = 5
		q.RateLimits.MaxDispatchesPerSecond = 500
		return q
	}
	for id, q := range f.Queues {
		f.Queues[id] = fast(q)
	}
	for id, q := range f.Templates {
		f.Templates[id] = fast(q)
	}
	return f
}

// LogBuffer collects the JSON log lines of a test's services; safe for concurrent writers.
type LogBuffer struct {
	mu  sync.Mutex
	buf strings.Builder
}

// Write appends p.
func (b *LogBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns everything written so far.
func (b *LogBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Has reports whether a line with "event":event was logged.
func (b *LogBuffer) Has(event string) bool {
	return strings.Contains(b.String(), `"event":"`+event+`"`)
}

// Count counts the lines with "event":event.
func (b *LogBuffer) Count(event string) int {
	return strings.Count(b.String(), `"event":"`+event+`"`)
}

// Env returns base with change applied, for configuration tests: a change to "" removes the
// variable, a change to "<empty>" sets it to the empty string.
func Env(base, change map[string]string) map[string]string {
	env := make(map[string]string, len(base)+len(change))
	for k, v := range base {
		env[k] = v
	}
	for k, v := range change {
		switch v {
		case "":
			delete(env, k)
		case "<empty>":
			env[k] = ""
		default:
			env[k] = v
		}
	}
	return env
}
