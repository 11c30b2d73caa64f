package worker_test

import (
	"context"
	"net"
	"net/url"
	"strings"
	"testing"

	"github.com/wapipe/wapipe/internal/actioncall"
	"github.com/wapipe/wapipe/internal/actioncall/actionfake"
	"github.com/wapipe/wapipe/internal/assistant"
	"github.com/wapipe/wapipe/internal/worker"
	"github.com/wapipe/wapipe/tasks"
)

// TestActionToANonPublicAddressIsDeadLettered (issue 22, item 6): with the worker's client as
// outside dev, a tenant whose public-looking action host resolves to loopback (where the fake
// business listens) gets no call at all: the action fails at once (one attempt, one lookup),
// is dead-lettered, and the user is told the localized action error. It is not retried.
func TestActionToANonPublicAddressIsDeadLettered(t *testing.T) {
	t.Parallel()
	resolver := actionfake.NewResolver().Set("ops.example.com", "127.0.0.1")
	s := newStack(t, stackOptions{worker: []func(*worker.Deps){func(d *worker.Deps) {
		d.Caller = actioncall.NewClient(actioncall.WithResolver(resolver)) // not WithDev: staging or prod
	}}})
	u, err := url.Parse(s.ActionURL)
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(u.Host)
	// The fake listens on 127.0.0.1 at that port: a connection would be recorded as a call.
	s.ActionURL = "https://ops.example.com:" + port + u.Path
	tid := s.assistantTenant("acme-ssrf", numberA, "")

	prompt := s.askToConfirm(numberA, contact)
	s.tap(numberA, contact, assistant.ButtonYes, prompt.MessageID)
	if got, want := body(s.waitSendsTo(contact, 2)[1]), assistant.ActionFailed("en"); got != want {
		t.Errorf("told %q, want the localized action error %q", got, want)
	}
	s.settled(tid)

	if n := len(s.Action.Calls()); n != 0 {
		t.Errorf("the business endpoint got %d calls, want 0: no connection to a loopback address", n)
	}
	if n := resolver.Lookups("ops.example.com"); n != 1 {
		t.Errorf("%d lookups, want 1: one attempt, not retried", n)
	}
	dls, err := s.records.ListDeadLetters(context.Background(), true, 10)
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, d := range dls {
		if d.Path == tasks.ProcessActionPath {
			found = true
			if !strings.Contains(d.LastError, "resolves to 127.0.0.1, a loopback address") || d.RetryCount != 0 {
				t.Errorf("dead letter = %+v, want the refused address on the first attempt", d)
			}
		}
	}
	if !found {
		t.Errorf("no dead letter for the action among %d: %+v", len(dls), dls)
	}
	if n := len(s.sendsTo(contact)); n != 2 {
		t.Errorf("%d messages to the contact, want 2 (the prompt, the action error)", n)
	}
}
