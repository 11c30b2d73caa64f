package devstack_test

import (
	"context"
	"testing"
	"time"

	"github.com/wapipe/wapipe/internal/devstack"
	"github.com/wapipe/wapipe/internal/loadgen"
	"github.com/wapipe/wapipe/internal/taskqueue"
	"github.com/wapipe/wapipe/internal/testenv"
	"github.com/wapipe/wapipe/internal/whatsapp"
	"github.com/wapipe/wapipe/tasks"
)

// hotLoad is one tenant's busy spell: n text messages at rate a second, each from a contact
// of its own (as a promotion or a shift change brings them), to the sample tenant in mode llm,
// through the whole local stack with its Firestore traffic counted per document.
type hotLoad struct {
	n      int
	rate   float64
	queues *tasks.QueueFile
}

// run drives the load, waits for every reply, posts each reply's three statuses (sent,
// delivered, read), waits for the queues to drain (every write of the load done), and returns
// the documents written, most written first, and the load's nominal duration, n/rate: the
// writes are counted, so a slow machine makes them no fewer.
func (l hotLoad) run(t testing.TB) ([]testenv.DocWrites, time.Duration) {
	t.Helper()
	ctx := context.Background()
	counter := testenv.StartOpCounter(t, testenv.FirestoreHost(t))
	st, err := devstack.Start(ctx, devstack.Options{FirestoreHost: counter.Addr, Project: testenv.ProjectID(t), Queues: l.queues})
	if err != nil {
		t.Fatalf("devstack.Start: %v", err)
	}
	t.Cleanup(st.Stop)
	if len(st.Tenants) != 1 {
		t.Fatalf("tenants %v, want the sample one (mode llm)", st.Tenants)
	}
	admin, err := taskqueue.NewAdmin(ctx, st.Project, st.Location, st.TasksAddr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close() })
	counter.Reset() // the stack's start-up: the tenant applied, its queue created

	nominal := time.Duration(float64(l.n) / l.rate * float64(time.Second))
	res, err := loadgen.Run(ctx, loadgen.Config{URL: st.WebhookURL, Secret: st.AppSecret, N: l.n, Concurrency: 32, Rate: l.rate,
		Duration: 10*nominal + 2*time.Minute})
	if err != nil {
		t.Fatalf("loadgen.Run: %v", err)
	}
	if res.Codes[200] != l.n {
		t.Fatalf("the webhook answered %v (%d transport errors: %v), want %d × 200", res.Codes, res.Errors, res.FirstErrors, l.n)
	}
	waitCtx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	if _, err := st.Graph.WaitForSends(waitCtx, l.n); err != nil {
		t.Fatalf("waiting for a reply to each of the %d messages: %v", l.n, err)
	}
	sends := st.Graph.Sends()
	if len(sends) != l.n {
		t.Fatalf("%d replies for %d messages, want one each", len(sends), l.n)
	}
	// Each reply's statuses, as Meta sends them: the status path writes too.
	for _, s := range sends {
		callback, _ := s.Body["biz_opaque_callback_data"].(string)
		to, _ := s.Body["to"].(string)
		for _, status := range []string{"sent", "delivered", "read"} {
			post(t, st, whatsapp.SampleStatus(whatsapp.SampleOptions{From: to, MessageID: s.MessageID, BizOpaqueCallbackData: callback}, status))
		}
	}
	queues := []string{tasks.InboundQueueID, tasks.OutboundQueueID, tasks.TenantQueueID(st.Tenants[0])}
	testenv.Eventually(t, 2*time.Minute, func() bool {
		for _, q := range queues {
			s, err := admin.QueueStats(ctx, q)
			if err != nil || s.InFlight > 0 || s.Tasks > 0 {
				return false
			}
		}
		return true
	}, "the queues never drained")
	t.Logf("load: %d messages at %.0f/s, sent in %v, webhook p95 %v", l.n, l.rate, res.Elapsed.Round(time.Millisecond), res.Latency.P95)
	return counter.Writes(), nominal
}

// ownConversation reports whether a document is a contact's own conversation: the one
// document a busy contact may write more than once a second.
func ownConversation(d testenv.DocWrites) bool { return d.Pattern == "conversations/{id}" }

// TestNoHotDocumentsOnTheMessagePath is the hot-document load test's short form: 50 messages at
// 10 a second (5 s of load), each from its own contact, to one tenant in mode llm, then each
// reply's three statuses. Firestore
// sustains about one write a second on a document, so over the load's 5 s a document the
// tenant's contacts share may take at most 5 writes, and at most 5 in any one second.
//
// The limits are counts of writes, not times: a slow machine stretches the load, it does not add
// writes. A document is the tenant's (shared) when its kind has fewer documents than the load
// had contacts (one usage document, 32 shards for 50 contacts); a kind with a document or more
// per contact (the contact's rate window, a message's outbound record) is the contact's or the
// message's, whose few writes a retried task under load may raise, so only a count no retry can
// reach (3× the limit) fails it. A contact's own conversation is not held to the limit.
func TestNoHotDocumentsOnTheMessagePath(t *testing.T) {
	t.Parallel()
	const contacts = 50
	docs, nominal := hotLoad{n: contacts, rate: 10, queues: testenv.FastQueues(t)}.run(t)
	limit := int(nominal / time.Second) // 1 write a second, over the load's nominal duration
	t.Logf("most written documents:\n%s\nby pattern:\n%s", testenv.WritesTable(docs, nominal, 12), testenv.PatternTable(docs, nominal))
	perKind := map[string]int{}
	for _, d := range docs {
		perKind[d.Pattern]++
	}
	for _, d := range docs {
		switch {
		case ownConversation(d):
		case perKind[d.Pattern] < contacts && (d.Writes > limit || d.Peak > limit):
			t.Errorf("%s (%s, %d of its kind for %d contacts: shared): %d writes, %d in one second; at most %d (1 a second over %v)",
				d.Name, d.Pattern, perKind[d.Pattern], contacts, d.Writes, d.Peak, limit, nominal)
		case d.Writes > 3*limit:
			t.Errorf("%s (%s): %d writes; even a contact's or a message's document may not take %d (3 × 1 a second over %v)",
				d.Name, d.Pattern, d.Writes, 3*limit, nominal)
		}
	}
}

// BenchmarkHotDocuments is the hot-document load test's full form: 20 messages a second for
// 30 s to one tenant in mode llm, each from its own contact, then each reply's three statuses,
// through the local stack with the queues of tasks/queues.yaml. It prints the most written
// documents with their sustained rate (all their writes, statuses included, over the 30 s: an
// overstatement, as the statuses come after) and their busiest second, and reports the most
// written document's rate apart from the contacts' own conversations (-v prints the tables
// whole):
//
//	go test -run '^$' -bench HotDocuments -benchtime 1x -v ./internal/devstack/
func BenchmarkHotDocuments(b *testing.B) {
	for range b.N {
		docs, nominal := hotLoad{n: 600, rate: 20, queues: tasks.DefaultQueues()}.run(b)
		b.Logf("most written documents over %v:\n%s\nby pattern:\n%s", nominal, testenv.WritesTable(docs, nominal, 15), testenv.PatternTable(docs, nominal))
		for _, d := range docs {
			if !ownConversation(d) {
				b.ReportMetric(float64(d.Writes)/nominal.Seconds(), "hottest-writes/s")
				b.ReportMetric(float64(d.Peak), "hottest-peak/s")
				b.Logf("hottest document apart from the contacts' conversations: %s", d.Name)
				break
			}
		}
	}
}
