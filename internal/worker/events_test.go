package worker_test

import (
	"context"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/wapipe/wapipe/internal/events"
	"github.com/wapipe/wapipe/internal/i18n"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/whatsapp"
	"github.com/wapipe/wapipe/internal/worker"
	"github.com/wapipe/wapipe/tasks"
)

// fakeEvents records the events the worker applies and answers a message as the real Applier
// does for the kinds these tests use; err fails every call.
type fakeEvents struct {
	mu      sync.Mutex
	applied []string
	err     error
}

func (f *fakeEvents) Apply(_ context.Context, tenantID string, ev whatsapp.Event) (events.Outcome, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return events.Outcome{}, f.err
	}
	f.applied = append(f.applied, ev.Field+" tenant="+tenantID)
	return events.Outcome{Event: ev.Field}, nil
}

func (f *fakeEvents) ApplyMessage(_ context.Context, tenantID, conversationID string, m whatsapp.Message) (events.Outcome, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return events.Outcome{}, f.err
	}
	f.applied = append(f.applied, m.Type+" tenant="+tenantID+" conversation="+conversationID)
	switch m.Type {
	case "revoke":
		return events.Outcome{Event: events.EventRevoked}, nil
	case "unsupported":
		return events.Outcome{Reply: i18n.UnsupportedMessage, Event: events.EventUnsupported}, nil
	}
	return events.Outcome{Answer: true, Event: events.EventMessage}, nil
}

func (f *fakeEvents) Applied() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.applied...)
}

func withEvents(hs *harness, ev *fakeEvents) {
	hs.deps = append(hs.deps, func(d *worker.Deps) { d.Events = ev })
}

// TestInboundAppliesOtherFields: process_inbound applies each change of a field other than
// messages, for the tenant its number routes to ("" for the default path and for a change with
// no number), creates no outbound task for it, and still leaves its trace.
func TestInboundAppliesOtherFields(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		payload []byte
		want    []string
	}{
		{"account update", whatsapp.SampleAccountUpdate(whatsapp.SampleOptions{}, "ACCOUNT_RESTRICTION"), []string{"account_update tenant="}},
		{"preference", whatsapp.SamplePreference(whatsapp.SampleOptions{}, "stop"), []string{"user_preferences tenant="}},
		{"echo", whatsapp.SampleEcho(whatsapp.SampleOptions{}, "see you"), []string{"smb_message_echoes tenant="}},
		{"calls", whatsapp.SampleCall(whatsapp.SampleOptions{}), []string{"calls tenant="}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			hs := newHarness(t)
			ev := &fakeEvents{}
			withEvents(hs, ev)
			got := hs.run(tasks.ProcessInboundPath, inboundTask("evt-1", tc.payload), attempt{})
			hs.want(got, 200, map[string]any{"status": "ok", "messages": 0.0, "statuses": 0.0, "tasks_created": 0.0,
				"tasks_existed": 0.0, "events": 1.0}, "inbound_fanout")
			if diff := cmp.Diff(tc.want, ev.Applied()); diff != "" {
				t.Errorf("events applied (-want, +got):\n%s", diff)
			}
			if n := len(hs.queue.Tasks()); n != 0 {
				t.Errorf("%d tasks created for an event, want none", n)
			}
			if diff := cmp.Diff([]string{"trace evt-1 " + store.TraceFinished}, hs.records.Traces()); diff != "" {
				t.Errorf("trace (-want, +got):\n%s", diff)
			}
		})
	}
}

// TestInboundEventFailsRetries: an event that could not be applied fails the delivery (every
// effect is idempotent, the retry applies it again), with its trace.
func TestInboundEventFailsRetries(t *testing.T) {
	t.Parallel()
	hs := newHarness(t)
	withEvents(hs, &fakeEvents{err: errDown})
	got := hs.run(tasks.ProcessInboundPath, inboundTask("evt-1", whatsapp.SampleAccountUpdate(whatsapp.SampleOptions{}, "PARTNER_REMOVED")), attempt{})
	hs.want(got, 503, retryBody("temporary_failure"), "task_retry")
	if diff := cmp.Diff([]string{"trace evt-1 " + store.TraceRetrying}, hs.records.Traces()); diff != "" {
		t.Errorf("trace (-want, +got):\n%s", diff)
	}
}

// TestDefaultPathEvents: on the default path a message's event is applied first; what is
// recorded only is not answered (the send skipped), an unsupported message gets the localized
// "send it another way", an ordinary one the responder's answer; an error is retried.
func TestDefaultPathEvents(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		typ   string
		err   error
		code  int
		texts []string
	}{
		{typ: "revoke", code: 200},
		{typ: "unsupported", code: 200, texts: []string{i18n.Text(i18n.Default, i18n.UnsupportedMessage)}},
		{typ: "text", code: 200, texts: []string{"thanks"}},
		{typ: "revoke", err: errDown, code: 503},
	} {
		t.Run(tc.typ, func(t *testing.T) {
			t.Parallel()
			hs := newHarness(t)
			ev := &fakeEvents{err: tc.err}
			withEvents(hs, ev)
			out := outboundTask("wamid.in1")
			out.Message.Type = tc.typ
			got := hs.run(tasks.ProcessOutboundPath, out, attempt{})
			if got.Code != tc.code {
				t.Errorf("status %d (%v), want %d", got.Code, got.Body, tc.code)
			}
			if diff := cmp.Diff(tc.texts, hs.sender.Texts()); diff != "" {
				t.Errorf("sent (-want, +got):\n%s", diff)
			}
			if tc.err == nil {
				if diff := cmp.Diff([]string{tc.typ + " tenant= conversation="}, ev.Applied()); diff != "" {
					t.Errorf("events applied (-want, +got):\n%s", diff)
				}
			}
		})
	}
}
