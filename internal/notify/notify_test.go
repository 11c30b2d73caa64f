package notify_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wapipe/wapipe/internal/actioncall"
	"github.com/wapipe/wapipe/internal/contact"
	"github.com/wapipe/wapipe/internal/graph"
	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/internal/notify"
	"github.com/wapipe/wapipe/internal/outbox"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/taskqueue"
	"github.com/wapipe/wapipe/internal/tenant"
	"github.com/wapipe/wapipe/internal/testenv"
	"github.com/wapipe/wapipe/tasks"
)

func TestMain(m *testing.M) { os.Exit(testenv.RunWithFirestore(m)) }

const (
	driver  = "6281200000001" // the member who books
	owner   = "6281200000002"
	admin   = "6281200000003"
	joined  = "6281200000004" // an admin who joined by invite
	member2 = "6281200000005"
)

// tenantFile is a tenant whose create_booking notifies notifyRoles.
func tenantFile(t *testing.T, notifyRoles, extra string) *tenant.Tenant {
	t.Helper()
	tn, err := tenant.Parse([]byte(`id: acme-bus
name: Acme Bus
language: en
audience: members
phone_numbers:
  - {phone_number_id: "111", waba_id: "900"}
members:
  - {wa_id: "` + driver + `", role: member, name: Budi}
  - {wa_id: "` + owner + `", role: owner, name: Marie, language: fr}
  - {wa_id: "` + admin + `", role: admin}
  - {wa_id: "` + member2 + `", role: member}
assistant:
  mode: llm
  action_url: https://ops.example.com/a
  intents:
    - name: create_booking
      description: a new booking
      fields: {client: string, date: date, bus: string, price: integer}
      notify: ` + notifyRoles + `
    - {name: check_schedule, description: who drives when, fields: {date: date}}
` + extra))
	if err != nil {
		t.Fatal(err)
	}
	return tn
}

// world is one test's tenant store (with one admin who joined by invite) and notifier, whose
// tasks are recorded.
type world struct {
	db       *store.DB
	contacts *store.Contacts
	tenants  *store.Tenants
	sends    *store.Sends
	tasks    *recorder
	n        *notify.Notifier
}

func newWorld(t *testing.T, tn *tenant.Tenant) *world {
	t.Helper()
	ctx := context.Background()
	db, _ := testenv.Store(t)
	w := &world{db: db, contacts: store.NewContacts(db, store.Options{}), tenants: store.NewTenants(db, store.Options{}),
		sends: store.NewSends(db, store.Options{}), tasks: &recorder{}}
	if _, err := w.tenants.Apply(ctx, tn, false); err != nil {
		t.Fatal(err)
	}
	if err := w.tenants.CreateInvite(ctx, tn.ID, tenant.InviteCodeHash("WP-AAAAAAAA"), tenant.RoleAdmin, time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, err := w.tenants.RedeemInvite(ctx, tn.ID, tenant.InviteCodeHash("WP-AAAAAAAA"), w.contact(t, tn.ID, contact.Identity{WaID: joined}), "Sari"); err != nil {
		t.Fatal(err)
	}
	h := logging.DevHasher()
	w.n = &notify.Notifier{Members: w.tenants, Hasher: h, Outbox: &outbox.Outbox{Sends: w.sends, Tasks: w.tasks, Hasher: h}}
	return w
}

// contact is tenantID's contact of the person id names, as the worker resolves it when they
// write.
func (w *world) contact(t *testing.T, tenantID string, id contact.Identity) store.Contact {
	t.Helper()
	res, err := w.contacts.Resolve(context.Background(), tenantID, id)
	if err != nil {
		t.Fatalf("resolve the contact: %v", err)
	}
	return res.Contact
}

// recorder records the tasks created, by name, as Cloud Tasks keeps one per name.
type recorder struct {
	mu    sync.Mutex
	tasks map[string]taskqueue.Task
	calls int
}

func (r *recorder) Enqueue(_ context.Context, t taskqueue.Task) (taskqueue.Result, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls++
	if r.tasks == nil {
		r.tasks = map[string]taskqueue.Task{}
	}
	_, existed := r.tasks[t.ID]
	r.tasks[t.ID] = t
	return taskqueue.Result{Existed: existed}, nil
}

func (r *recorder) count() int { r.mu.Lock(); defer r.mu.Unlock(); return len(r.tasks) }

// booked is the action task and request of the driver's booking.
func booked(actionID string) (tasks.Action, actioncall.Request) {
	a := tasks.Action{ActionID: actionID, TenantID: "acme-bus", ConversationID: "c1", PhoneNumberID: "111", To: driver,
		MessageID: "wamid.1", CorrelationID: "corr-1"}
	req := actioncall.Request{ActionID: actionID, TenantID: "acme-bus", Intent: "create_booking",
		Data: map[string]any{"price": 150000.0, "bus": "01", "client": "Pak Agus", "date": "2026-03-01"},
		From: actioncall.From{WaID: driver, Name: "Budi", Role: "member"}}
	return a, req
}

// TestRecipients: the members with the listed roles, from the file and by invite, never the
// sender, each once.
func TestRecipients(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		roles  []tenant.Role
		sender string
		want   []string
	}{
		{"admins only: not the owner", []tenant.Role{tenant.RoleAdmin}, driver, []string{admin, joined}},
		{"owner and admins", []tenant.Role{tenant.RoleOwner, tenant.RoleAdmin}, driver, []string{owner, admin, joined}},
		{"members: not the sender", []tenant.Role{tenant.RoleMember}, driver, []string{member2}},
		{"an admin who books is not told", []tenant.Role{tenant.RoleAdmin}, admin, []string{joined}},
		{"an invited admin who books is not told", []tenant.Role{tenant.RoleAdmin}, joined, []string{admin}},
	}
	tn := tenantFile(t, "[admin]", "")
	w := newWorld(t, tn)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := w.n.Recipients(context.Background(), tn, tt.roles, contact.Identity{WaID: tt.sender})
			if err != nil {
				t.Fatal(err)
			}
			ids := make([]string, len(got))
			for i, m := range got {
				ids[i] = m.WaID
			}
			if diff := cmp.Diff(tt.want, ids); diff != "" {
				t.Errorf("recipients (-want, +got):\n%s", diff)
			}
		})
	}
}

