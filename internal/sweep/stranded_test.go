package sweep_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/cloudtasks/apiv2/cloudtaskspb"
	"google.golang.org/api/iterator"

	"github.com/wapipe/wapipe/internal/contact"
	"github.com/wapipe/wapipe/internal/conversation"
	"github.com/wapipe/wapipe/internal/keyedid"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/sweep"
	"github.com/wapipe/wapipe/internal/taskqueue"
	"github.com/wapipe/wapipe/internal/tenant"
	"github.com/wapipe/wapipe/internal/testenv"
	"github.com/wapipe/wapipe/internal/whatsapp"
	"github.com/wapipe/wapipe/tasks"
)

const (
	tenantID = "acme-bus"
	number   = "106540352242922"
	phone    = "6281200000001"
)

// strandedFixture is a Firestore project and a Cloud Tasks emulator with the tenant's queue
// paused, so the tasks the sweep creates wait there to be read.
type strandedFixture struct {
	t     *testing.T
	db    *store.DB
	tasks *taskqueue.Client
	list  func() []*cloudtaskspb.Task
	now   time.Time
}

func newStrandedFixture(t *testing.T) *strandedFixture {
	t.Helper()
	ctx := context.Background()
	db, project := testenv.Store(t)
	emu, tc := testenv.Tasks(t, project, "us-central1", nil)
	admin, err := taskqueue.NewAdmin(ctx, project, "us-central1", emu.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close() })
	if _, _, err := admin.EnsureQueue(ctx, tasks.TenantQueue(tenantID, tenant.Sending{PerSecond: 5, MaxConcurrent: 2})); err != nil {
		t.Fatal(err)
	}
	if err := admin.PauseQueue(ctx, tasks.TenantQueueID(tenantID)); err != nil {
		t.Fatal(err)
	}
	tq, err := taskqueue.New(ctx, taskqueue.Config{ProjectID: project, Location: "us-central1", EmulatorHost: emu.Addr(),
		BaseURL: "http://127.0.0.1:1", Token: "t"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tq.Close() })
	f := &strandedFixture{t: t, db: db, tasks: tq, now: time.Date(2026, 11, 22, 10, 7, 20, 0, time.UTC)}
	f.list = func() []*cloudtaskspb.Task {
		t.Helper()
		var out []*cloudtaskspb.Task
		it := tc.ListTasks(ctx, &cloudtaskspb.ListTasksRequest{Parent: tq.QueuePath(tasks.TenantQueueID(tenantID)),
			ResponseView: cloudtaskspb.Task_FULL})
		for {
			task, err := it.Next()
			if errors.Is(err, iterator.Done) {
				return out
			}
			if err != nil {
				t.Fatalf("list tasks: %v", err)
			}
			out = append(out, task)
		}
	}
	return f
}

// conversations is the store on the fixture's clock moved by d.
func (f *strandedFixture) conversations(d time.Duration) *store.ConversationStore {
	return store.NewConversationStore(f.db, store.Options{Now: func() time.Time { return f.now.Add(d) }})
}

// store stores the inbound message id in conversation conv's inbox ago before now, as the
// runner does (the payload is the conversation.Inbound it ran with).
func (f *strandedFixture) store(conv, id string, ago time.Duration) conversation.Inbound {
	f.t.Helper()
	payload := whatsapp.SampleText(whatsapp.SampleOptions{PhoneNumberID: number, From: phone, MessageID: id, ContactName: "Agus"}, "Bus 03 AC mati")
	p, err := whatsapp.Parse(payload)
	if err != nil {
		f.t.Fatal(err)
	}
	msgs, _ := whatsapp.Normalize(p)
	m := msgs[0]
	in := conversation.Inbound{TenantID: tenantID, PhoneNumberID: number, ConversationID: conv, ContactID: "ct_1",
		Person: contact.Identity{WaID: phone}, Contact: phone, MessageID: m.ID, Timestamp: f.now.Add(-ago).Unix(), Message: m,
		ReceivedAt: f.now.Add(-ago), InboundEventID: "evt-" + id, CorrelationID: "corr-" + id}
	b, err := json.Marshal(in)
	if err != nil {
		f.t.Fatal(err)
	}
	if _, _, err := f.conversations(-ago).AddInbound(context.Background(), conv, store.Message{MessageID: m.ID, Type: m.Type,
		Text: m.Text, Timestamp: in.Timestamp, ReceivedAt: in.ReceivedAt, Payload: string(b), InboundEventID: in.InboundEventID,
		CorrelationID: in.CorrelationID}); err != nil {
		f.t.Fatal(err)
	}
	return in
}

