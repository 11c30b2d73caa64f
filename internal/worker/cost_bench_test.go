//go:build unix

package worker_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wapipe/wapipe/internal/assistant"
	"github.com/wapipe/wapipe/internal/devstack"
	"github.com/wapipe/wapipe/internal/llm/geminifake"
	"github.com/wapipe/wapipe/internal/taskqueue"
	"github.com/wapipe/wapipe/internal/testenv"
	"github.com/wapipe/wapipe/internal/webhook"
	"github.com/wapipe/wapipe/internal/whatsapp"
	"github.com/wapipe/wapipe/internal/worker"
)

// taskCounter counts Cloud Tasks' billable operations of the stack: the services' CreateTask
// calls (through their Enqueuer) and the emulator's delivery attempts (from its debug log, one
// line per attempt's end).
type taskCounter struct {
	mu                  sync.Mutex
	creates, dispatches int
	// ended counts the tasks whose last attempt ended (done or given up): when it equals
	// creates, nothing is left to run, since a handler creates its tasks before it answers.
	ended int
}

func (c *taskCounter) counts() (creates, dispatches, ended int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.creates, c.dispatches, c.ended
}

// countingEnqueuer counts every CreateTask call, an AlreadyExists answer included: Cloud Tasks
// bills the call.
type countingEnqueuer struct {
	next worker.Enqueuer
	c    *taskCounter
}

func (e countingEnqueuer) Enqueue(ctx context.Context, t taskqueue.Task) (taskqueue.Result, error) {
	e.c.mu.Lock()
	e.c.creates++
	e.c.mu.Unlock()
	return e.next.Enqueue(ctx, t)
}

// Write takes the emulator's log, one JSON record per call.
func (c *taskCounter) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case bytes.Contains(p, []byte(`"event":"task_completed"`)), bytes.Contains(p, []byte(`"event":"task_exhausted"`)):
		c.dispatches++
		c.ended++
	case bytes.Contains(p, []byte(`"event":"task_retry"`)):
		c.dispatches++
	}
	return len(p), nil
}

// usageCounter sums the assistant's LLM calls and tokens, as Vertex AI reported them (here
// geminifake's usageMetadata: a token per 4 characters of prompt and of answer).
type usageCounter struct {
	next                 worker.TurnEngine
	mu                   sync.Mutex
	calls, input, output int
}

func (u *usageCounter) Turn(ctx context.Context, in assistant.Input) (assistant.Outcome, error) {
	out, err := u.next.Turn(ctx, in)
	u.mu.Lock()
	defer u.mu.Unlock()
	u.calls += out.LLMCalls
	u.input += out.Usage.PromptTokens
	u.output += out.Usage.OutputTokens + out.Usage.ThoughtsTokens
	return out, err
}

func (u *usageCounter) take() (calls, input, output int) {
	u.mu.Lock()
	defer u.mu.Unlock()
	calls, input, output = u.calls, u.input, u.output
	u.calls, u.input, u.output = 0, 0, 0
	return calls, input, output
}

// BenchmarkCloudCostPerMessage measures, on the local stack, what one message costs on Google Cloud
// (issue 27 part 3) in two scenarios, each message from its own contact:
//
//   - default_reply: an inbound text answered by the single-tenant default reply, and the
//     reply's three statuses (sent, delivered, read);
//   - assistant_turn: a text to a tenant in mode llm, answered by the assistant (geminifake
//     classifies it general_query and writes the reply), and the reply's three statuses.
//
// Per message it reports Firestore reads, writes and deletes (a counting proxy in front of the
// emulator), Cloud Tasks creations and delivery attempts, Cloud Run requests (webhook posts and
// deliveries), the assistant's LLM tokens, the process's CPU time (user+sys: the whole
// in-process stack, that is webhook, worker, the Cloud Tasks emulator, the fakes, the counting
// proxy and the benchmark's own client, so an upper bound for the services; the Firestore
// emulator, a separate process, is excluded) and the cost of 1,000 such messages at the list
// prices in testenv (cost.go). It prints a Markdown table of both scenarios:
//
//	go test -run '^$' -bench BenchmarkCloudCostPerMessage -benchtime 20x ./internal/worker/
func BenchmarkCloudCostPerMessage(b *testing.B) {
	var rows []string
	for _, sc := range []struct {
		name      string
		noTenants bool
	}{{"default_reply", true}, {"assistant_turn", false}} {
		b.Run(sc.name, func(b *testing.B) {
			rows = append(rows, costScenario(b, sc.name, sc.noTenants))
		})
	}
	// To stdout: a benchmark with sub-benchmarks reports no log of its own.
	fmt.Printf("\nCost per message at the list prices of %s (CPU: the whole in-process stack, Firestore emulator excluded):\n\n"+
		"| scenario | Firestore reads | writes | deletes | Cloud Tasks creates | deliveries | Cloud Run requests | CPU ms | LLM tokens in/out | USD per 1,000: Firestore | Cloud Tasks | Cloud Run | Gemini | total |\n"+
		"|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n%s\n", testenv.PricesAsOf, strings.Join(rows, ""))
}

