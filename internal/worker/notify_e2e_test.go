package worker_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/wapipe/wapipe/internal/actioncall/actionfake"
	"github.com/wapipe/wapipe/internal/assistant"
	"github.com/wapipe/wapipe/internal/graph/graphfake"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/taskqueue"
	"github.com/wapipe/wapipe/internal/tenant"
	"github.com/wapipe/wapipe/internal/testenv"
	"github.com/wapipe/wapipe/tasks"
)

// The notifications after an action (issue 26): a driver (a member) books, confirms, the
// business answers, and the admins the intent's notify names are told, once each, through
// the one send path; graphfake's recorded sends prove how many.

const (
	// driver books: the stack's contact, a member here.
	driver = contact
	// admin is told; owner is not, unless the intent lists owner.
	admin = "6281255501234"
)

// notifyTenant is the assistant's tenant with the driver (Budi, a member), the owner and an
// admin, whose create_booking notifies roles; extra goes into the file (templates).
func (s *stack) notifyTenant(id string, roles []tenant.Role, extra string) string {
	s.t.Helper()
	tid := s.assistantTenant(id, numberA, extra)
	rec, err := store.NewTenants(store.NewDB(s.fs), store.Options{}).Get(context.Background(), tid)
	if err != nil {
		s.t.Fatal(err)
	}
	tn := rec.Tenant
	tn.Members = []tenant.Member{
		{WaID: driver, Role: tenant.RoleMember, Name: "Budi"},
		{WaID: contactOwner, Role: tenant.RoleOwner, Name: "Marie"},
		{WaID: admin, Role: tenant.RoleAdmin, Name: "Sari"},
	}
	tn.Assistant.Intents[0].Notify = roles
	file, err := tenant.Marshal(tn)
	if err != nil {
		s.t.Fatal(err)
	}
	// The token and the action secret stay: apply never overwrites them.
	s.applyTenant(s.ops(), file, "")
	return tid
}

// notifications are the sends to `to` that are notifications (their record's key is a
// notification's; a reply to the member's own message is not).
func (s *stack) notifications(to string) []graphfake.Request {
	var out []graphfake.Request
	for _, r := range s.sendsTo(to) {
		key, _ := r.Body["biz_opaque_callback_data"].(string)
		if rec, err := s.records.GetOutbound(context.Background(), key); err == nil && rec.Source == store.SourceNotification {
			out = append(out, r)
		}
	}
	return out
}

// book runs the driver's booking to the action's end and returns its call.
func (s *stack) book() actionfake.Call {
	s.t.Helper()
	prompt := s.askToConfirm(numberA, driver)
	s.tap(numberA, driver, assistant.ButtonYes, prompt.MessageID)
	s.waitSendsTo(driver, 2) // the prompt, then the action's one message
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	calls, err := s.Action.WaitForCalls(ctx, 1)
	if err != nil {
		s.t.Fatal(err)
	}
	return calls[len(calls)-1]
}

// redeliverAction runs the action's task once more under another name, as an at-least-once
// delivery of the same task would.
func (s *stack) redeliverAction(tid string, c actionfake.Call) {
	s.t.Helper()
	ctx := context.Background()
	tq, err := taskqueue.New(ctx, taskqueue.Config{ProjectID: s.Project, Location: s.Location, EmulatorHost: s.TasksAddr,
		BaseURL: s.WorkerURL, Token: s.InternalToken})
	if err != nil {
		s.t.Fatal(err)
	}
	defer tq.Close()
	body, _ := json.Marshal(tasks.Action{ActionID: c.Request.ActionID, TenantID: tid, ConversationID: c.Request.ConversationID,
		PhoneNumberID: numberA, To: driver, MessageID: "wamid.redelivered", CorrelationID: "redelivery",
		ReceivedAt: time.Now(), Request: json.RawMessage(c.Body)})
	if _, err := tq.Enqueue(ctx, taskqueue.Task{Queue: tasks.TenantQueueID(tid), ID: "redelivered-action",
		Path: tasks.ProcessActionPath, Body: body, CorrelationID: "redelivery"}); err != nil {
		s.t.Fatal(err)
	}
	s.settled(tid)
}

