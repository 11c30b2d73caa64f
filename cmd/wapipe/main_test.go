package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/cloudtasks/apiv2/cloudtaskspb"
	"cloud.google.com/go/firestore"
	"google.golang.org/api/iterator"

	"github.com/wapipe/wapipe/internal/cloudtasksemu"
	"github.com/wapipe/wapipe/internal/devstack"
	"github.com/wapipe/wapipe/internal/graph/graphfake"
	"github.com/wapipe/wapipe/internal/keyedid"
	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/internal/operator"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/taskqueue"
	"github.com/wapipe/wapipe/internal/testenv"
	"github.com/wapipe/wapipe/internal/whatsapp"
	"github.com/wapipe/wapipe/tasks"
)

func TestMain(m *testing.M) { os.Exit(testenv.RunWithFirestore(m)) }

// cli runs the CLI in-process and returns what it printed.
func cli(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errb bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	err = run(ctx, args, &out, &errb)
	return out.String(), errb.String(), err
}

// mustCLI runs the CLI and fails the test when it fails.
func mustCLI(t *testing.T, args ...string) string {
	t.Helper()
	out, errOut, err := cli(t, args...)
	if err != nil {
		t.Fatalf("wapipe %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, out, errOut)
	}
	return out
}

// stack is a test's own pipeline: its own project in the shared Firestore emulator and its own
// Cloud Tasks emulator.
type stack struct {
	*devstack.Stack
	records records
	fs      *firestore.Client
}

// records are the stores the tests read.
type records struct {
	*store.Outbound
	*store.DeadLetterStore
}

func newStack(t *testing.T, queues *tasks.QueueFile) *stack {
	t.Helper()
	host := testenv.FirestoreHost(t)
	fs, project := testenv.Firestore(t)
	st, err := devstack.Start(context.Background(), devstack.Options{FirestoreHost: host, Project: project, Queues: queues})
	if err != nil {
		t.Fatalf("devstack.Start: %v", err)
	}
	t.Cleanup(st.Stop)
	db := store.NewDB(fs)
	return &stack{Stack: st, records: records{store.NewOutbound(db, store.Options{}), store.NewDeadLetters(db, store.Options{})}, fs: fs}
}

// conn is the CLI's connection flags for the stack.
func (s *stack) conn(args ...string) []string {
	return append(args, "--project", s.Project, "--location", s.Location, "--tasks-emulator", s.TasksAddr)
}

// idle waits until every queue is empty (wapipe's own and the sample tenant's send queue): every
// task has completed or been dead-lettered.
func (s *stack) idle(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	tc, err := cloudtasksemu.NewClient(ctx, s.TasksAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer tc.Close()
	testenv.Eventually(t, 30*time.Second, func() bool {
		queues := tc.ListQueues(ctx, &cloudtaskspb.ListQueuesRequest{Parent: strings.TrimSuffix(s.QueuePath("x"), "/queues/x")})
		for {
			q, err := queues.Next()
			if errors.Is(err, iterator.Done) {
				return true
			}
			if err != nil {
				return false
			}
			it := tc.ListTasks(ctx, &cloudtaskspb.ListTasksRequest{Parent: q.GetName()})
			if _, err := it.Next(); !errors.Is(err, iterator.Done) {
				return false
			}
		}
	}, "queues never emptied")
}

func (s *stack) waitSends(t *testing.T, n int) []graphfake.Request {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	got, err := s.Graph.WaitForSends(ctx, n)
	if err != nil {
		t.Fatalf("%d sends reached the fake Graph API, want %d: %v", len(got), n, err)
	}
	return got
}

// field returns the value after "label " on the line that starts with prefix.
func field(t *testing.T, out, prefix, label string) string {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, prefix) {
			if _, after, ok := strings.Cut(line, label+" "); ok {
				return strings.Fields(after)[0]
			}
		}
	}
	t.Fatalf("no %q on a line starting %q in:\n%s", label, prefix, out)
	return ""
}

