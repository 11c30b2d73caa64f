package assistant_test

import (
	"strings"
	"testing"

	"github.com/wapipe/wapipe/internal/assistant"
	"github.com/wapipe/wapipe/internal/assistant/assistanttest"
	"github.com/wapipe/wapipe/internal/i18n"
	"github.com/wapipe/wapipe/internal/llm"
	"github.com/wapipe/wapipe/internal/turnstate"
	"github.com/wapipe/wapipe/internal/whatsapp"
)

func otherMsg(id, typ string, f func(*whatsapp.Message)) whatsapp.Message {
	m := whatsapp.Message{ID: id, From: ownerID, PhoneNumberID: "106540352242922", Type: typ}
	f(&m)
	return m
}

// TestRevokeAndEdit: a deleted message gets no reply, leaves the history without its words and
// drops the pending action it created; an edit of the pending action's message is a correction
// (a fresh turn with the new content); an edit of another message changes only the history.
func TestRevokeAndEdit(t *testing.T) {
	t.Parallel()
	history := []turnstate.Turn{{MessageID: "m-book", User: "book bus 01 on 1 March"}, {MessageID: "m-old", User: "hello"}}
	withPending := turnstate.State{Turns: history, Pending: pendingBooking()}
	corrected := bookingResult()
	corrected.Data["bus"] = "02"
	tests := []struct {
		name       string
		ack        bool
		msg        whatsapp.Message
		state      turnstate.State
		script     []assistanttest.Step
		wantEvent  string
		wantLLM    int
		wantUser   map[string]string // history text by message id after the turn
		wantNoPend bool
		wantKept   bool // the pending action stays
	}{{
		name:       "revoke of the pending action's message drops it, no reply",
		msg:        otherMsg("m-rev", "revoke", func(m *whatsapp.Message) { m.OriginalID = "m-book" }),
		state:      withPending,
		wantEvent:  assistant.EventRevoked,
		wantUser:   map[string]string{"m-book": "", "m-old": "hello"},
		wantNoPend: true,
	}, {
		name:      "revoke of another message keeps the pending action, no reply",
		msg:       otherMsg("m-rev", "revoke", func(m *whatsapp.Message) { m.OriginalID = "m-old" }),
		state:     withPending,
		wantEvent: assistant.EventRevoked,
		wantUser:  map[string]string{"m-book": "book bus 01 on 1 March", "m-old": ""},
		wantKept:  true,
	}, {
		name:       "edit of the pending action's message is a correction",
		msg:        otherMsg("m-edit", "edit", func(m *whatsapp.Message) { m.OriginalID, m.Text = "m-book", "book bus 02 on 1 March" }),
		state:      withPending,
		script:     []assistanttest.Step{ok(corrected)},
		wantEvent:  "pending",
		wantLLM:    1,
		wantUser:   map[string]string{"m-book": "book bus 02 on 1 March", "m-edit": "book bus 02 on 1 March"},
		wantNoPend: false,
	}, {
		name:      "edit of an older message changes the history only",
		msg:       otherMsg("m-edit", "edit", func(m *whatsapp.Message) { m.OriginalID, m.Text = "m-old", "hi" }),
		state:     withPending,
		wantEvent: assistant.EventEdited,
		wantUser:  map[string]string{"m-old": "hi"},
		wantKept:  true,
	}, {
		name:      "edit in mode ack gets nothing",
		ack:       true,
		msg:       otherMsg("m-edit", "edit", func(m *whatsapp.Message) { m.OriginalID, m.Text = "m-book", "x" }),
		state:     withPending,
		wantEvent: assistant.EventEdited,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tn := newTenant(t)
			if tt.ack {
				tn = newTenant(t, ackMode(""))
			}
			x := assistanttest.NewExtractor(tt.script...)
			out := run(t, assistant.New(x, assistanttest.NewGuard()), input(tn, tt.msg, t0.Add(1), tt.state))
			if out.Event != tt.wantEvent || x.Calls() != tt.wantLLM {
				t.Fatalf("event %q, %d LLM calls; want %q, %d", out.Event, x.Calls(), tt.wantEvent, tt.wantLLM)
			}
			if tt.wantLLM == 0 && len(out.Replies) != 0 {
				t.Errorf("replies %+v, want none", views(out.Replies))
			}
			users := map[string]string{}
			for _, tr := range out.State.Turns {
				users[tr.MessageID] = tr.User
			}
			for id, want := range tt.wantUser {
				if users[id] != want {
					t.Errorf("history of %s = %q, want %q", id, users[id], want)
				}
			}
			if tt.wantNoPend && out.State.Pending != nil {
				t.Errorf("pending action kept: %+v", out.State.Pending)
			}
			if tt.wantKept && (out.State.Pending == nil || out.State.Pending.MessageID != "m-book") {
				t.Errorf("pending action = %+v, want m-book's kept", out.State.Pending)
			}
			if tt.wantLLM > 0 && (!out.Corrected || out.State.Pending == nil || out.State.Pending.MessageID != "m-edit") {
				t.Errorf("correction: corrected %v pending %+v; want the new pending action from m-edit", out.Corrected, out.State.Pending)
			}
		})
	}
}

