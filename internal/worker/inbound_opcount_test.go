package worker_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wapipe/wapipe/internal/devstack"
	"github.com/wapipe/wapipe/internal/taskqueue"
	"github.com/wapipe/wapipe/internal/testenv"
	"github.com/wapipe/wapipe/internal/whatsapp"
	"github.com/wapipe/wapipe/tasks"
)

// TestFirestoreOperationsPerMessage counts, on the emulator, the Firestore operations of each hop
// of one inbound text, its reply and the reply's three statuses (sent, delivered, read), and
// prints them. The webhook's and process_inbound's hops are held to their counts, so they cannot
// creep back; process_outbound's is printed as it stands.
func TestFirestoreOperationsPerMessage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	counter := testenv.StartOpCounter(t, testenv.FirestoreHost(t))
	s, err := devstack.Start(ctx, devstack.Options{FirestoreHost: counter.Addr, Project: testenv.ProjectID(t), Queues: testenv.FastQueues(t)})
	if err != nil {
		t.Fatalf("devstack.Start: %v", err)
	}
	t.Cleanup(s.Stop)
	admin, err := taskqueue.NewAdmin(ctx, s.Project, s.Location, s.TasksAddr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close() })
	if len(s.Tenants) != 1 {
		t.Fatalf("tenants %v, want the sample one", s.Tenants)
	}
	queues := []string{tasks.InboundQueueID, tasks.OutboundQueueID, tasks.TenantQueueID(s.Tenants[0])}
	for _, q := range queues {
		if err := admin.PauseQueue(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	// idle waits until no queue holds a task that can run: a paused queue's tasks wait.
	idle := func() {
		t.Helper()
		testenv.Eventually(t, 30*time.Second, func() bool {
			for _, q := range queues {
				st, err := admin.QueueStats(ctx, q)
				if err != nil || st.InFlight > 0 || (!st.Paused && st.Tasks > 0) {
					return false
				}
			}
			return true
		}, "queues never idle")
	}
	// run does step, waits for the pipeline to settle and records the hop's operations.
	type hop struct {
		name string
		ops  testenv.Ops
	}
	var hops []hop
	counter.TakeOps() // the stack's start-up
	run := func(name string, step func()) {
		t.Helper()
		step()
		idle()
		hops = append(hops, hop{name, counter.TakeOps()})
	}
	post := func(body []byte) func() {
		return func() {
			if code := postSigned(t, s.WebhookURL, s.AppSecret, body); code != 200 {
				t.Fatalf("webhook answered %d", code)
			}
		}
	}
	drain := func(q string) func() {
		return func() {
			if err := admin.ResumeQueue(ctx, q); err != nil {
				t.Fatal(err)
			}
			idle()
			if err := admin.PauseQueue(ctx, q); err != nil {
				t.Fatal(err)
			}
		}
	}

	text := whatsapp.SampleText(whatsapp.SampleOptions{MessageID: whatsapp.NewMessageID()}, "Table for two at 8?")
	run("webhook: text", post(text))
	run("process_inbound: text", drain(tasks.InboundQueueID))
	run("process_outbound: reply", func() {
		drain(tasks.TenantQueueID(s.Tenants[0]))()
		drain(tasks.OutboundQueueID)()
	})
	sends := s.Graph.Sends()
	if len(sends) != 1 || sends[0].MessageID == "" {
		t.Fatalf("the fake Graph API saw %d sends, want the one reply", len(sends))
	}
	callback, _ := sends[0].Body["biz_opaque_callback_data"].(string)
	for _, st := range []string{"sent", "delivered", "read"} {
		body := whatsapp.SampleStatus(whatsapp.SampleOptions{MessageID: sends[0].MessageID, BizOpaqueCallbackData: callback}, st)
		run("webhook: status "+st, post(body))
		run("process_inbound: status "+st, drain(tasks.InboundQueueID))
	}

	var total, mine testenv.Ops
	var b strings.Builder
	for _, h := range hops {
		total.Writes += h.ops.Writes
		total.Reads += h.ops.Reads
		if !strings.HasPrefix(h.name, "process_outbound") {
			mine.Writes += h.ops.Writes
			mine.Reads += h.ops.Reads
		}
		methods := make([]string, 0, len(h.ops.RPCs))
		for m, n := range h.ops.RPCs {
			methods = append(methods, fmt.Sprintf("%s×%d", m, n))
		}
		slices.Sort(methods)
		fmt.Fprintf(&b, "  %-32s %2d writes %2d reads %2d deletes  (%s)\n", h.name, h.ops.Writes, h.ops.Reads, h.ops.Deletes, strings.Join(methods, " "))
	}
	t.Logf("Firestore operations per hop:\n%s  total: %d writes, %d reads; without process_outbound: %d writes, %d reads",
		b.String(), total.Writes, total.Reads, mine.Writes, mine.Reads)
	for _, h := range hops {
		if want, ok := hopBudget[strings.Fields(h.name)[0]+" "+strings.Fields(h.name)[1]]; ok && (h.ops.Writes > want.Writes || h.ops.Reads > want.Reads) {
			t.Errorf("%s: %d writes and %d reads, over its budget of %d and %d", h.name, h.ops.Writes, h.ops.Reads, want.Writes, want.Reads)
		}
	}
}

// hopBudget holds each hop this test guards to its count: a change that adds an operation to
// the hot path shows here first.
var hopBudget = map[string]testenv.Ops{
	"webhook: text":           {Writes: 1, Reads: 0},
	"webhook: status":         {Writes: 1, Reads: 0},
	"process_inbound: text":   {Writes: 1, Reads: 2},
	"process_inbound: status": {Writes: 3, Reads: 2},
}

// postSigned posts body to the webhook, signed with secret, and returns the status code.
func postSigned(t testing.TB, url, secret string, body []byte) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(whatsapp.SignatureHeader, whatsapp.Sign(body, secret))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}
