package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/wapipe/wapipe/internal/keyedid"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/testenv"
	"github.com/wapipe/wapipe/tasks"
)

// TestTriggerToNumber: --to-number names the business number of the payload, and the reply goes
// out from that number; a number that is not digits is a usage error.
func TestTriggerToNumber(t *testing.T) {
	t.Parallel()
	s := newStack(t, testenv.FastQueues(t))
	const second = "106540352242923" // the sample tenant's second number
	out := mustCLI(t, "trigger", "--url", s.WebhookURL, "--secret", s.AppSecret, "--to-number", second, "--text", "hello")
	if !strings.Contains(out, `200 {"status":"accepted"}`) {
		t.Fatalf("trigger --to-number:\n%s", out)
	}
	sends := s.waitSends(t, 1)
	if sends[0].PhoneNumberID != second {
		t.Errorf("the reply went out from %q, want %s", sends[0].PhoneNumberID, second)
	}
	if _, _, err := cli(t, "trigger", "--url", s.WebhookURL, "--to-number", "+1555"); exitCode(err) != 2 || !strings.Contains(err.Error(), "digits") {
		t.Errorf("trigger --to-number +1555: %v, want a usage error about digits", err)
	}
}

// TestTenantsListHeader: the list starts with a header row naming its columns.
func TestTenantsListHeader(t *testing.T) {
	t.Parallel()
	s := newStack(t, nil)
	out := mustCLI(t, s.conn("tenants", "list")...)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || strings.Join(strings.Fields(lines[0]), " ") != "ID AUTH NUMBERS MEMBERS ASSISTANT NAME" ||
		strings.Join(strings.Fields(lines[1])[:5], " ") != "sunrise-bus ok 2 4 llm" {
		t.Errorf("tenants list:\n%s\nwant a header row, then the sample tenant", out)
	}
}

// TestHealthRoundsFloats: the report's figures are rounded, keys kept in the worker's order.
func TestHealthRoundsFloats(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"status":"ok","reason":"fine","outbound":{"latency_p95_ms":242.49999999999997,"success_rate":0.99671,"sent":12}}`)
	}))
	defer srv.Close()
	out := mustCLI(t, "health", "--worker-url", srv.URL, "--token", "tok")
	for _, want := range []string{`"latency_p95_ms": 242.5,`, `"success_rate": 0.997,`, `"sent": 12`} {
		if !strings.Contains(out, want) {
			t.Errorf("health output lacks %s:\n%s", want, out)
		}
	}
	if strings.Index(out, `"status"`) > strings.Index(out, `"outbound"`) {
		t.Errorf("health output reordered the keys:\n%s", out)
	}
}

// TestInspectActionAndDeadLetter runs the sample booking through the stack (book, then "yes":
// the action is called and its result sent) and inspects what other commands print: the act_…
// id shows the action and its reply's record; the "yes" message shows the action's reply as a
// reply of its event; a dead letter's id shows the dead letter and its event.
func TestInspectActionAndDeadLetter(t *testing.T) {
	t.Parallel()
	s := newStack(t, testenv.FastQueues(t))
	ctx := context.Background()
	mustCLI(t, "trigger", "--url", s.WebhookURL, "--secret", s.AppSecret, "--text", "book bus 01 for Pak Agus on 1 March, 15 million")
	s.waitSends(t, 1)
	out := mustCLI(t, "trigger", "--url", s.WebhookURL, "--secret", s.AppSecret, "--text", "yes")
	yesEvent := field(t, out, "type text", "inbound_event_id")

	var action store.ActionRecord
	testenv.Eventually(t, 30*time.Second, func() bool {
		docs, err := s.fs.Collection(store.Actions).Documents(ctx).GetAll()
		if err != nil || len(docs) != 1 || docs[0].DataTo(&action) != nil || !action.Final() {
			return false
		}
		rec, err := s.records.GetOutbound(ctx, tasks.ActionReplyKey(keyedid.Dev(), action.ActionID))
		return err == nil && rec.State == store.OutboundSent
	}, "the booking was never done and answered")
	s.idle(t)
	replyKey := action.ReplyKey
	if replyKey == "" {
		replyKey = tasks.ActionReplyKey(keyedid.Dev(), action.ActionID)
	}

	text := mustCLI(t, s.conn("inspect", action.ActionID)...)
	for _, want := range []string{"action " + action.ActionID + " (actions): " + action.State, "reply " + replyKey + " (outbound_messages): sent",
		"inbound_event_id: " + yesEvent, "dedupe marker (inbound_events): received"} {
		if !strings.Contains(text, want) {
			t.Errorf("inspect %s: no %q in:\n%s", action.ActionID, want, text)
		}
	}
	text = mustCLI(t, s.conn("inspect", yesEvent)...)
	for _, want := range []string{"reply " + replyKey + " of this event (outbound_messages): sent",
		"outbound task " + s.QueuePath(tasks.TenantQueueID(s.Tenants[0])) + "/tasks/"} {
		if !strings.Contains(text, want) {
			t.Errorf("inspect %s: no %q in:\n%s", yesEvent, want, text)
		}
	}

	dlID, err := s.records.PutDeadLetter(ctx, store.DeadLetter{Queue: tasks.InboundQueueID, TaskName: "t-1", Path: tasks.ProcessInboundPath,
		Body: `{}`, LastError: "boom", InboundEventID: yesEvent})
	if err != nil {
		t.Fatal(err)
	}
	text = mustCLI(t, s.conn("inspect", dlID)...)
	for _, want := range []string{"inbound_event_id: " + yesEvent, "dead letter " + dlID + ": "} {
		if !strings.Contains(text, want) {
			t.Errorf("inspect %s: no %q in:\n%s", dlID, want, text)
		}
	}
	if _, _, err := cli(t, s.conn("inspect", "act_nothing")...); err == nil || !strings.Contains(err.Error(), "no action record") {
		t.Errorf("inspect of an unknown action: %v, want no action record", err)
	}
}

func TestNamesStack(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want bool
	}{
		{[]string{"tenants", "list"}, false},
		{[]string{"tenants", "list", "--project", "p"}, true},
		{[]string{"inspect", "x", "-project=p"}, true},
		{[]string{"tasks", "list", "--tasks-emulator", "127.0.0.1:1"}, true},
		{[]string{"trigger", "--text", "project"}, false},
	} {
		if got := namesStack(tc.args); got != tc.want {
			t.Errorf("namesStack(%q) = %v, want %v", tc.args, got, tc.want)
		}
	}
}
