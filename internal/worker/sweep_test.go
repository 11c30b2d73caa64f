package worker_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	wacontact "github.com/wapipe/wapipe/internal/contact"
	"github.com/wapipe/wapipe/internal/conversation"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/sweep"
	"github.com/wapipe/wapipe/internal/whatsapp"
	"github.com/wapipe/wapipe/internal/worker"
	"github.com/wapipe/wapipe/tasks"
)

// sweepAnswer is the sweep route's JSON answer, as read here.
type sweepAnswer struct {
	Status string `json:"status"`
	Jobs   []struct {
		Name  string `json:"name"`
		Found int    `json:"found"`
		Done  int    `json:"done"`
		Error string `json:"error"`
	} `json:"jobs"`
}

// job is one job's result in the answer: "name found/done", and its error when it failed.
func (a sweepAnswer) job(name string) string {
	for _, j := range a.Jobs {
		if j.Name == name {
			s := j.Name + " " + strconv.Itoa(j.Found) + "/" + strconv.Itoa(j.Done)
			if j.Error != "" {
				s += " " + j.Error
			}
			return s
		}
	}
	return "no job " + name
}

// fakeJob is a sweep job with a set answer.
type fakeJob struct {
	name string
	res  sweep.Result
	err  error
}

func (j fakeJob) Name() string { return j.name }

func (j fakeJob) Sweep(context.Context, time.Time) (sweep.Result, error) { return j.res, j.err }

// TestSweepRouteAnswersEachJob: POST /internal/sweep runs every job and answers each one's
// result: 200 when all succeeded; 500 when one failed (so Cloud Scheduler retries), the others'
// results still there and the failed one named without its internal error text; one sweep log
// line either way. Without the internal token it runs nothing.
func TestSweepRouteAnswersEachJob(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		jobs     []sweep.Job
		code     int
		want     []string
		severity string
	}{
		{"all succeed", []sweep.Job{fakeJob{name: "stranded_inboxes", res: sweep.Result{Found: 2, Done: 2}}, fakeJob{name: "health_probe", res: sweep.Result{Done: 3}}},
			http.StatusOK, []string{"stranded_inboxes 2/2", "health_probe 0/3"}, "INFO"},
		{"one fails, the others run", []sweep.Job{
			fakeJob{name: "stranded_inboxes", res: sweep.Result{Found: 1}, err: errors.New("create task: Unavailable")},
			fakeJob{name: "health_probe", res: sweep.Result{Found: 1, Done: 3}}, fakeJob{name: "held_unknown_outcomes", res: sweep.Result{Found: 4, Done: 4}}},
			http.StatusInternalServerError, []string{"stranded_inboxes 1/0 failed", "health_probe 1/3", "held_unknown_outcomes 4/4"}, "ERROR"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			hs := newHarness(t)
			hs.deps = append(hs.deps, func(d *worker.Deps) { d.SweepJobs = tc.jobs })
			req := httptest.NewRequest(http.MethodPost, tasks.SweepPath, nil)
			req.Header.Set(tasks.HeaderInternalToken, internalToken)
			rec := httptest.NewRecorder()
			hs.serve().ServeHTTP(rec, req)
			var a sweepAnswer
			if err := json.Unmarshal(rec.Body.Bytes(), &a); err != nil {
				t.Fatalf("answer %d is not JSON: %q", rec.Code, rec.Body.String())
			}
			var got []string
			for _, j := range tc.jobs {
				got = append(got, a.job(j.Name()))
			}
			if rec.Code != tc.code || !cmp.Equal(tc.want, got) {
				t.Errorf("answer %d %v, want %d %v", rec.Code, got, tc.code, tc.want)
			}
			if n := hs.logs.Count("sweep"); n != 1 {
				t.Errorf("%d sweep log lines, want 1:\n%s", n, hs.logs.String())
			}
			severity := ""
			for l := range strings.Lines(hs.logs.String()) {
				var m map[string]any
				if json.Unmarshal([]byte(l), &m) == nil && m["event"] == "sweep" {
					severity, _ = m["severity"].(string)
				}
			}
			if severity != tc.severity {
				t.Errorf("sweep line at %q, want %s", severity, tc.severity)
			}
		})
	}

	// Without the internal token nothing runs.
	ran := make(chan struct{}, 1)
	hs := newHarness(t)
	hs.deps = append(hs.deps, func(d *worker.Deps) { d.SweepJobs = []sweep.Job{signalJob{ran}} })
	rec := httptest.NewRecorder()
	hs.serve().ServeHTTP(rec, httptest.NewRequest(http.MethodPost, tasks.SweepPath, nil))
	if rec.Code != http.StatusUnauthorized || len(ran) != 0 {
		t.Errorf("without the token: %d, ran %v; want 401 and nothing run", rec.Code, len(ran) != 0)
	}
}

// signalJob tells ran that it ran.
type signalJob struct{ ran chan struct{} }

func (signalJob) Name() string { return "signal" }

func (j signalJob) Sweep(context.Context, time.Time) (sweep.Result, error) {
	j.ran <- struct{}{}
	return sweep.Result{}, nil
}