// costScenario runs b.N messages of one scenario on a stack of its own and returns its row of
// the table.
func costScenario(b *testing.B, name string, noTenants bool) string {
	ctx := context.Background()
	fs := testenv.StartOpCounter(b, testenv.FirestoreHost(b))
	tc := &taskCounter{}
	usage := &usageCounter{}
	st, err := devstack.Start(ctx, devstack.Options{
		FirestoreHost: fs.Addr, Project: testenv.ProjectID(b), Queues: testenv.FastQueues(b), NoTenants: noTenants,
		// The emulator logs each delivery attempt's end at debug; the other services log to
		// nothing, so their debug level costs next to nothing.
		LogLevel: slog.LevelDebug,
		Logs: func(component string) io.Writer {
			if component == "tasks-emulator" {
				return tc
			}
			return io.Discard
		},
		Webhook: []func(*webhook.Deps){func(d *webhook.Deps) { d.Tasks = countingEnqueuer{d.Tasks, tc} }},
		Worker: []func(*worker.Deps){func(d *worker.Deps) {
			d.Tasks = countingEnqueuer{d.Tasks, tc}
			usage.next = d.Assistant
			d.Assistant = usage
		}},
	})
	if err != nil {
		b.Fatalf("devstack.Start: %v", err)
	}
	b.Cleanup(st.Stop)
	if !noTenants {
		if err := st.Gemini.AddRule(geminifake.Rule{Name: "cost", Contains: "opening hours", Respond: func(geminifake.Call) geminifake.Answer {
			return geminifake.Answer{Intent: geminifake.GeneralQuery, Confidence: 0.9, Reply: "We are open from 9 to 5, Monday to Saturday."}
		}}); err != nil {
			b.Fatal(err)
		}
	}
	posts := 0
	post := func(body []byte) {
		b.Helper()
		postBench(b, st, body)
		posts++
	}
	// settle waits until every task created so far has ended.
	settle := func(i int) {
		b.Helper()
		testenv.Eventually(b, 20*time.Second, func() bool {
			creates, _, ended := tc.counts()
			return ended == creates
		}, "tasks of message %d never ended", i)
	}
	// one is a message and its reply's three statuses, run to the end of its last task.
	one := func(i int) {
		b.Helper()
		// A phone number of digits for every i, the warm-up's -1 too: a "from" that is not a
		// phone number is read as a BSUID (contact.FromWebhook), which the reply cannot go to.
		from := fmt.Sprintf("1557%07d", i+1)
		before := len(st.Graph.Sends())
		post(whatsapp.SampleText(whatsapp.SampleOptions{From: from, MessageID: whatsapp.NewMessageID()}, "What are your opening hours?"))
		wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		sends, err := st.Graph.WaitForSends(wctx, before+1)
		if err != nil {
			b.Fatalf("no reply: %v", err)
		}
		reply := sends[before]
		callback, _ := reply.Body["biz_opaque_callback_data"].(string)
		settle(i)
		// Meta sends the statuses seconds apart: each is applied before the next arrives, as
		// three at once would contend on the reply's record and measure the retries.
		for _, s := range []string{"sent", "delivered", "read"} {
			post(whatsapp.SampleStatus(whatsapp.SampleOptions{From: from, MessageID: reply.MessageID, BizOpaqueCallbackData: callback}, s))
			settle(i)
		}
	}
	one(-1) // warms the caches and connections
	if !noTenants {
		if calls, _, _ := usage.take(); calls == 0 {
			b.Fatal("the assistant made no LLM call: the tenant is not in mode llm")
		}
	}

	fs.TakeOps()
	posts = 0
	creates0, dispatches0, _ := tc.counts()
	cpu0 := testenv.CPUTime()
	n := 0
	for b.Loop() {
		one(n)
		n++
	}
	cpu := testenv.CPUTime() - cpu0
	ops := fs.TakeOps()
	creates1, dispatches1, _ := tc.counts()
	_, in, out := usage.take()

	per := func(v int) float64 { return float64(v) / float64(n) }
	o := testenv.MessageOps{
		FirestoreReads: per(ops.Reads), FirestoreWrites: per(ops.Writes), FirestoreDeletes: per(ops.Deletes),
		TasksOps:       per(creates1 - creates0 + dispatches1 - dispatches0),
		RunRequests:    per(posts + dispatches1 - dispatches0),
		CPUSeconds:     cpu.Seconds() / float64(n),
		LLMInputTokens: per(in), LLMOutputTokens: per(out),
	}
	usd := testenv.PerThousand(o)
	b.ReportMetric(o.FirestoreReads, "fs_reads/msg")
	b.ReportMetric(o.FirestoreWrites, "fs_writes/msg")
	b.ReportMetric(o.FirestoreDeletes, "fs_deletes/msg")
	b.ReportMetric(per(creates1-creates0), "tasks_creates/msg")
	b.ReportMetric(per(dispatches1-dispatches0), "tasks_dispatches/msg")
	b.ReportMetric(o.TasksOps, "tasks_ops/msg")
	b.ReportMetric(o.CPUSeconds*1000, "cpu_ms/msg")
	b.ReportMetric(o.LLMInputTokens+o.LLMOutputTokens, "llm_tokens/msg")
	b.ReportMetric(usd.Total(), "usd_per_1k")
	return fmt.Sprintf("| %s | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.0f / %.0f | %.4f | %.4f | %.4f | %.4f | %.4f |\n",
		name, o.FirestoreReads, o.FirestoreWrites, o.FirestoreDeletes, per(creates1-creates0), per(dispatches1-dispatches0),
		o.RunRequests, o.CPUSeconds*1000, o.LLMInputTokens, o.LLMOutputTokens,
		usd.Firestore, usd.Tasks, usd.Run, usd.LLM, usd.Total())
}