func TestUsage(t *testing.T) {
	t.Parallel()
	if devAppSecret != devstack.DevAppSecret {
		t.Errorf("devAppSecret = %q, devstack.DevAppSecret = %q: keep them equal", devAppSecret, devstack.DevAppSecret)
	}
	if _, _, err := cli(t); exitCode(err) != 2 {
		t.Errorf("no command: exit %d (%v), want 2", exitCode(err), err)
	}
	if _, _, err := cli(t, "frobnicate"); exitCode(err) != 2 || !strings.Contains(err.Error(), "unknown command") {
		t.Errorf("unknown command: %v (exit %d), want a usage error", err, exitCode(err))
	}
	out := mustCLI(t, "--help")
	for _, c := range commands() {
		if !strings.Contains(out, c.name) {
			t.Errorf("wapipe --help does not list %s", c.name)
		}
		help := mustCLI(t, c.name, "--help")
		if !strings.Contains(help, "Usage: wapipe "+c.name) || !strings.Contains(help, "Flags:") {
			t.Errorf("wapipe %s --help:\n%s\nwant its usage and flags", c.name, help)
		}
		if _, _, err := cli(t, c.name, "--no-such-flag"); exitCode(err) != 2 {
			t.Errorf("wapipe %s --no-such-flag: exit %d (%v), want 2", c.name, exitCode(err), err)
		}
	}
	for _, args := range [][]string{
		{"trigger", "--type", "hologram"},
		{"trigger", "--type", "status"}, // no --message-id
		{"inspect"},
		{"inspect", "--project", "p", "a", "b"},
		{"tasks", "purge", "--project", "p"},
		{"replay", "--project", "p"},
		{"replay", "--project", "p", "--id", "x", "--all"},
		{"replay", "--project", "p", "--all", "--since", "yesterday", "--dry-run"},
		{"bench", "--url", "http://192.168.1.10:8080/webhooks/whatsapp"},
		{"bench", "--n", "0"},
		{"health", "--token", "t", "extra"},
	} {
		_, _, err := cli(t, args...)
		if err == nil || exitCode(err) != 2 || strings.Contains(err.Error(), "\n") {
			t.Errorf("wapipe %s: %v (exit %d), want one usage error line", strings.Join(args, " "), err, exitCode(err))
		}
	}
}

func TestTrigger(t *testing.T) {
	t.Parallel()
	s := newStack(t, testenv.FastQueues(t))

	// The same delivery three times: one accepted, two duplicates, one reply.
	out := mustCLI(t, "trigger", "--url", s.WebhookURL, "--secret", s.AppSecret, "--text", "hello there", "--repeat", "3")
	if n := strings.Count(out, `{"status":"accepted"}`); n != 1 {
		t.Errorf("%d accepted answers, want 1:\n%s", n, out)
	}
	if n := strings.Count(out, `{"status":"duplicate"}`); n != 2 {
		t.Errorf("%d duplicate answers, want 2:\n%s", n, out)
	}
	msgID := field(t, out, "type text", "inbound_event_id")
	if got := field(t, out, "message ids:", "ids:"); got != msgID {
		t.Errorf("message id %s, want the event id %s for a text message", got, msgID)
	}
	sends := s.waitSends(t, 1)
	s.idle(t)
	if n := len(s.Graph.Sends()); n != 1 {
		t.Fatalf("%d replies to a delivery sent three times, want 1", n)
	}
	if got := sends[0].Body["biz_opaque_callback_data"]; got != tasks.IdempotencyKey(keyedid.Dev(), msgID) {
		t.Errorf("reply carries %v, want the idempotency key of %s", got, msgID)
	}
	if strings.Contains(out, "hello there") || strings.Contains(out, whatsapp.DefaultSampleOptions.From) {
		t.Errorf("trigger printed the message text or the phone number:\n%s", out)
	}

	// Every other type is a payload the webhook accepts.
	for _, args := range [][]string{
		{"--type", "button"}, {"--type", "list"}, {"--type", "image", "--text", "a caption"},
		{"--type", "location"}, {"--type", "reaction", "--message-id", msgID},
		{"--type", "batch", "--count", "2"}, {"--type", "text", "--from", "447700900123"},
		{"--type", "status", "--status", "read", "--message-id", sends[0].MessageID, "--callback-data", tasks.IdempotencyKey(keyedid.Dev(), msgID)},
		{"--type", "status", "--status", "failed", "--message-id", "wamid.unknown"},
	} {
		out := mustCLI(t, append([]string{"trigger", "--url", s.WebhookURL, "--secret", s.AppSecret}, args...)...)
		if !strings.Contains(out, `200 {"status":"accepted"}`) {
			t.Errorf("trigger %v:\n%s\nwant it accepted", args, out)
		}
	}
	// The read status reaches the reply's record.
	testenv.Eventually(t, 20*time.Second, func() bool {
		rec, err := s.records.GetOutbound(context.Background(), tasks.IdempotencyKey(keyedid.Dev(), msgID))
		return err == nil && rec.DeliveryStatus == store.DeliveryRead
	}, "the read status never reached the outbound record")

	// A wrong secret is refused, and the command says so.
	out, _, err := cli(t, "trigger", "--url", s.WebhookURL, "--secret", "wrong")
	if err == nil || exitCode(err) != 1 || !strings.Contains(out, "401") {
		t.Errorf("trigger with a wrong secret: %v (exit %d), output:\n%s\nwant the 401 printed and exit 1", err, exitCode(err), out)
	}
}

