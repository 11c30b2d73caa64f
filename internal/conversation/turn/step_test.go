package turn

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wapipe/wapipe/internal/assistant"
	"github.com/wapipe/wapipe/internal/contact"
	"github.com/wapipe/wapipe/internal/conversation"
	"github.com/wapipe/wapipe/internal/events"
	"github.com/wapipe/wapipe/internal/members"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/tenant"
	"github.com/wapipe/wapipe/internal/turnstate"
	"github.com/wapipe/wapipe/internal/whatsapp"
)

// world is every dependency of a turn at once, recording the steps in the order they ran.
type world struct {
	mu        sync.Mutex
	steps     []string
	eventsErr error
	tenant    *tenant.Tenant
	prompt    store.Message
	records   map[string]store.OutboundRecord
	input     assistant.Input
}

func (w *world) step(name string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.steps = append(w.steps, name)
}

func (w *world) ApplyMessage(context.Context, string, string, whatsapp.Message) (events.Outcome, error) {
	w.step("events")
	return events.Outcome{Answer: true}, w.eventsErr
}

func (w *world) Tenant(context.Context, string) (store.TenantRecord, error) {
	w.step("tenant")
	if w.tenant == nil {
		return store.TenantRecord{}, store.ErrNotFound
	}
	return store.TenantRecord{Tenant: w.tenant}, nil
}

func (w *world) RuntimeMember(context.Context, string, store.Contact) (tenant.Member, bool, error) {
	w.step("members")
	return tenant.Member{}, false, nil
}

func (w *world) RedeemInvite(context.Context, string, string, store.Contact, string) (tenant.Member, error) {
	return tenant.Member{}, store.ErrInviteInvalid
}

func (w *world) GetMessage(context.Context, string, string) (store.Message, error) {
	w.step("prompt")
	return w.prompt, nil
}

func (w *world) GetOutbound(_ context.Context, key string) (store.OutboundRecord, error) {
	w.step("record")
	if rec, ok := w.records[key]; ok {
		return rec, nil
	}
	return store.OutboundRecord{}, store.ErrNotFound
}

func (w *world) Turn(_ context.Context, in assistant.Input) (assistant.Outcome, error) {
	w.step("assistant")
	w.input = in
	return assistant.Outcome{State: in.State, Event: "answered"}, nil
}

func (w *world) turner() *Turner {
	return &Turner{Tenants: w, Events: w, Gate: members.Gate{Store: w}, Messages: w, Records: w, Assistant: w}
}

// pending is a text from a known contact of conversation cv_1.
func pending(m whatsapp.Message) conversation.Pending {
	m.ID, m.PhoneNumberID = "wamid.IN", "106540352242922"
	return conversation.Pending{ConversationID: "cv_1", Inbound: conversation.Inbound{
		TenantID: "acme", PhoneNumberID: m.PhoneNumberID, ConversationID: "cv_1", ContactID: "ct_1",
		Person: contact.Identity{WaID: "6281234567890"}, MessageID: m.ID, Message: m, ReceivedAt: time.Unix(1700000000, 0),
	}}
}

// TestTurnSteps: a turn applies the message's events first, then reads the tenant, then asks
// membership, and only then the assistant; a step that ends the turn leaves the later ones out.
func TestTurnSteps(t *testing.T) {
	t.Parallel()
	public := &tenant.Tenant{ID: "acme", Audience: tenant.AudiencePublic}
	text := whatsapp.Message{Type: "text", Text: "hello"}
	tests := []struct {
		name      string
		world     *world
		wantSteps []string
		wantEvent string
		wantErr   bool
	}{
		{"an ordinary message reaches the assistant", &world{tenant: public},
			[]string{"events", "tenant", "members", "assistant"}, "answered", false},
		{"events that fail end the turn before anything else", &world{tenant: public, eventsErr: errors.New("down")},
			[]string{"events"}, "", true},
		{"a deleted tenant answers nothing", &world{},
			[]string{"events", "tenant"}, "tenant_not_found", false},
		{"a stranger to a members-only tenant gets the onboarding prompt, not the assistant",
			&world{tenant: &tenant.Tenant{ID: "acme", Audience: tenant.AudienceMembers}},
			[]string{"events", "tenant", "members"}, "onboarding_prompt", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := tc.world
			out, err := w.turner().turnFunc(true)(context.Background(), pending(text), turnstate.State{})
			if (err != nil) != tc.wantErr {
				t.Fatalf("turn error = %v, want error %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.wantSteps, w.steps); diff != "" {
				t.Errorf("steps (-want, +got):\n%s", diff)
			}
			if out.Event != tc.wantEvent {
				t.Errorf("outcome event = %q, want %q", out.Event, tc.wantEvent)
			}
			if slices.Contains(w.steps, "assistant") && (!w.input.LastAttempt || w.input.ContactID != "ct_1") {
				t.Errorf("assistant input: last attempt %v, contact %q; want true, ct_1", w.input.LastAttempt, w.input.ContactID)
			}
		})
	}
}

// TestTurnStaleButton: a confirmation tap answers the pending action only when its context is
// the prompt's Graph id, as the turn's effects recorded it or, for a prompt sent later, as its
// record does.
func TestTurnStaleButton(t *testing.T) {
	t.Parallel()
	st := turnstate.State{Pending: &turnstate.PendingAction{MessageID: "wamid.ASK", PromptIndex: 1}}
	tests := []struct {
		name      string
		contextID string
		replies   []store.Reply
		records   map[string]store.OutboundRecord
		wantStale bool
	}{
		{"a tap on the prompt", "wamid.SENT", []store.Reply{{Index: 0, GraphMessageID: "wamid.OTHER"}, {Index: 1, GraphMessageID: "wamid.SENT"}}, nil, false},
		{"a tap on an older prompt", "wamid.OLD", []store.Reply{{Index: 1, GraphMessageID: "wamid.SENT"}}, nil, true},
		{"a tap without a context", "", []store.Reply{{Index: 1, GraphMessageID: "wamid.SENT"}}, nil, true},
		{"a tap on a prompt sent after its turn", "wamid.LATE", []store.Reply{{Index: 1, IdempotencyKey: "k1"}},
			map[string]store.OutboundRecord{"k1": {GraphMessageID: "wamid.LATE"}}, false},
		{"a tap on a prompt never sent", "wamid.LATE", []store.Reply{{Index: 1, IdempotencyKey: "k1"}}, nil, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := &world{tenant: &tenant.Tenant{ID: "acme", Audience: tenant.AudiencePublic},
				prompt: store.Message{Replies: tc.replies}, records: tc.records}
			tap := whatsapp.Message{Type: "interactive", ContextID: tc.contextID,
				Reply: &whatsapp.Reply{Kind: "button_reply", ID: assistant.ButtonYes, Title: "Yes"}}
			if _, err := w.turner().turnFunc(false)(context.Background(), pending(tap), st); err != nil {
				t.Fatalf("turn: %v", err)
			}
			if w.input.StaleButton != tc.wantStale {
				t.Errorf("StaleButton = %v, want %v (steps %v)", w.input.StaleButton, tc.wantStale, w.steps)
			}
		})
	}
}
