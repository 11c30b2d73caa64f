package worker_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/wapipe/wapipe/internal/i18n"
	"github.com/wapipe/wapipe/internal/keyedid"
	"github.com/wapipe/wapipe/internal/operator"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/tenant"
	"github.com/wapipe/wapipe/internal/testenv"
	"github.com/wapipe/wapipe/tasks"
)

// TestRemovedMemberIsAStrangerAgain: a contact who joined a members-only tenant by invite is
// served as a member; once removed (wapipe tenants remove-member), their next message gets the
// onboarding prompt and nothing else.
func TestRemovedMemberIsAStrangerAgain(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{})
	ops := s.ops()
	clinic := s.applyTenant(ops, tenantFile("clinique-nord", numberClinic, "fr", "members",
		"members:\n  - {wa_id: \""+contactOwner+"\", role: owner, name: Agus, language: id}\n"), "EAAtoken-clinic")
	ctx := context.Background()
	reply := func(text string) string { return textOf(s.sendFor(s.say(numberClinic, contact, text))) }

	code, _, err := ops.Invite(ctx, clinic, tenant.RoleMember)
	if err != nil {
		t.Fatal(err)
	}
	if got := reply(code); got != i18n.Text("fr", i18n.WelcomeName, "name", "Marie") {
		t.Fatalf("the code got %q, want the welcome", got)
	}
	if got := reply("un rendez-vous svp"); got != i18n.Text("fr", i18n.Ack) {
		t.Fatalf("the member got %q, want the acknowledgement", got)
	}
	if _, err := operator.RemoveMember(ctx, store.NewTenants(store.NewDB(s.fs), store.Options{}), clinic, contact); err != nil {
		t.Fatal(err)
	}
	if got := reply("encore moi"); got != i18n.Text("fr", i18n.OnboardingPrompt) {
		t.Errorf("the removed member got %q, want the onboarding prompt", got)
	}
	s.idle(tasks.TenantQueueID(clinic))
	if n := len(s.Graph.Sends()); n != 3 {
		t.Errorf("%d sends, want 3 (welcome, acknowledgement, onboarding prompt)", n)
	}
}

// TestDeletedTenantsNumberIsUnrouted: after wapipe tenants delete, a message to the tenant's
// former number is unrouted (no tenant, no default): recorded in its trace, logged, answered by
// nobody. The worker's tenant cache forgets the route within seconds, so the contact writes
// until a message is unrouted, and none after it is answered.
func TestDeletedTenantsNumberIsUnrouted(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{noDefaultToken: true})
	a := s.applyTenant(s.ops(), tenantFile("acme-bus", numberA, "en", "public", ""), "EAAtoken-acme")
	if got := textOf(s.sendFor(s.say(numberA, contact, "hello"))); got != i18n.Text("en", i18n.Ack) {
		t.Fatalf("before the delete: %q, want the acknowledgement", got)
	}
	ctx := context.Background()
	res, err := operator.DeleteTenant(ctx, store.NewTenants(store.NewDB(s.fs), store.Options{}), a)
	if err != nil || len(res.Numbers) != 1 || res.Numbers[0] != numberA {
		t.Fatalf("delete: %+v (%v), want %s freed", res, err, numberA)
	}

	var unrouted string
	i := 0
	testenv.Eventually(t, 60*time.Second, func() bool {
		i++
		id := s.say(numberA, contact, fmt.Sprintf("hello again %d", i))
		var tr store.Trace
		testenv.Eventually(t, 30*time.Second, func() bool {
			tr, err = s.records.GetTrace(ctx, id)
			return err == nil && tr.State == store.TraceFinished
		}, "the inbound task never finished")
		if tr.Outbound[tasks.IdempotencyKey(keyedid.Dev(), id)].Status == "unrouted" {
			unrouted = id
			return true
		}
		return false
	}, "no message to the deleted tenant's number was unrouted")
	s.idle(tasks.TenantQueueID(a))
	sends := len(s.Graph.Sends())
	// A message after the unrouted one is unrouted too, and nothing more is sent.
	id := s.say(numberA, contact, "anyone?")
	testenv.Eventually(t, 30*time.Second, func() bool {
		tr, err := s.records.GetTrace(ctx, id)
		return err == nil && tr.State == store.TraceFinished
	}, "the inbound task never finished")
	s.idle(tasks.TenantQueueID(a))
	tr, _ := s.records.GetTrace(ctx, id)
	if got := tr.Outbound[tasks.IdempotencyKey(keyedid.Dev(), id)].Status; got != "unrouted" {
		t.Errorf("the next message's trace target status %q, want unrouted", got)
	}
	if n := len(s.Graph.Sends()); n != sends {
		t.Errorf("%d sends after the unrouted message %s, want %d", n, unrouted, sends)
	}
	if !s.logs.Has("unrouted_number") {
		t.Error("no unrouted_number log line")
	}
}