func TestInspect(t *testing.T) {
	t.Parallel()
	s := newStack(t, testenv.FastQueues(t))
	out := mustCLI(t, "trigger", "--url", s.WebhookURL, "--secret", s.AppSecret, "--type", "batch", "--count", "2")
	eventID := field(t, out, "type batch", "inbound_event_id")
	s.waitSends(t, 2)
	s.idle(t)

	var r operator.Report
	if err := json.Unmarshal([]byte(mustCLI(t, s.conn("inspect", eventID, "--json")...)), &r); err != nil {
		t.Fatalf("inspect --json: %v", err)
	}
	if r.Marker == nil || r.Marker.State != store.MarkerReceived {
		t.Errorf("marker = %+v, want received", r.Marker)
	}
	if r.Trace == nil || r.Trace.State != store.TraceFinished || r.Trace.Messages != 2 {
		t.Errorf("trace = %+v, want finished with 2 messages", r.Trace)
	}
	if len(r.Messages) != 2 {
		t.Fatalf("%d messages in the report, want 2: %+v", len(r.Messages), r.Messages)
	}
	for _, m := range r.Messages {
		if m.Outbound == nil || m.Outbound.State != store.OutboundSent || m.Outbound.GraphMessageID == "" {
			t.Errorf("message %s: record %+v, want sent", m.MessageID, m.Outbound)
		}
		if m.IdempotencyKey != tasks.IdempotencyKey(keyedid.Dev(), m.MessageID) || m.OutboundTask.Queued {
			t.Errorf("message %s: key %s, task %+v; want the derived key and no task left", m.MessageID, m.IdempotencyKey, m.OutboundTask)
		}
	}
	if r.InboundTask.Queued || r.InboundTask.Name != s.QueuePath(tasks.InboundQueueID)+"/tasks/"+tasks.InboundTaskID(eventID) {
		t.Errorf("inbound task %+v, want the deterministic name, no longer queued", r.InboundTask)
	}

	ref := logging.DevHasher().Ref(eventID)
	if r.EventRef != ref || r.Marker.EventRef != ref || r.Trace.EventRef != ref {
		t.Errorf("event_ref: report %s, marker %s, trace %s; want %s", r.EventRef, r.Marker.EventRef, r.Trace.EventRef, ref)
	}

	// The second message of the batch leads back to its event; so does its idempotency key; so
	// does the event_ref of a log line, and the ref wapipe hash-id gives.
	second := r.Messages[1].MessageID
	hashed := lastLine(mustCLI(t, "hash-id", eventID))
	for _, q := range []string{eventID, second, tasks.IdempotencyKey(keyedid.Dev(), second), ref, hashed} {
		text := mustCLI(t, s.conn("inspect", q)...)
		for _, want := range []string{"inbound_event_id: " + eventID, "event_ref: " + ref, "dedupe marker (inbound_events): received",
			"trace (inbound_traces): finished", "outbound record (outbound_messages): sent", "dead letters: none"} {
			if !strings.Contains(text, want) {
				t.Errorf("inspect %s: no %q in:\n%s", q, want, text)
			}
		}
		if strings.Contains(text, whatsapp.DefaultSampleOptions.From) {
			t.Errorf("inspect printed a phone number in clear:\n%s", text)
		}
	}
	for _, unknown := range []string{"wamid.nothing-here", logging.DevHasher().Ref("wamid.nothing-here")} {
		if _, _, err := cli(t, s.conn("inspect", unknown)...); !errors.Is(err, operator.ErrNothingFound) {
			t.Errorf("inspect of an unknown %s: %v, want ErrNothingFound", unknown, err)
		}
	}
}

