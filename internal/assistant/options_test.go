package assistant_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/wapipe/wapipe/internal/assistant"
	"github.com/wapipe/wapipe/internal/assistant/assistanttest"
	"github.com/wapipe/wapipe/internal/llm"
	"github.com/wapipe/wapipe/internal/tenant"
	"github.com/wapipe/wapipe/internal/turnstate"
	"github.com/wapipe/wapipe/internal/whatsapp"
)

// TestOptions: the model's options go as reply buttons (up to three, titles cut to 20
// characters) and are kept for the next message only; a tap on one reaches the model as its
// title; beside a pending confirmation they are dropped (its buttons alone answer it).
func TestOptions(t *testing.T) {
	t.Parallel()
	x := assistanttest.NewExtractor()
	asked := generalResult("Which route?")
	asked.Options = []llm.Option{{ID: "r1", Title: "Denpasar to Ubud via the coast road"}, {ID: "r2", Title: "Kuta"}}
	x.Default = always(asked)
	e := assistant.New(x, assistanttest.NewGuard())
	tn := newTenant(t)
	out := run(t, e, input(tn, textMsg("m-1", ownerID, "a route?"), t0, turnstate.State{}))
	if len(out.Replies) != 1 || out.Replies[0].Graph == nil || out.Replies[0].Graph.Interactive.Type != "button" {
		t.Fatalf("replies %+v, want one message with buttons", views(out.Replies))
	}
	var got []string
	for _, b := range out.Replies[0].Graph.Interactive.Action.Buttons {
		got = append(got, b.Reply.ID+" "+b.Reply.Title)
	}
	if diff := cmp.Diff([]string{"option:r1 Denpasar to Ubud vi…", "option:r2 Kuta"}, got); diff != "" {
		t.Errorf("buttons (-want, +got):\n%s", diff)
	}
	if want := []turnstate.Option{{ID: "r1", Title: "Denpasar to Ubud via the coast road"}, {ID: "r2", Title: "Kuta"}}; !cmp.Equal(want, out.State.Offered) {
		t.Errorf("offered %+v, want %+v", out.State.Offered, want)
	}
	// The tap: the model reads the whole title.
	x.Default = always(generalResult("Ok."))
	tap := whatsapp.Message{ID: "m-2", From: ownerID, PhoneNumberID: "106540352242922", Type: "interactive",
		Reply: &whatsapp.Reply{Kind: "button_reply", ID: "option:r1", Title: "Denpasar to Ubud via…"}}
	out = run(t, e, input(tn, tap, t0, out.State))
	if reqs := x.Requests(); reqs[len(reqs)-1].Text != "Denpasar to Ubud via the coast road" || out.State.Offered != nil {
		t.Errorf("the tap reached the model as %q (offered after: %v), want the option's title", reqs[len(reqs)-1].Text, out.State.Offered)
	}
	// An answer that makes a confirmation: its yes/no buttons alone, whatever options came.
	booking := bookingResult()
	booking.Options = asked.Options
	x.Default = always(booking)
	out = run(t, e, input(tn, textMsg("m-3", ownerID, "book bus 01"), t0, turnstate.State{}))
	last := out.Replies[len(out.Replies)-1]
	if out.State.Pending == nil || out.State.Offered != nil || last.Graph == nil || last.Graph.Interactive.Action.Buttons[0].Reply.ID != assistant.ButtonYes {
		t.Errorf("a confirmation with options: %+v, offered %v; want the confirmation's buttons alone", views(out.Replies), out.State.Offered)
	}
}

// TestDefaultsToTheSender: a field the intent defaults to the sender (defaults: {driver: sender})
// and the model left out is filled with the sender's name from the tenant file; one the model
// gave is kept; the model is told so in the intent's description.
func TestDefaultsToTheSender(t *testing.T) {
	t.Parallel()
	tn := newTenant(t, func(tn *tenant.Tenant) {
		tn.Assistant.Intents = append(tn.Assistant.Intents, tenant.Intent{Name: "report_ac", Description: "a broken air conditioning",
			Fields:   tenant.Fields{{Name: "bus", Type: tenant.FieldString}, {Name: "driver", Type: tenant.FieldString}},
			Required: []string{"bus", "driver"}, Confirm: true, Defaults: map[string]string{"driver": tenant.DefaultSender}})
	})
	x := assistanttest.NewExtractor()
	e := assistant.New(x, assistanttest.NewGuard())
	for _, tc := range []struct{ name, given, want string }{{"left out", "", "Sam"}, {"given", "Made", "Made"}} {
		data := map[string]any{"bus": "03"}
		if tc.given != "" {
			data["driver"] = tc.given
		}
		x.Default = always(llm.Result{Intent: "report_ac", Confidence: 0.9, Data: data, Reply: "AC bus 03?"})
		out := run(t, e, input(tn, textMsg("m-"+tc.name, memberID, "Bus 03 AC mati"), t0, turnstate.State{}))
		if out.State.Pending == nil || out.State.Pending.Data["driver"] != tc.want {
			t.Errorf("%s: pending %+v, want the driver %q", tc.name, out.State.Pending, tc.want)
		}
	}
	reqs := x.Requests()
	if got := reqs[0].Intents[len(reqs[0].Intents)-1].Description; !strings.Contains(got, "driver is the user unless they name someone else") {
		t.Errorf("the intent's description %q does not tell the model", got)
	}
}
