package assistant_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wapipe/wapipe/internal/assistant"
	"github.com/wapipe/wapipe/internal/assistant/assistanttest"
	"github.com/wapipe/wapipe/internal/i18n"
	"github.com/wapipe/wapipe/internal/llm"
	"github.com/wapipe/wapipe/internal/llm/geminifake"
	"github.com/wapipe/wapipe/internal/turnstate"
)

// TestConversationThroughTheRealClient plays a conversation with the llm package's client
// against the fake Gemini: booking, confirmation, a schedule query, a garbled answer and an
// outage.
func TestConversationThroughTheRealClient(t *testing.T) {
	t.Parallel()
	fake := geminifake.New(geminifake.WithRules(geminifake.DefaultRules()...), geminifake.WithClock(func() time.Time { return t0 }))
	srv := fake.NewTestServer()
	t.Cleanup(srv.Close)
	if err := fake.AddRule(geminifake.Rule{Name: "garbled", Contains: "xyzzy", RawText: `{"intent": "create_booking", "confidence": `}); err != nil {
		t.Fatal(err)
	}
	client, err := llm.New(context.Background(), llm.Config{Project: "wapipe-dev", BaseURL: srv.URL})
	if err != nil {
		t.Fatalf("llm.New: %v", err)
	}
	g := assistanttest.NewGuard()
	c := &conversation{t: t, e: assistant.New(client, g), tn: newTenant(t), id: convID}

	// A booking: one interactive message with the two buttons, and a pending action.
	out := c.send(textMsg("m-book", ownerID, "book bus 01 for Pak Agus on 1 March, 15 million"), t0)
	want := []replyView{{Text: "I'll record: booking bus 01 for Pak Agus on 1 March, 15,000,000. Correct?\n\n" +
		"client: Pak Agus\ndate: 1 Maret 2027\nbus: 01\nprice: 15.000.000", Buttons: confirmButtons("id")}}
	if diff := cmp.Diff(want, views(out.Replies)); diff != "" || out.Event != assistant.EventPending {
		t.Fatalf("booking: event %q, replies (-want, +got):\n%s", out.Event, diff)
	}
	if out.Usage.TotalTokens == 0 {
		t.Errorf("booking: no token usage reported")
	}

	// "ya": the action, with the model's data as the llm package typed it; nothing sent now.
	out = c.send(textMsg("m-yes", ownerID, "ya"), t0.Add(time.Minute))
	wantAction := &assistant.ActionRequest{
		ActionID: assistant.ActionID(tenantID, convID, "m-book"), TenantID: tenantID, Intent: "create_booking",
		Data:           map[string]any{"bus": "01", "client": "Pak Agus", "date": "2027-03-01", "price": int64(15000000)},
		From:           assistant.ActionFrom{WaID: ownerID, Name: "Pak Agus", Role: "owner"},
		ConversationID: convID, RequestedAt: t0.Add(time.Minute),
	}
	if diff := cmp.Diff(wantAction, out.Action); diff != "" || len(out.Replies) != 0 || out.State.Pending != nil {
		t.Errorf("confirmation: replies %d, pending %v, action (-want, +got):\n%s", len(out.Replies), out.State.Pending, diff)
	}

	// A schedule query runs at once.
	out = c.send(textMsg("m-sched", ownerID, "jadwal besok?"), t0.Add(2*time.Minute))
	if out.Event != assistant.EventActionNow || out.Action == nil || out.Action.Data["date"] != "2026-11-24" || len(out.Replies) != 0 {
		t.Errorf("schedule: event %q action %+v replies %d", out.Event, out.Action, len(out.Replies))
	}

	// An answer that is not JSON, twice: not understood.
	before := len(fake.Requests())
	out = c.send(textMsg("m-garbled", ownerID, "xyzzy"), t0.Add(3*time.Minute))
	if out.Event != assistant.EventNotUnderstood || len(fake.Requests())-before != 2 {
		t.Errorf("garbled: event %q after %d calls; want not_understood after 2", out.Event, len(fake.Requests())-before)
	}
	if len(out.Replies) != 1 || out.Replies[0].Text != i18n.Text("id", i18n.NotUnderstood) {
		t.Errorf("garbled: replies %+v", views(out.Replies))
	}

	// Vertex AI answers 500: the turn is to be redone, and the redo is answered.
	fake.FailNext(1, geminifake.Failure{Status: 500})
	in := input(c.tn, textMsg("m-hi", ownerID, "halo"), t0.Add(4*time.Minute), c.state)
	if _, err := c.e.Turn(context.Background(), in); !errors.Is(err, assistant.ErrRetry) || !errors.Is(err, llm.ErrUnavailable) {
		t.Fatalf("during the outage: %v; want ErrRetry and llm.ErrUnavailable", err)
	}
	out = c.send(in.Message, in.Now)
	if out.Event != assistant.EventGeneralQuery || len(out.Replies) != 1 {
		t.Errorf("after the outage: event %q replies %d", out.Event, len(out.Replies))
	}

	// What the model was told: the tenant's prompt, the sender's role and language, the
	// conversation so far.
	reqs := fake.Requests()
	last := reqs[len(reqs)-1]
	for _, s := range []string{"You are the operations assistant of a tour-bus company.", `the role "owner"`, "Indonesian (id)",
		"create_booking", "check_schedule", "Today is Monday 2026-11-23"} {
		if !strings.Contains(last.SystemInstruction, s) {
			t.Errorf("system instruction lacks %q", s)
		}
	}
	if n := len(last.Contents); n < 5 || last.Contents[0].Text != "book bus 01 for Pak Agus on 1 March, 15 million" {
		t.Errorf("contents = %+v; want the conversation from the booking on", last.Contents)
	}
	// Calls: booking, schedule, 2 garbled, the failed one and its redo; its reservation was reused.
	if got := g.Usage(tenantID, turnstate.Period(t0)); got != 5 {
		t.Errorf("usage = %d; want 5 (the redone call counted once)", got)
	}
}