// TestNotifyAdminOfABooking: the admin, who wrote in the last 24 hours, gets exactly one text
// naming the booking, the driver and the data; the owner, whose role is not listed, none. The
// action's task retried after a 5xx, then run again whole, still makes one.
func TestNotifyAdminOfABooking(t *testing.T) {
	t.Parallel()
	s, _ := assistantStack(t)
	tid := s.notifyTenant("acme-notify", []tenant.Role{tenant.RoleAdmin}, "")
	s.text(numberA, admin, "hello", time.Time{})
	s.waitSendsTo(admin, 1) // the assistant's answer: the admin's window is open
	s.Action.Script(actionfake.Answer{Status: 500}, actionfake.Answer{Status: 200, Reply: "Booked B-17"})
	c := s.book()
	var got []graphfake.Request
	testenv.Eventually(t, 45*time.Second, func() bool { got = s.notifications(admin); return len(got) >= 1 }, "the admin was never notified")
	s.settled(tid)
	s.redeliverAction(tid, c)

	if n := len(s.Action.Calls()); n != 2 {
		t.Errorf("%d action calls, want 2 (500, then 200)", n)
	}
	if got = s.notifications(admin); len(got) != 1 {
		t.Fatalf("%d notifications to the admin, want exactly 1", len(got))
	}
	text := body(got[0])
	for _, want := range []string{`New request from "Budi" (member, …5678): create_booking`, "client: Pak Agus", "bus: 01"} {
		if got[0].Body["type"] != "text" || !strings.Contains(text, want) {
			t.Errorf("notification %q (type %v): want a text with %q", text, got[0].Body["type"], want)
		}
	}
	if n := len(s.sendsTo(contactOwner)); n != 0 {
		t.Errorf("%d sends to the owner, want none: notify lists admin only", n)
	}
	if n := len(s.sendsTo(driver)); n != 2 {
		t.Errorf("%d sends to the driver, want 2 (prompt, result): the sender is not notified", n)
	}
	if strings.Contains(s.logs.String(), admin) {
		t.Error("a log line carries the admin's number in clear")
	}
}

// TestNotifyOutsideTheWindow: an admin who has not written in 24 hours gets templates.notify
// with its parameters filled, once; without the template, nothing, and one log line says so.
func TestNotifyOutsideTheWindow(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		extra    string
		template bool
	}{
		{"templates.notify", "templates:\n  notify: {name: new_request, language: en_US}\n", true},
		{"no template: skipped", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, _ := assistantStack(t)
			s.Graph.AddTemplate("new_request")
			tid := s.notifyTenant("acme-notify", []tenant.Role{tenant.RoleAdmin}, tc.extra)
			s.book()
			if !tc.template {
				testenv.Eventually(t, 45*time.Second, func() bool { return s.logs.Count("notification_skipped") > 0 },
					"no log line says the notification was skipped")
				s.settled(tid)
				if n, lines := len(s.sendsTo(admin)), s.logs.Count("notification_skipped"); n != 0 || lines != 1 {
					t.Errorf("%d sends, %d notification_skipped lines; want none sent and one line", n, lines)
				}
				return
			}
			s.waitSendsTo(admin, 1)
			s.settled(tid)
			sends := s.sendsTo(admin)
			if len(sends) != 1 || sends[0].Body["type"] != "template" {
				t.Fatalf("sends %v: want one template", sends)
			}
			var tpl struct {
				Name       string                `json:"name"`
				Language   struct{ Code string } `json:"language"`
				Components []struct {
					Type       string                        `json:"type"`
					Parameters []struct{ Type, Text string } `json:"parameters"`
				} `json:"components"`
			}
			raw, _ := json.Marshal(sends[0].Body["template"])
			if err := json.Unmarshal(raw, &tpl); err != nil || tpl.Name != "new_request" || tpl.Language.Code != "en_US" ||
				len(tpl.Components) != 1 || tpl.Components[0].Type != "body" || len(tpl.Components[0].Parameters) != 3 {
				t.Fatalf("template %s: want new_request (en_US) with a body of three parameters", raw)
			}
			ps := tpl.Components[0].Parameters
			if ps[0].Text != "create_booking" || ps[1].Text != `"Budi" (member, …5678)` || !strings.HasPrefix(ps[2].Text, "client: Pak Agus; date: ") ||
				!strings.HasSuffix(ps[2].Text, "; bus: 01") {
				t.Errorf("parameters %+v: want the intent, the sender, the data on one line", ps)
			}
		})
	}
}

// TestNotifyNotAfterARefusal: a business refusal (4xx) notifies nobody.
func TestNotifyNotAfterARefusal(t *testing.T) {
	t.Parallel()
	s, _ := assistantStack(t)
	tid := s.notifyTenant("acme-notify", []tenant.Role{tenant.RoleOwner, tenant.RoleAdmin}, "")
	s.text(numberA, admin, "hello", time.Time{})
	s.waitSendsTo(admin, 1)
	s.Action.Script(actionfake.Answer{Status: 409, Reply: "Bus 01 is already booked on 1 March"})
	s.book()
	s.settled(tid)
	if n := len(s.sendsTo(admin)); n != 1 {
		t.Errorf("%d sends to the admin, want 1 (the answer to their own message): no notification", n)
	}
	if n := len(s.sendsTo(contactOwner)); n != 0 {
		t.Errorf("%d sends to the owner, want none", n)
	}
}