// postSweep posts the sweep to the stack's worker as the local ticker (and, with its OIDC
// token, Cloud Scheduler) does, and returns the answer.
func (s *stack) postSweep() (int, sweepAnswer) {
	s.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, s.WorkerURL+tasks.SweepPath, nil)
	req.Header.Set(tasks.HeaderInternalToken, s.InternalToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatalf("post the sweep: %v", err)
	}
	defer resp.Body.Close()
	var a sweepAnswer
	if err := json.NewDecoder(resp.Body).Decode(&a); err != nil {
		s.t.Fatalf("sweep answer %d: %v", resp.StatusCode, err)
	}
	return resp.StatusCode, a
}

// TestSweepRunsAStrandedInbox: a conversation whose holder was killed on its task's last attempt
// (its message stored in the inbox and the lease taken five minutes ago, never released, and no
// task left to take over) is found by the sweep, which creates a drain task; the worker runs it,
// taking the expired lease with a higher fencing number, and the message is answered exactly
// once. A second sweep finds nothing stranded and sends nothing.
func TestSweepRunsAStrandedInbox(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStack(t, stackOptions{})
	tid := s.applyTenant(s.ops(), tenantFile("acme-swept", numberA, "en", "public", ""), "token-acme-swept")
	// A first message, answered as usual: the contact and its conversation exist.
	s.text(numberA, contact, "hello", time.Time{})
	s.waitSendsTo(contact, 1)
	s.settled(tid)
	conv := s.mustConversationOf(tid, numberA, contact)
	ct, ok := s.contactOf(tid, wacontact.Identity{WaID: contact})
	if !ok {
		t.Fatal("no contact after the first message")
	}

	// The second message's task stored it and took the lease, then its worker was killed on the
	// task's last attempt.
	killedAt := time.Now().Add(-5 * time.Minute)
	m := normalized(t, whatsapp.SampleText(whatsapp.SampleOptions{PhoneNumberID: numberA, From: contact, ContactName: "Marie",
		Timestamp: killedAt}, "are you there?"))
	in := conversation.Inbound{TenantID: tid, PhoneNumberID: numberA, ConversationID: conv, ContactID: ct.ID, Person: ct.Identity,
		Contact: ct.WaID, ContactName: "Marie", MessageID: m.ID, Timestamp: killedAt.Unix(), Message: m, ReceivedAt: killedAt,
		InboundEventID: "evt-stranded", CorrelationID: "corr-stranded"}
	payload, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	then := store.NewConversationStore(store.NewDB(s.fs), store.Options{Now: func() time.Time { return killedAt }})
	if _, _, err := then.AddInbound(ctx, conv, store.Message{MessageID: m.ID, Type: m.Type, Text: m.Text, Timestamp: in.Timestamp,
		ReceivedAt: killedAt, Payload: string(payload), InboundEventID: in.InboundEventID, CorrelationID: in.CorrelationID}); err != nil {
		t.Fatal(err)
	}
	killed, taken, err := then.Acquire(ctx, conv, "killed-holder", conversation.DefaultLease, nil)
	if err != nil || !taken {
		t.Fatalf("take the lease as the killed holder: %v, %v", taken, err)
	}

	code, a := s.postSweep()
	if code != http.StatusOK || a.Status != sweep.StatusOK || a.job("stranded_inboxes") != "stranded_inboxes 1/1" ||
		a.job("health_probe") == "no job health_probe" {
		t.Fatalf("sweep answered %d %+v, want 200 with stranded_inboxes 1/1 and health_probe", code, a)
	}
	s.waitSendsTo(contact, 2)
	s.settled(tid)
	if n := len(s.repliesTo(m.ID)); n != 1 {
		t.Errorf("the stranded message got %d replies, want 1", n)
	}
	convs := store.NewConversationStore(store.NewDB(s.fs), store.Options{})
	after, err := convs.Get(ctx, conv)
	if err != nil || after.Lease.Holder != "" || after.Lease.Fence <= killed.Lease.Fence {
		t.Errorf("lease after the drain = %+v (%v), want released with a fence over the killed holder's %d", after.Lease, err, killed.Lease.Fence)
	}
	if msg, err := convs.GetMessage(ctx, conv, m.ID); err != nil || msg.InInbox || msg.Turn != store.TurnDone {
		t.Errorf("stored message = turn %q, in inbox %v (%v); want done, out of the inbox", msg.Turn, msg.InInbox, err)
	}

	// Nothing is stranded any more: the next sweep creates nothing and nothing more is sent.
	if code, a := s.postSweep(); code != http.StatusOK || a.job("stranded_inboxes") != "stranded_inboxes 0/0" {
		t.Errorf("second sweep answered %d %+v, want stranded_inboxes 0/0", code, a)
	}
	s.settled(tid)
	if n, all := len(s.repliesTo(m.ID)), len(s.sendsTo(contact)); n != 1 || all != 2 {
		t.Errorf("after the second sweep: %d replies to the stranded message, %d sends to the contact; want 1 and 2", n, all)
	}
	if !s.logs.Has("conversation_swept") || !s.logs.Has("sweep") {
		t.Error("no conversation_swept or sweep log line")
	}
}