// TestNotifyQueuesOnce: one record and one process_send task per recipient, however often the
// action's success path runs; nothing for an intent without notify.
func TestNotifyQueuesOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tn := tenantFile(t, "[owner, admin]", "templates:\n  notify: {name: new_request, language: en_US}\n")
	w := newWorld(t, tn)
	a, req := booked("act-1")
	for range 3 {
		if err := w.n.Notify(ctx, tn, a, req); err != nil {
			t.Fatal(err)
		}
	}
	if n := w.tasks.count(); n != 3 {
		t.Errorf("%d process_send tasks, want 3 (owner, admin, invited admin)", n)
	}
	for _, to := range []string{owner, admin, joined} {
		key := w.n.Key("act-1", to)
		rec, err := w.sends.GetSend(ctx, key)
		if err != nil {
			t.Fatalf("record of the notification to %s: %v", to, err)
		}
		if rec.Source != store.SourceNotification || rec.To != to || rec.PhoneNumberID != "111" || rec.TenantID != "acme-bus" ||
			rec.State != store.OutboundPending || rec.Fallback == "" || rec.ToHash == "" {
			t.Errorf("record %+v: want a pending notification with its fallback", rec)
		}
		task, ok := w.tasks.tasks[tasks.SendTaskID(key, 0)]
		if !ok || task.Queue != tasks.TenantQueueID("acme-bus") || task.Path != tasks.ProcessSendPath {
			t.Errorf("task of %s = %+v, %v; want process_send on the tenant's queue", to, task, ok)
		}
	}
	// Another intent notifies nobody.
	req.Intent = "check_schedule"
	if err := w.n.Notify(ctx, tn, a, req); err != nil {
		t.Fatal(err)
	}
	if n := w.tasks.count(); n != 3 {
		t.Errorf("%d tasks after an intent without notify, want still 3", n)
	}
}

