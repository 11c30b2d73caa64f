package worker_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/cloudtasks/apiv2/cloudtaskspb"
	"google.golang.org/api/iterator"

	"github.com/wapipe/wapipe/internal/assistant"
	"github.com/wapipe/wapipe/internal/cloudtasksemu"
	"github.com/wapipe/wapipe/internal/media"
	"github.com/wapipe/wapipe/internal/media/mediasample"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/testenv"
	"github.com/wapipe/wapipe/internal/worker"
	"github.com/wapipe/wapipe/tasks"
)

// budgetStack is the assistant's stack with the worker's media files charged to budget.
func budgetStack(t *testing.T, budget *media.Budget) *stack {
	t.Helper()
	return newStack(t, stackOptions{worker: []func(*worker.Deps){func(d *worker.Deps) {
		d.Media = d.Media.(*media.Fetcher).WithBudget(budget)
	}}})
}

// refusedWith503 reports whether a task of queue was last answered 503 by the worker, as the
// Cloud Tasks emulator recorded its last attempt.
func (s *stack) refusedWith503(queue string) bool {
	s.t.Helper()
	ctx := context.Background()
	tc, err := cloudtasksemu.NewClient(ctx, s.TasksAddr)
	if err != nil {
		s.t.Fatal(err)
	}
	defer tc.Close()
	it := tc.ListTasks(ctx, &cloudtaskspb.ListTasksRequest{Parent: s.QueuePath(queue)})
	for {
		task, err := it.Next()
		if err == iterator.Done {
			return false
		}
		if err != nil {
			s.t.Fatalf("list tasks: %v", err)
		}
		if la := task.GetLastAttempt(); la.GetResponseStatus() != nil && strings.HasPrefix(la.GetResponseStatus().GetMessage(), "503") {
			return true
		}
	}
}

// TestMediaBudgetRetriesTheTurn is issue 35 item 4: with the instance's MEDIA_INFLIGHT_BYTES
// held by other turns, a voice note's turn downloads nothing and is answered 503 (Cloud Tasks
// retries it), logged media_budget_exhausted; it is neither failed nor dead-lettered, and once
// the budget is free a later attempt answers it, once.
func TestMediaBudgetRetriesTheTurn(t *testing.T) {
	t.Parallel()
	// A short wait: each refused attempt ends quickly, and the test queues' five attempts leave
	// time to see one refused and free the budget before the last.
	budget, err := media.NewBudget(media.DefaultInflightBytes, 500*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	others := budget.NewCharge()
	if err := others.Add(context.Background(), media.DefaultInflightBytes); err != nil {
		t.Fatal(err)
	}
	s := budgetStack(t, budget)
	tid := s.assistantTenant("acme-media-budget", numberA, "")
	v := mediasample.VoiceNote()
	vf := s.holdMedia(v.Data, v.MIMEType, true)
	id := s.sendMedia(numberA, contact, "audio", vf)

	queue := tasks.TenantQueueID(tid)
	testenv.Eventually(t, 30*time.Second, func() bool { return s.refusedWith503(queue) },
		"the turn was never answered 503 while the media budget was held")
	if !strings.Contains(s.logs.String(), `"event":"media_budget_exhausted"`) {
		t.Error("no media_budget_exhausted log line")
	}
	if _, downloads := s.mediaCalls(vf.ID); len(downloads) != 0 {
		t.Errorf("%d downloads without budget, want none", len(downloads))
	}
	if n := len(s.sendsTo(contact)); n != 0 {
		t.Fatalf("%d sends to the contact while the turn could not run, want none (no 'send it again')", n)
	}

	others.Release()
	prompt := s.waitSendsTo(contact, 1)[0]
	s.settled(tid)
	if got := s.sendsTo(contact); len(got) != 1 {
		t.Errorf("%d sends to the contact, want the one answer", len(got))
	}
	if got := buttons(prompt); !slices.Equal(got, []string{assistant.ButtonYes, assistant.ButtonNo}) {
		t.Errorf("the voice note was answered %q with buttons %v, want the booking's confirmation", body(prompt), got)
	}
	reqs := s.Gemini.Requests()
	if len(reqs) != 1 || len(reqs[0].Media) != 1 || reqs[0].Media[0].SHA256 != v.SHA256Hex() {
		t.Errorf("LLM calls %+v, want one with the voice note", reqs)
	}
	dls, err := s.records.ListDeadLetters(context.Background(), true, 10)
	if err != nil || len(dls) != 0 {
		t.Errorf("dead letters %+v (%v), want none", dls, err)
	}
	s.storedMessage(tid, numberA, contact, id, func(m store.Message) bool { return m.Media != nil && m.Media.Size == int64(len(v.Data)) })
	if n := budget.InUse(); n != 0 {
		t.Errorf("%d bytes of the media budget still charged after the turn", n)
	}
}

// TestMediaBudgetNeverFailsTheLastAttempt: with the budget held through every attempt of the
// task, the last one included, the turn is still answered 503 (Cloud Tasks gives up): no dead
// letter, no "send it again" to the user, and the message stays in its conversation's inbox for
// the sweep to run.
func TestMediaBudgetNeverFailsTheLastAttempt(t *testing.T) {
	t.Parallel()
	budget, err := media.NewBudget(media.DefaultInflightBytes, 200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	others := budget.NewCharge()
	if err := others.Add(context.Background(), media.DefaultInflightBytes); err != nil {
		t.Fatal(err)
	}
	defer others.Release()
	s := budgetStack(t, budget)
	tid := s.assistantTenant("acme-media-last", numberA, "")
	v := mediasample.VoiceNote()
	id := s.sendMedia(numberA, contact, "audio", s.holdMedia(v.Data, v.MIMEType, true))
	// The test queues give up after five attempts.
	s.settled(tid)
	if n := strings.Count(s.logs.String(), `"event":"media_budget_exhausted"`); n < 5 {
		t.Errorf("%d media_budget_exhausted lines, want one per attempt (5)", n)
	}
	if n := len(s.sendsTo(contact)); n != 0 {
		t.Errorf("%d sends to the contact, want none: the file was never read", n)
	}
	dls, err := s.records.ListDeadLetters(context.Background(), true, 10)
	if err != nil || len(dls) != 0 {
		t.Errorf("dead letters %+v (%v), want none", dls, err)
	}
	if m := s.storedMessage(tid, numberA, contact, id, func(store.Message) bool { return true }); !m.InInbox || m.Turn != store.TurnPending {
		t.Errorf("stored message in inbox %v, turn %q; want it still waiting in the inbox", m.InInbox, m.Turn)
	}
}