// TestOtherKindsReachTheModelOrNothing: an order reaches the model as text listing its items
// (acknowledged in mode ack); a call permission answer and an unknown Flow's answer get nothing;
// only an unsupported message gets "send it another way".
func TestOtherKindsReachTheModelOrNothing(t *testing.T) {
	t.Parallel()
	order := otherMsg("m-order", "order", func(m *whatsapp.Message) {
		m.Order = &whatsapp.OrderInfo{CatalogID: "C1", Text: "no onions", Items: []whatsapp.OrderItem{
			{ProductRetailerID: "burger", Quantity: "3", ItemPrice: "25000", Currency: "IDR"},
			{ProductRetailerID: "fries", Quantity: "2", ItemPrice: "12000", Currency: "IDR"}}}
	})
	x := assistanttest.NewExtractor(ok(generalResult("Pesanan diterima")))
	out := run(t, assistant.New(x, assistanttest.NewGuard()), input(newTenant(t), order, t0, turnstate.State{}))
	if x.Calls() != 1 {
		t.Fatalf("order: %d LLM calls, want 1 (event %q)", x.Calls(), out.Event)
	}
	got := requestText(x.Requests()[0])
	for _, want := range []string{"[order]", "3 x burger at 25000 IDR each", "2 x fries at 12000 IDR each", "note: no onions"} {
		if !strings.Contains(got, want) {
			t.Errorf("the model's text %q lacks %q", got, want)
		}
	}
	ack := run(t, assistant.New(assistanttest.NewExtractor(), assistanttest.NewGuard()), input(newTenant(t, ackMode("")), order, t0, turnstate.State{}))
	if ack.Event != assistant.EventAck {
		t.Errorf("order in mode ack: event %q, want %q", ack.Event, assistant.EventAck)
	}
	unsupported := otherMsg("m-uns-ack", "unsupported", func(*whatsapp.Message) {})
	if out := run(t, assistant.New(assistanttest.NewExtractor(), assistanttest.NewGuard()), input(newTenant(t, ackMode("")), unsupported, t0, turnstate.State{})); out.Event != assistant.EventUnsupported {
		t.Errorf("unsupported in mode ack: event %q, want %q", out.Event, assistant.EventUnsupported)
	}
	for _, tc := range []struct {
		msg  whatsapp.Message
		want string
		key  i18n.Key
	}{
		{otherMsg("m-call", "interactive", func(m *whatsapp.Message) {
			m.Reply = &whatsapp.Reply{Kind: "call_permission_reply", ID: "accept"}
		}), assistant.EventIgnored, ""},
		{otherMsg("m-flow", "interactive", func(m *whatsapp.Message) { m.Reply = &whatsapp.Reply{Kind: "nfm_reply", ID: "flow", Title: "Sent"} }), assistant.EventIgnored, ""},
		{otherMsg("m-sys", "system", func(m *whatsapp.Message) {
			m.System = &whatsapp.SystemNotice{Type: "user_changed_number", NewWaID: "628"}
		}), assistant.EventIgnored, ""},
		{otherMsg("m-uns", "unsupported", func(*whatsapp.Message) {}), assistant.EventUnsupported, i18n.UnsupportedMessage},
	} {
		x := assistanttest.NewExtractor()
		out := run(t, assistant.New(x, assistanttest.NewGuard()), input(newTenant(t), tc.msg, t0, turnstate.State{}))
		if out.Event != tc.want || x.Calls() != 0 {
			t.Errorf("%s: event %q, %d LLM calls; want %q, none", tc.msg.ID, out.Event, x.Calls(), tc.want)
		}
		if tc.key != "" && (len(out.Replies) != 1 || out.Replies[0].Key != tc.key) {
			t.Errorf("%s: replies %+v, want %s", tc.msg.ID, views(out.Replies), tc.key)
		}
		if tc.key == "" && len(out.Replies) != 0 {
			t.Errorf("%s: replies %+v, want none", tc.msg.ID, views(out.Replies))
		}
	}
}

// requestText is the text of the request's last user content.
func requestText(r llm.Request) string { return r.Text }