// TestKey: one key per (action, member), a valid send key, keyed with the server secret.
func TestKey(t *testing.T) {
	t.Parallel()
	n := &notify.Notifier{Hasher: logging.DevHasher()}
	h, err := logging.NewHasher("another-log-hash-key-of-32-bytes!")
	if err != nil {
		t.Fatal(err)
	}
	other := &notify.Notifier{Hasher: h}
	k := n.Key("act-1", admin)
	for _, tt := range []struct {
		name string
		got  string
		same bool
	}{
		{"same action and member", n.Key("act-1", admin), true},
		{"another member", n.Key("act-1", owner), false},
		{"another action", n.Key("act-2", admin), false},
		{"the parts run together differently", n.Key("act-1"+admin[:1], admin[1:]), false},
		{"another server secret", other.Key("act-1", admin), false},
	} {
		if (tt.got == k) != tt.same {
			t.Errorf("%s: key %q vs %q, same = %v", tt.name, tt.got, k, tt.same)
		}
	}
	if !tasks.IsIdempotencyKey(k) {
		t.Errorf("key %q is not a valid send key", k)
	}
}

// TestCompose: the notification names the intent and the sender, in the member's language,
// with the data as the confirmation showed them (written the way that language writes them); the template carries the same in three
// parameters on one line each.
func TestCompose(t *testing.T) {
	t.Parallel()
	tn := tenantFile(t, "[owner]", "templates:\n  notify: {name: new_request, language: en_US}\n")
	in, _ := tn.Intent("create_booking")
	data := map[string]any{"price": 150000.0, "bus": "01", "client": "Pak Agus", "date": "2026-03-01", "extra": "dropped"}
	// The data as the confirmation showed them, in the member's language (English, French).
	lines := "client: Pak Agus\ndate: March 1, 2026\nbus: 01\nprice: 150,000"
	linesFR := "client: Pak Agus\ndate: 1 mars 2026\nbus: 01\nprice: 150\u00a0000"
	param, paramFR := "client: Pak Agus; date: March 1, 2026; bus: 01; price: 150,000", "client: Pak Agus; date: 1 mars 2026; bus: 01; price: 150 000"
	tests := []struct {
		name   string
		member tenant.Member
		from   actioncall.From
		want   string
		params []string
	}{
		{"english, by name, with role and digits", tenant.Member{WaID: admin, Role: tenant.RoleAdmin}, actioncall.From{WaID: driver, Name: "Budi", Role: "member"},
			`New request from "Budi" (member, …0001): create_booking` + "\n\n" + lines,
			[]string{"create_booking", `"Budi" (member, …0001)`, param}},
		{"french member, no name: role and last four digits", tenant.Member{WaID: owner, Role: tenant.RoleOwner, Language: "fr"}, actioncall.From{WaID: driver, Role: "member"},
			"Nouvelle demande de …0001 (member) : create_booking\n\n" + linesFR,
			[]string{"create_booking", "…0001 (member)", paramFR}},
		{"a stranger who calls themself the owner is marked, the name quoted", tenant.Member{WaID: admin}, actioncall.From{WaID: driver, Name: "Pak Agus (owner)"},
			`New request from "Pak Agus (owner)" (not a member, …0001): create_booking` + "\n\n" + lines,
			[]string{"create_booking", `"Pak Agus (owner)" (not a member, …0001)`, param}},
		{"a name with a line break is escaped, one line", tenant.Member{WaID: admin}, actioncall.From{WaID: driver, Name: "Budi\n  Santoso", Role: "member"},
			`New request from "Budi\n  Santoso" (member, …0001): create_booking` + "\n\n" + lines,
			[]string{"create_booking", `"Budi\n Santoso" (member, …0001)`, param}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			msg := notify.Compose(tn, in, tt.member, tt.from, data)
			if msg.Text.Type != "text" || msg.Text.Text == nil || msg.Text.Text.Body != tt.want {
				t.Errorf("text %+v, want %q", msg.Text.Text, tt.want)
			}
			if msg.Fallback == nil || msg.Fallback.Template == nil {
				t.Fatal("no template: the tenant has templates.notify")
			}
			tpl := msg.Fallback.Template
			if tpl.Name != "new_request" || tpl.Language.Code != "en_US" || len(tpl.Components) != 1 || tpl.Components[0].Type != "body" {
				t.Fatalf("template %+v, want new_request (en_US) with a body", tpl)
			}
			var params []string
			for _, p := range tpl.Components[0].Parameters {
				params = append(params, p.Text)
			}
			if diff := cmp.Diff(tt.params, params); diff != "" {
				t.Errorf("template parameters (-want, +got):\n%s", diff)
			}
		})
	}
	// Without templates.notify there is no fallback: outside the window it is skipped.
	plain := tenantFile(t, "[owner]", "")
	if msg := notify.Compose(plain, in, tenant.Member{WaID: admin}, actioncall.From{WaID: driver, Name: "Budi"}, data); msg.Fallback != nil {
		t.Errorf("fallback %+v without templates.notify", msg.Fallback)
	}
}