func TestTasksListDescribe(t *testing.T) {
	t.Parallel()
	s := newStack(t, nil)
	ctx := context.Background()
	tq, err := taskqueue.New(ctx, taskqueue.Config{ProjectID: s.Project, Location: s.Location, EmulatorHost: s.TasksAddr,
		BaseURL: s.WorkerURL, Token: s.InternalToken})
	if err != nil {
		t.Fatal(err)
	}
	defer tq.Close()
	// A task scheduled an hour ahead stays in the queue for the test to read.
	payload := whatsapp.SampleText(whatsapp.SampleOptions{}, "a private message")
	body, _ := json.Marshal(tasks.Inbound{InboundEventID: "wamid.later", CorrelationID: "corr-later", ReceivedAt: time.Now(), Payload: payload})
	id := tasks.InboundTaskID("wamid.later")
	if _, err := tq.Enqueue(ctx, taskqueue.Task{Queue: tasks.InboundQueueID, ID: id, Path: tasks.ProcessInboundPath,
		Body: body, CorrelationID: "corr-later", ScheduleTime: time.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}

	list := mustCLI(t, s.conn("tasks", "list", "--queue", tasks.InboundQueueID)...)
	if !strings.Contains(list, "TASK_NAME") || !strings.Contains(list, id) || !strings.Contains(list, "Unknown") {
		t.Errorf("tasks list:\n%s\nwant a header and the task, not attempted yet", list)
	}
	if empty := mustCLI(t, s.conn("tasks", "list", "--queue", tasks.OutboundQueueID, "--json")...); strings.TrimSpace(empty) != "[]" {
		t.Errorf("tasks list of the empty outbound queue: %s, want []", empty)
	}

	desc := mustCLI(t, s.conn("tasks", "describe", id)...)
	for _, want := range []string{"name: " + s.QueuePath(tasks.InboundQueueID) + "/tasks/" + id, "dispatchCount: 0",
		"url: " + s.WorkerURL + tasks.ProcessInboundPath, "X-Internal-Token: " + operator.Masked,
		"X-Correlation-ID: corr-later", `"inbound_event_id": "` + logging.DevHasher().Ref("wamid.later") + `"`, `"body": "[redacted]"`} {
		if !strings.Contains(desc, want) {
			t.Errorf("tasks describe: no %q in:\n%s", want, desc)
		}
	}
	for _, secret := range []string{s.InternalToken, "a private message", whatsapp.DefaultSampleOptions.From, "wamid.", "Sheena Nelson"} {
		if strings.Contains(desc, secret) {
			t.Errorf("tasks describe shows %q:\n%s", secret, desc)
		}
	}
	var task operator.Task
	if err := json.Unmarshal([]byte(mustCLI(t, s.conn("tasks", "describe", "--json", s.QueuePath(tasks.InboundQueueID)+"/tasks/"+id)...)), &task); err != nil {
		t.Fatal(err)
	}
	if task.ID != id || task.Queue != tasks.InboundQueueID || task.Headers[tasks.HeaderInternalToken] != operator.Masked || task.Body == nil {
		t.Errorf("tasks describe --json = %+v", task)
	}
	if _, _, err := cli(t, s.conn("tasks", "describe", "no-such-task")...); err == nil || exitCode(err) != 1 {
		t.Errorf("describe of a missing task: %v, want exit 1", err)
	}
}

func TestReplay(t *testing.T) {
	t.Parallel()
	s := newStack(t, testenv.FastQueues(t))
	ctx := context.Background()
	s.Graph.FailWith(100, graphfake.Failure{HTTPStatus: 503, Code: 2, Kind: graphfake.KindSend})
	out := mustCLI(t, "trigger", "--url", s.WebhookURL, "--secret", s.AppSecret)
	msgID := field(t, out, "type text", "inbound_event_id")
	key := tasks.IdempotencyKey(keyedid.Dev(), msgID)
	var dl store.DeadLetter
	testenv.Eventually(t, 30*time.Second, func() bool {
		ds, err := s.records.ListDeadLettersFor(ctx, "", key)
		if err == nil && len(ds) == 1 {
			dl = ds[0]
		}
		return dl.ID != ""
	}, "the failing reply was never dead-lettered")
	s.idle(t)
	s.Graph.Reset()
	if rec, _ := s.records.GetOutbound(ctx, key); rec.State != store.OutboundFailed {
		t.Fatalf("record after the dead letter: %s, want failed", rec.State)
	}

	replay := func(args ...string) string {
		return mustCLI(t, s.conn(append([]string{"replay", "--base-url", s.WorkerURL, "--token", s.InternalToken}, args...)...)...)
	}
	// A conversation's reply dead-letters its own record: a process_send task that sends it.
	dry := replay("--all", "--dry-run", "--path", "process_send", "--since", "1h")
	if !strings.Contains(dry, "would replay "+dl.ID) || !strings.Contains(dry, "would reopen") {
		t.Errorf("replay --all --dry-run:\n%s\nwant the dead letter listed", dry)
	}
	if got := replay("--all", "--dry-run", "--queue", tasks.InboundQueueID); !strings.Contains(got, "no dead letter to replay") {
		t.Errorf("replay --all --queue wa-inbound:\n%s\nwant nothing selected", got)
	}
	if rec, _ := s.records.GetOutbound(ctx, key); rec.State != store.OutboundFailed || len(s.Graph.Requests()) != 0 {
		t.Fatalf("the dry run changed something: record %s, %d Graph requests", rec.State, len(s.Graph.Requests()))
	}

	first := replay("--id", dl.ID)
	if !strings.Contains(first, "replayed "+dl.ID) || !strings.Contains(first, "reopened") || !strings.Contains(first, "1 task(s) created") {
		t.Errorf("replay --id:\n%s", first)
	}
	sends := s.waitSends(t, 1)
	if sends[0].Body["biz_opaque_callback_data"] != key {
		t.Errorf("the replayed reply carries %v, want %s", sends[0].Body["biz_opaque_callback_data"], key)
	}
	s.idle(t)

	// Replaying again creates nothing, and --all finds nothing left to replay.
	second := replay(dl.ID)
	if !strings.Contains(second, "already replayed "+dl.ID) || !strings.Contains(second, "0 task(s) created, 1 already existed") ||
		!strings.Contains(second, "outbound record sent: left as it is") {
		t.Errorf("second replay:\n%s\nwant the existing task reported and the sent record left alone", second)
	}
	if got := replay("--all"); !strings.Contains(got, "no dead letter to replay") {
		t.Errorf("replay --all after the replay:\n%s", got)
	}
	s.idle(t)
	if n := len(s.Graph.Sends()); n != 1 {
		t.Fatalf("%d replies after replaying twice, want exactly 1", n)
	}
	got, err := s.records.GetDeadLetter(ctx, dl.ID)
	if err != nil || !got.Replayed {
		t.Errorf("dead letter after replay: %+v, %v; want replayed", got, err)
	}
	insp := mustCLI(t, s.conn("inspect", msgID)...)
	if !strings.Contains(insp, "dead letter "+dl.ID) || !strings.Contains(insp, "replayed 20") {
		t.Errorf("inspect after replay:\n%s\nwant the replayed dead letter", insp)
	}
	if _, _, err := cli(t, s.conn("replay", "--id", "no-such-dead-letter", "--base-url", s.WorkerURL, "--token", "x")...); err == nil ||
		!strings.Contains(err.Error(), "not found") {
		t.Errorf("replay of an unknown id: %v, want not found", err)
	}
}

func TestBench(t *testing.T) {
	t.Parallel()
	s := newStack(t, testenv.FastQueues(t))
	out, errOut, err := cli(t, "bench", "--url", s.WebhookURL, "--secret", s.AppSecret, "--n", "20", "--concurrency", "4",
		"--wait-replies", "--graph-url", s.GraphURL, "--reply-timeout", "40s")
	if err != nil {
		t.Fatalf("bench: %v\n%s\n%s", err, out, errOut)
	}
	for _, want := range []string{"sent 20, answered 20, transport errors 0", "status codes: 200×20", "webhook answer time: p50 ",
		"20/20 replies, 0 duplicate(s)", "end-to-end latency: p50 "} {
		if !strings.Contains(out, want) {
			t.Errorf("bench: no %q in:\n%s", want, out)
		}
	}
	if !strings.Contains(errOut, "waiting for replies") {
		t.Errorf("bench showed no progress on stderr:\n%s", errOut)
	}
	if n := len(s.Graph.Sends()); n != 20 {
		t.Errorf("%d replies at the fake, want 20", n)
	}

	var res struct {
		Codes   map[string]int `json:"status_codes"`
		Replies struct {
			Seen int `json:"seen"`
		} `json:"replies"`
	}
	out = mustCLI(t, "bench", "--url", s.WebhookURL, "--secret", s.AppSecret, "--n", "5", "--rate", "50", "--json", "--quiet",
		"--wait-replies", "--graph-url", s.GraphURL)
	if err := json.Unmarshal([]byte(out), &res); err != nil || res.Codes["200"] != 5 || res.Replies.Seen != 5 {
		t.Errorf("bench --json = %s (%v); want 5 answered 200 and 5 replies", out, err)
	}
}

func TestHealth(t *testing.T) {
	t.Parallel()
	s := newStack(t, nil)
	out, _, err := cli(t, "health", "--worker-url", s.WorkerURL, "--token", s.InternalToken)
	var h struct{ Status, Reason string }
	if jerr := json.Unmarshal([]byte(out), &h); jerr != nil {
		t.Fatalf("health printed no JSON (%v): %v\n%s", err, jerr, out)
	}
	if (h.Status == "ok") != (err == nil) || h.Reason == "" {
		t.Errorf("health: status %q, reason %q, err %v; want exit 0 exactly when ok, and a reason", h.Status, h.Reason, err)
	}
	if _, _, err := cli(t, "health", "--worker-url", s.WorkerURL, "--token", "wrong"); err == nil || !strings.Contains(err.Error(), "401") {
		t.Errorf("health with a wrong token: %v, want the 401 explained", err)
	}
	// --direct computes the same report without the worker (whose ingress is internal in
	// production): from the queues and the records.
	out, _, err = cli(t, s.conn("health", "--direct")...)
	var d struct {
		Status string
		Queues map[string]any
	}
	jerr := json.Unmarshal([]byte(out), &d)
	_, in := d.Queues[tasks.InboundQueueID]
	_, outq := d.Queues[tasks.OutboundQueueID]
	if jerr != nil || d.Status != h.Status || !in || !outq {
		t.Errorf("health --direct = %q (%v, %v), want the worker's verdict %q with both queues", out, err, jerr, h.Status)
	}
}

// TestHealthVerdicts checks the exit codes against a worker stand-in, whatever the real report says.
func TestHealthVerdicts(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		status   string
		httpCode int
		wantExit int
	}{
		{"ok", 200, 0},
		{"degraded", 200, 1},
		{"failing", 503, 1},
	} {
		t.Run(tt.status, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != operator.HealthPath || r.Header.Get(tasks.HeaderInternalToken) != "tok" {
					w.WriteHeader(http.StatusNotFound)
					return
				}
				w.WriteHeader(tt.httpCode)
				fmt.Fprintf(w, `{"status":%q,"reason":"because","queues":{}}`, tt.status)
			}))
			defer srv.Close()
			out, _, err := cli(t, "health", "--worker-url", srv.URL, "--token", "tok")
			if got := exitCode(err); (err == nil && tt.wantExit != 0) || (err != nil && got != tt.wantExit) {
				t.Errorf("exit %d (%v), want %d", got, err, tt.wantExit)
			}
			if err != nil && !strings.Contains(err.Error(), tt.status+": because") {
				t.Errorf("error %q does not give the verdict and reason", err)
			}
			if !strings.Contains(out, `"status": "`+tt.status+`"`) {
				t.Errorf("output:\n%s\nwant the report", out)
			}
		})
	}
}