// tenantsOf is a TenantReader that knows the tenants named.
type tenantsOf []string

func (ts tenantsOf) Get(_ context.Context, id string) (store.TenantRecord, error) {
	for _, t := range ts {
		if t == id {
			return store.TenantRecord{}, nil
		}
	}
	return store.TenantRecord{}, store.ErrNotFound
}

// hold takes conversation conv's lease ago before now for lease, as a holder does.
func (f *strandedFixture) hold(conv string, ago, lease time.Duration) store.Lease {
	f.t.Helper()
	return f.holdFor(tenantID, conv, ago, lease)
}

// holdFor is hold for a conversation of tenant tid.
func (f *strandedFixture) holdFor(tid, conv string, ago, lease time.Duration) store.Lease {
	f.t.Helper()
	c, taken, err := f.conversations(-ago).Acquire(context.Background(), conv, "holder-"+conv, lease,
		&store.Touch{TenantID: tid, PhoneNumberID: number, ContactID: "ct_1", Contact: phone})
	if err != nil || !taken {
		f.t.Fatalf("take the lease of %s: %v, %v", conv, taken, err)
	}
	return c.Lease
}

// TestStrandedInboxesSwept: a conversation with a message in its inbox whose holder was killed
// (its lease expired five minutes ago, never released, no task left) gets one drain task on the
// tenant's queue, named from the conversation and the sweep's minute, carrying the
// process_outbound body of its oldest inbox message; two sweeps in the same minute make that one
// task, the next minute's sweep a task of its own. A conversation whose lease is still held is
// not swept, nor one whose lease expired with an empty inbox or whose tenant was deleted: their
// lease is released instead, so that the sweep stops finding them.
func TestStrandedInboxesSwept(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newStrandedFixture(t)
	// Killed with two messages in the inbox: the older one is the drain task's.
	f.hold("conv_stranded", 5*time.Minute, conversation.DefaultLease)
	oldest := f.store("conv_stranded", "wamid.stranded-1", 6*time.Minute)
	f.store("conv_stranded", "wamid.stranded-2", 5*time.Minute)
	// Held now by a live holder, with a message waiting.
	f.hold("conv_held", 10*time.Second, conversation.DefaultLease)
	f.store("conv_held", "wamid.held", 5*time.Second)
	// Killed after its last message was done: nothing in the inbox.
	emptyLease := f.hold("conv_empty", 5*time.Minute, conversation.DefaultLease)
	// Killed with a message waiting, and its tenant deleted since (its queue with it).
	goneLease := f.holdFor("gone-co", "conv_gone", 5*time.Minute, conversation.DefaultLease)
	f.store("conv_gone", "wamid.gone", 6*time.Minute)

	job := &sweep.StrandedInboxes{Inboxes: f.conversations(0), Tasks: f.tasks, Keyer: keyedid.Dev(), Tenants: tenantsOf{tenantID}}
	sweepAt := func(at time.Time, want sweep.Result) {
		t.Helper()
		got, err := job.Sweep(ctx, at)
		if err != nil || got != want {
			t.Fatalf("Sweep at %v = %+v, %v; want %+v", at, got, err, want)
		}
	}
	sweepAt(f.now, sweep.Result{Found: 1, Done: 1})
	sweepAt(f.now.Add(30*time.Second), sweep.Result{Found: 1, Done: 1}) // 10:07:50, the same minute

	got := f.list()
	if len(got) != 1 {
		t.Fatalf("%d tasks after two sweeps in one minute, want 1: %v", len(got), got)
	}
	name := f.tasks.QueuePath(tasks.TenantQueueID(tenantID)) + "/tasks/" + sweep.DrainTaskID("conv_stranded", f.now)
	if got[0].GetName() != name || !strings.HasSuffix(name, "-202611221007-sweep") {
		t.Errorf("task %s, want %s", got[0].GetName(), name)
	}
	req := got[0].GetHttpRequest()
	if !strings.HasSuffix(req.GetUrl(), tasks.ProcessOutboundPath) {
		t.Errorf("task targets %s, want %s", req.GetUrl(), tasks.ProcessOutboundPath)
	}
	var body tasks.Outbound
	if err := json.Unmarshal(req.GetBody(), &body); err != nil {
		t.Fatal(err)
	}
	want := tasks.Outbound{IdempotencyKey: tasks.IdempotencyKey(keyedid.Dev(), oldest.MessageID), CorrelationID: oldest.CorrelationID,
		InboundEventID: oldest.InboundEventID, PhoneNumberID: number, To: phone, Message: oldest.Message,
		ReceivedAt: oldest.ReceivedAt, TenantID: tenantID}
	if b, _ := json.Marshal(want); string(b) != string(req.GetBody()) {
		t.Errorf("task body\n%s\nwant\n%s", req.GetBody(), b)
	}

	// The next minute's sweep, the conversation still stranded: a task of its own.
	sweepAt(f.now.Add(time.Minute), sweep.Result{Found: 1, Done: 1})
	if n := len(f.list()); n != 2 {
		t.Errorf("%d tasks after the next minute's sweep, want 2", n)
	}

	// The empty one and the deleted tenant's were released (their fence kept); the held one was
	// left alone.
	for conv, l := range map[string]store.Lease{"conv_empty": emptyLease, "conv_gone": goneLease} {
		c, err := f.conversations(0).Get(ctx, conv)
		if err != nil || c.Lease.Holder != "" || c.Lease.Fence != l.Fence {
			t.Errorf("%s's lease = %+v (%v), want released with fence %d", conv, c.Lease, err, l.Fence)
		}
	}
	if c, err := f.conversations(0).Get(ctx, "conv_held"); err != nil || c.Lease.Holder != "holder-conv_held" {
		t.Errorf("held conversation's lease = %+v (%v), want still its holder's", c.Lease, err)
	}
	for _, task := range f.list() {
		for _, other := range []string{"conv_held", "conv_empty", "conv_gone"} {
			for _, at := range []time.Time{f.now, f.now.Add(time.Minute)} {
				if strings.HasSuffix(task.GetName(), sweep.DrainTaskID(other, at)) {
					t.Errorf("a drain task for %s", other)
				}
			}
		}
	}
}

// TestStrandedInboxesErrors: a conversation whose drain task cannot be made (its stored message
// unreadable) fails the job, and the job still drains the others.
func TestStrandedInboxesErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newStrandedFixture(t)
	f.hold("conv_a", 5*time.Minute, time.Minute)
	f.store("conv_a", "wamid.a", 6*time.Minute)
	f.hold("conv_bad", 4*time.Minute, time.Minute)
	if _, _, err := f.conversations(-5*time.Minute).AddInbound(ctx, "conv_bad", store.Message{MessageID: "wamid.bad", Payload: "{"}); err != nil {
		t.Fatal(err)
	}
	res, err := (&sweep.StrandedInboxes{Inboxes: f.conversations(0), Tasks: f.tasks}).Sweep(ctx, f.now)
	if err == nil || !strings.Contains(err.Error(), "conv_bad") || res != (sweep.Result{Found: 2, Done: 1}) {
		t.Errorf("Sweep = %+v, %v; want found 2, done 1 and conv_bad's error", res, err)
	}
	if got := f.list(); len(got) != 1 || !strings.HasSuffix(got[0].GetName(), sweep.DrainTaskID("conv_a", f.now)) {
		t.Errorf("tasks %v, want conv_a's drain task alone", got)
	}
}