// TestComposeFitsWhatsApp: a long notification is cut to WhatsApp's 4096 characters, a
// template parameter is never empty.
func TestComposeFitsWhatsApp(t *testing.T) {
	t.Parallel()
	tn := tenantFile(t, "[owner]", "templates:\n  notify: {name: new_request, language: en_US}\n")
	in, _ := tn.Intent("create_booking")
	msg := notify.Compose(tn, in, tenant.Member{WaID: admin}, actioncall.From{WaID: driver, Name: "Budi"}, map[string]any{"client": string(make([]rune, 5000))})
	if n := len([]rune(msg.Text.Text.Body)); n > 4096 {
		t.Errorf("text of %d characters, WhatsApp allows 4096", n)
	}
	empty := notify.Compose(tn, in, tenant.Member{WaID: admin}, actioncall.From{WaID: driver, Name: "Budi"}, nil)
	raw, _ := json.Marshal(empty.Fallback)
	var m graph.Message
	_ = json.Unmarshal(raw, &m)
	if ps := m.Template.Components[0].Parameters; len(ps) != 3 || slices.ContainsFunc(ps, func(p graph.Parameter) bool { return p.Text == "" }) {
		t.Errorf("parameters %+v: want three, none empty", ps)
	}
}

// TestNotifySkipsMembersWhoLeftOnASharedNumber: on a shared number a file member of the tenant
// who redeemed another tenant's invite code there is that tenant's (CONTRACT: shared numbers):
// the first tenant's notifications on that number no longer go to them, unless the other tenant
// removed them since; the others still get theirs, once.
func TestNotifySkipsMembersWhoLeftOnASharedNumber(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tn := tenantFile(t, "[owner, admin]", "")
	tn.PhoneNumbers[0].Shared = true
	w := newWorld(t, tn)
	w.n.Choices = w.tenants
	other, err := tenant.Parse([]byte("id: other-bus\nname: Other Bus\nlanguage: en\naudience: members\nphone_numbers:\n" +
		"  - {phone_number_id: \"111\", waba_id: \"900\", shared: true}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.tenants.Apply(ctx, other, false); err != nil {
		t.Fatalf("apply the second tenant of the shared number: %v", err)
	}
	code := tenant.InviteCodeHash("WP-BBBBBBBB")
	if err := w.tenants.CreateInvite(ctx, other.ID, code, tenant.RoleMember, time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	// The owner, a member by acme-bus's file, picks other-bus on the shared number. The admin did
	// too, and other-bus then removed them: the files route them again, to acme-bus.
	if _, err := w.tenants.RedeemSharedInvite(ctx, other.ID, "111", code, w.contact(t, other.ID, contact.Identity{WaID: owner}), "Marie"); err != nil {
		t.Fatal(err)
	}
	code2 := tenant.InviteCodeHash("WP-CCCCCCCC")
	if err := w.tenants.CreateInvite(ctx, other.ID, code2, tenant.RoleMember, time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, err := w.tenants.RedeemSharedInvite(ctx, other.ID, "111", code2, w.contact(t, other.ID, contact.Identity{WaID: admin}), ""); err != nil {
		t.Fatal(err)
	}
	if _, err := w.tenants.RemoveRuntimeMember(ctx, other.ID, admin); err != nil {
		t.Fatal(err)
	}

	a, req := booked("act-shared")
	for range 2 {
		if err := w.n.Notify(ctx, tn, a, req); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.sends.GetSend(ctx, w.n.Key("act-shared", owner)); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the owner who left acme-bus on the shared number has a notification record (err %v), want none", err)
	}
	for _, to := range []string{admin, joined} {
		if _, err := w.sends.GetSend(ctx, w.n.Key("act-shared", to)); err != nil {
			t.Errorf("notification to %s: %v, want one", to, err)
		}
	}
	if n := w.tasks.count(); n != 2 {
		t.Errorf("%d process_send tasks, want 2 (admin, invited admin)", n)
	}
}
