package worker_test

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	wacontact "github.com/wapipe/wapipe/internal/contact"
	"github.com/wapipe/wapipe/internal/delivery"
	"github.com/wapipe/wapipe/internal/graph/graphfake"
	"github.com/wapipe/wapipe/internal/i18n"
	"github.com/wapipe/wapipe/internal/keyedid"
	"github.com/wapipe/wapipe/internal/operator"
	"github.com/wapipe/wapipe/internal/secrets"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/taskqueue"
	"github.com/wapipe/wapipe/internal/tenant"
	"github.com/wapipe/wapipe/internal/tenantcache"
	"github.com/wapipe/wapipe/internal/testenv"
	"github.com/wapipe/wapipe/internal/whatsapp"
	"github.com/wapipe/wapipe/internal/worker"
	"github.com/wapipe/wapipe/tasks"
)

// The end-to-end tenant tests: the whole pipeline (webhook, Cloud Tasks emulator, worker, the
// Firestore emulator, the fake Graph API), with tenants applied as `wapipe tenants apply` and
// `set-token --no-verify` do.

// Business numbers of the tests' tenants; the sample webhooks' number is owned by no one.
const (
	numberA       = "200000000000001"
	numberB       = "200000000000002"
	numberClinic  = "200000000000003"
	numberUnknown = "200000000000999"
	contact       = "33612345678"
	contactOwner  = "6281234567890"
)

// tenantFile is a minimal tenant file.
func tenantFile(id, number, lang, audience, extra string) []byte {
	return []byte(fmt.Sprintf("id: %s\nname: %s\nlanguage: %s\naudience: %s\nphone_numbers:\n  - {phone_number_id: %q, waba_id: \"300000000000001\"}\n%s",
		id, id, lang, audience, number, extra))
}

// ops is the operator's tenant commands against the stack.
func (s *stack) ops() *operator.Tenants {
	s.t.Helper()
	ctx := context.Background()
	admin, err := taskqueue.NewAdmin(ctx, s.Project, s.Location, s.TasksAddr)
	if err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(func() { admin.Close() })
	keeper, err := secrets.New(ctx, secrets.Config{Dev: true})
	if err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(func() { keeper.Close() })
	// The tenant queues retry as fast as the test queues.
	qf := testenv.FastQueues(s.t)
	for id, q := range qf.Templates {
		q.RetryConfig.MinBackoff.Duration, q.RetryConfig.MaxBackoff.Duration, q.RetryConfig.MaxAttempts = 50*time.Millisecond, 200*time.Millisecond, 5
		qf.Templates[id] = q
	}
	return &operator.Tenants{Store: store.NewTenants(store.NewDB(s.fs), store.Options{}), Queues: admin, QueueFile: qf, Sealer: keeper, Dev: true}
}

// applyTenant applies file and, unless token is empty, sets the tenant's token, which the fake
// Graph API then accepts.
func (s *stack) applyTenant(ops *operator.Tenants, file []byte, token string) string {
	s.t.Helper()
	ctx := context.Background()
	rep, err := ops.Apply(ctx, file, false)
	if err != nil {
		s.t.Fatalf("apply: %v", err)
	}
	if token != "" {
		if _, err := ops.SetToken(ctx, rep.ID, token, false); err != nil {
			s.t.Fatalf("set-token: %v", err)
		}
		s.Graph.AcceptToken(token)
	}
	return rep.ID
}

// conversationOf is the id of the conversation of the person who writes from phone to
// tenantID's number; ok is false while the tenant has no contact of theirs.
func (s *stack) conversationOf(tenantID, number, phone string) (string, bool) {
	s.t.Helper()
	convs := store.NewConversationStore(store.NewDB(s.fs), store.Options{})
	id, ok, err := convs.ConversationOf(context.Background(), tenantID, number, wacontact.Identity{WaID: phone})
	if err != nil {
		s.t.Fatalf("conversation of the contact: %v", err)
	}
	return id, ok
}

// mustConversationOf is conversationOf for a contact the tenant knows.
func (s *stack) mustConversationOf(tenantID, number, phone string) string {
	s.t.Helper()
	id, ok := s.conversationOf(tenantID, number, phone)
	if !ok {
		s.t.Fatalf("tenant %s has no contact of the phone", tenantID)
	}
	return id
}

// sendFor waits for the send answering the inbound message id.
func (s *stack) sendFor(messageID string) graphfake.Request {
	s.t.Helper()
	key := tasks.IdempotencyKey(keyedid.Dev(), messageID)
	var got graphfake.Request
	testenv.Eventually(s.t, 20*time.Second, func() bool {
		for _, r := range s.Graph.Sends() {
			if r.Body["biz_opaque_callback_data"] == key {
				got = r
				return true
			}
		}
		return false
	}, "no reply to %s", messageID)
	return got
}

func textOf(r graphfake.Request) string {
	if t, ok := r.Body["text"].(map[string]any); ok {
		s, _ := t["body"].(string)
		return s
	}
	return ""
}

// say delivers a text from `from` to number and returns the message id.
func (s *stack) say(number, from, text string) string {
	s.t.Helper()
	payload := whatsapp.SampleText(whatsapp.SampleOptions{PhoneNumberID: number, From: from, ContactName: "Marie"}, text)
	s.deliver(payload)
	return messageIDs(s.t, payload)[0]
}

// checkPrivacy fails when a log line carries a token or a contact's number in clear.
func checkPrivacy(t *testing.T, logs string, secrets ...string) {
	t.Helper()
	for _, sec := range append(secrets, contact, contactOwner, whatsapp.DefaultSampleOptions.From) {
		if strings.Contains(logs, sec) {
			for _, line := range strings.Split(logs, "\n") {
				if strings.Contains(line, sec) {
					t.Errorf("a log line carries %q:\n%s", sec[:4]+"…", line)
					break
				}
			}
		}
	}
}

func TestTenantsRepliesCarryTheirTokenNumberAndText(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{})
	ops := s.ops()
	a := s.applyTenant(ops, tenantFile("acme-bus", numberA, "en", "public", "assistant: {mode: ack, ack_text: \"Acme got it.\"}\n"), "EAAtoken-acme")
	b := s.applyTenant(ops, tenantFile("bali-tours", numberB, "id", "public", ""), "EAAtoken-bali")

	idA, idB, idU := s.say(numberA, contact, "hello"), s.say(numberB, contact, "halo"), s.say(numberUnknown, contact, "hi")
	for _, tc := range []struct {
		id, number, token, text string
	}{
		{idA, numberA, "EAAtoken-acme", "Acme got it."},
		{idB, numberB, "EAAtoken-bali", i18n.Text("id", i18n.Ack)},
		// The unknown number: the single-tenant default, WHATSAPP_ACCESS_TOKEN and REPLY_ACK_TEXT.
		{idU, numberUnknown, "dev-access-token", ""},
	} {
		r := s.sendFor(tc.id)
		if r.Token != tc.token || r.PhoneNumberID != tc.number || (tc.text != "" && textOf(r) != tc.text) {
			t.Errorf("reply to %s: token %s…, number %s, text %q; want %s…, %s, %q", tc.number, r.Token[:8], r.PhoneNumberID, textOf(r), tc.token[:8], tc.number, tc.text)
		}
	}
	s.idle(tasks.TenantQueueID(a), tasks.TenantQueueID(b))
	if n := len(s.Graph.Sends()); n != 3 {
		t.Errorf("%d sends, want 3", n)
	}
	// Each reply went through its tenant's queue, and the records name the tenant.
	for id, want := range map[string]string{idA: a, idB: b, idU: ""} {
		if rec := s.outbound(id); rec.TenantID != want || rec.State != store.OutboundSent {
			t.Errorf("record of the message to tenant %q: tenant %q, state %s", want, rec.TenantID, rec.State)
		}
	}
	tr, err := s.records.GetTrace(context.Background(), idA)
	if err != nil || tr.Outbound[tasks.IdempotencyKey(keyedid.Dev(), idA)].TenantID != a || !strings.Contains(tr.Outbound[tasks.IdempotencyKey(keyedid.Dev(), idA)].TaskName, "/queues/"+tasks.TenantQueueID(a)+"/") {
		t.Errorf("trace of tenant A's message: %+v, %v", tr.Outbound, err)
	}
	checkPrivacy(t, s.logs.String(), "EAAtoken-acme", "EAAtoken-bali", "dev-access-token")
}

func TestUnknownNumberWithoutDefaultIsUnrouted(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{noDefaultToken: true})
	s.applyTenant(s.ops(), tenantFile("acme-bus", numberA, "en", "public", ""), "EAAtoken-acme")
	id := s.say(numberUnknown, contact, "hi")
	ctx := context.Background()
	testenv.Eventually(t, 10*time.Second, func() bool {
		tr, err := s.records.GetTrace(ctx, id)
		return err == nil && tr.State == store.TraceFinished
	}, "the inbound task never finished")
	s.idle()
	tr, _ := s.records.GetTrace(ctx, id)
	if got := tr.Outbound[tasks.IdempotencyKey(keyedid.Dev(), id)]; got.Status != "unrouted" || got.TaskName != "" {
		t.Errorf("trace target %+v, want unrouted with no task", got)
	}
	if n := len(s.Graph.Requests()); n != 0 {
		t.Errorf("%d Graph API calls for an unrouted number, want 0", n)
	}
	if !s.logs.Has("unrouted_number") || !regexp.MustCompile(`"severity":"ERROR"[^\n]*"event":"unrouted_number"`).MatchString(s.logs.String()) {
		t.Error("no unrouted_number line at ERROR")
	}
	// A status to the unknown number is recorded too, and sends nothing.
	s.deliver(whatsapp.SampleStatus(whatsapp.SampleOptions{PhoneNumberID: numberUnknown, MessageID: "wamid.other-system"}, "delivered"))
	s.idle()
	if n := len(s.Graph.Requests()); n != 0 {
		t.Errorf("%d Graph API calls after a status, want 0", n)
	}
	checkPrivacy(t, s.logs.String(), "EAAtoken-acme")
}

func TestStatusesRecordTheirTenant(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{})
	a := s.applyTenant(s.ops(), tenantFile("acme-bus", numberA, "en", "public", ""), "EAAtoken-acme")
	id := s.say(numberA, contact, "hello")
	r := s.sendFor(id)
	s.deliver(whatsapp.SampleStatus(whatsapp.SampleOptions{PhoneNumberID: numberA, From: contact, MessageID: r.MessageID,
		BizOpaqueCallbackData: tasks.IdempotencyKey(keyedid.Dev(), id)}, "delivered"))
	s.idle(tasks.TenantQueueID(a))
	sts, err := s.records.ListStatusesFor(context.Background(), r.MessageID)
	if err != nil || len(sts) != 1 || sts[0].TenantID != a {
		t.Fatalf("statuses %+v (%v), want one for tenant %s", sts, err, a)
	}
	if n := len(s.Graph.Sends()); n != 1 {
		t.Errorf("%d sends, want 1: a status creates no task", n)
	}
}

func TestMembersOnboardingEndToEnd(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{})
	ops := s.ops()
	clinic := s.applyTenant(ops, tenantFile("clinique-sud", numberClinic, "fr", "members",
		"members:\n  - {wa_id: \""+contactOwner+"\", role: owner, name: Agus, language: id}\n"), "EAAtoken-clinic")
	ctx := context.Background()
	reply := func(text string) string { return textOf(s.sendFor(s.say(numberClinic, contact, text))) }

	// A stranger gets the onboarding prompt, in French.
	if got := reply("bonjour"); got != i18n.Text("fr", i18n.OnboardingPrompt) {
		t.Fatalf("stranger got %q, want the French onboarding prompt", got)
	}
	// A code nobody issued: "invalid code", still a stranger.
	if got := reply("WP-ZZZZZZZZ"); got != i18n.Text("fr", i18n.InvalidCode) {
		t.Errorf("unknown code got %q, want invalid code", got)
	}
	// An expired code is refused.
	expired, _ := tenant.NewInviteCode()
	if err := store.NewTenants(store.NewDB(s.fs), store.Options{}).CreateInvite(ctx, clinic, tenant.InviteCodeHash(expired),
		tenant.RoleMember, time.Now().Add(-time.Minute)); err != nil {
		t.Fatal(err)
	}
	if got := reply(expired); got != i18n.Text("fr", i18n.InvalidCode) {
		t.Errorf("expired code got %q, want invalid code", got)
	}
	// A valid code, typed loosely: welcome by profile name, then served as a member.
	code, _, err := ops.Invite(ctx, clinic, tenant.RoleMember)
	if err != nil {
		t.Fatal(err)
	}
	if got := reply("  " + strings.ToLower(code) + " "); got != i18n.Text("fr", i18n.WelcomeName, "name", "Marie") {
		t.Errorf("valid code got %q, want the welcome", got)
	}
	if got := reply("j'ai besoin d'un rendez-vous"); got != i18n.Text("fr", i18n.Ack) {
		t.Errorf("new member got %q, want the acknowledgement", got)
	}
	// The same code again, from someone else: used, refused.
	other := textOf(s.sendFor(func() string {
		p := whatsapp.SampleText(whatsapp.SampleOptions{PhoneNumberID: numberClinic, From: "33698765432"}, code)
		s.deliver(p)
		return messageIDs(t, p)[0]
	}()))
	if other != i18n.Text("fr", i18n.InvalidCode) {
		t.Errorf("reused code got %q, want invalid code", other)
	}
	// A file member is served in their own language.
	if got := textOf(s.sendFor(s.say(numberClinic, contactOwner, "halo"))); got != i18n.Text("id", i18n.Ack) {
		t.Errorf("file member got %q, want the Indonesian acknowledgement", got)
	}
	s.idle(tasks.TenantQueueID(clinic))
	if n := len(s.Graph.Sends()); n != 7 {
		t.Errorf("%d sends, want 7 (one per message)", n)
	}
	checkPrivacy(t, s.logs.String(), "EAAtoken-clinic", code, expired, "33698765432")
}

func TestApplySeenWithinSeconds(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{})
	ops := s.ops()
	// The contact says hello until the apply is seen, as fast as the replies come (hundreds in the
	// cache's 5 s on a quick machine): lift the rate limits, which mode ack has too, out of reach.
	const noLimits = "limits:\n  conversation: {max: 100000, per: 30s}\n  sender: {max: 100000, per: 5m}\n"
	s.applyTenant(ops, tenantFile("acme-bus", numberA, "en", "public", noLimits), "EAAtoken-acme")
	if got := textOf(s.sendFor(s.say(numberA, contact, "hello"))); got != i18n.Text("en", i18n.Ack) {
		t.Fatalf("before the apply: %q", got)
	}
	if _, err := ops.Apply(context.Background(), tenantFile("acme-bus", numberA, "fr", "public", noLimits), false); err != nil {
		t.Fatal(err)
	}
	applied := time.Now()
	testenv.Eventually(t, 15*time.Second, func() bool {
		return textOf(s.sendFor(s.say(numberA, contact, "hello"))) == i18n.Text("fr", i18n.Ack)
	}, "the new language was never used")
	t.Logf("apply seen by the worker after %v (cache TTL %v)", time.Since(applied).Round(10*time.Millisecond), tenantcache.TenantCacheTTL)
}

// TestTenantWithoutTokenRecordsFailed: a reply of a tenant without a token is recorded failed
// with the reason, and nothing reaches the Graph API. The conversation goes on.
func TestTenantWithoutTokenRecordsFailed(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{})
	ops := s.ops()
	a := s.applyTenant(ops, tenantFile("acme-bus", numberA, "en", "public", ""), "")
	id := s.say(numberA, contact, "hello")
	ctx := context.Background()
	testenv.Eventually(t, 30*time.Second, func() bool {
		rec, err := s.records.GetOutbound(ctx, tasks.IdempotencyKey(keyedid.Dev(), id))
		return err == nil && rec.State == store.OutboundFailed
	}, "the record never became failed")
	s.idle(tasks.TenantQueueID(a))
	if rec := s.outbound(id); rec.FailureReason != delivery.ReasonNoToken || rec.TenantID != a {
		t.Errorf("record %+v, want failed for no_token", rec)
	}
	if !strings.Contains(s.logs.String(), `"event":"outbound_unsendable"`) {
		t.Error("no outbound_unsendable log line")
	}
	if n := len(s.Graph.Requests()); n != 0 {
		t.Errorf("%d Graph API calls without a token, want 0", n)
	}
}

// flakyTenants fails every lookup while down is set: the tenant store is unreachable.
type flakyTenants struct {
	worker.TenantResolver
	down atomic.Bool
}

func (f *flakyTenants) GetByPhoneNumber(ctx context.Context, id string) (store.TenantRecord, error) {
	if f.down.Load() {
		return store.TenantRecord{}, errors.New("rpc error: code = Unavailable desc = firestore down")
	}
	return f.TenantResolver.GetByPhoneNumber(ctx, id)
}

func TestTenantStoreDownRetries(t *testing.T) {
	t.Parallel()
	flaky := &flakyTenants{}
	flaky.down.Store(true)
	s := newStack(t, stackOptions{worker: []func(*worker.Deps){func(d *worker.Deps) {
		flaky.TenantResolver = d.Tenants
		d.Tenants = flaky
	}}})
	a := s.applyTenant(s.ops(), tenantFile("acme-bus", numberA, "en", "public", ""), "EAAtoken-acme")
	id := s.say(numberA, contact, "hello")
	ctx := context.Background()
	testenv.Eventually(t, 10*time.Second, func() bool {
		tr, err := s.records.GetTrace(ctx, id)
		return err == nil && tr.State == store.TraceRetrying && strings.Contains(tr.Error, "resolve the tenant")
	}, "the trace never showed the retry")
	// The attempt logs its retry just after it writes the trace.
	testenv.Eventually(t, 10*time.Second, func() bool { return s.logs.Has("task_retry") },
		"no task_retry line: the inbound task was not answered 503")
	if n := len(s.Graph.Requests()); n != 0 {
		t.Errorf("%d Graph API calls while the tenant store is down, want 0", n)
	}
	flaky.down.Store(false)
	if r := s.sendFor(id); r.Token != "EAAtoken-acme" {
		t.Errorf("after recovery the reply used token %s…", r.Token[:8])
	}
	s.idle(tasks.TenantQueueID(a))
}

// TestTenantIsolation gives tenant A (5 sends a second) a backlog of 500 replies, then measures
// tenant B's reply latency, webhook to Graph API, 20 times while A's backlog drains. It reports
// the figures; speed is not asserted.
func TestTenantIsolation(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test")
	}
	t.Parallel()
	s := newStack(t, stackOptions{})
	ops := s.ops()
	// One contact writes both, far past the rate limits (which mode ack has too): lift them, so
	// every message of A's backlog is answered.
	lifted := "limits:\n  conversation: {max: 1000, per: 30s}\n  sender: {max: 1000, per: 5m}\n"
	a := s.applyTenant(ops, tenantFile("busy-a", numberA, "en", "public", lifted+"sending: {per_second: 5, max_concurrent: 2}\n"), "EAAtoken-a")
	s.applyTenant(ops, tenantFile("quiet-b", numberB, "en", "public", lifted), "EAAtoken-b")
	for i := 0; i < 5; i++ {
		s.deliver(whatsapp.SampleBatch(whatsapp.SampleOptions{PhoneNumberID: numberA, From: contact}, 100))
	}
	// A's backlog is in its queue before B is measured.
	admin, err := taskqueue.NewAdmin(context.Background(), s.Project, s.Location, s.TasksAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	testenv.Eventually(t, 30*time.Second, func() bool {
		st, err := admin.QueueStats(context.Background(), tasks.TenantQueueID(a))
		return err == nil && st.Tasks >= 400
	}, "tenant A's backlog never built up")
	var lat []time.Duration
	for i := 0; i < 20; i++ {
		start := time.Now()
		s.sendFor(s.say(numberB, contact, "hello"))
		lat = append(lat, time.Since(start))
	}
	sentA := 0
	for _, r := range s.Graph.Sends() {
		if r.PhoneNumberID == numberA {
			sentA++
		}
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	p := func(q float64) time.Duration { return lat[int(q*float64(len(lat)-1)+0.5)] }
	t.Logf("tenant B reply latency with tenant A's backlog draining (A sent %d of 500 meanwhile): p50 %v, p95 %v, max %v",
		sentA, p(0.50).Round(time.Millisecond), p(0.95).Round(time.Millisecond), slices.Max(lat).Round(time.Millisecond))
	if sentA >= 500 {
		t.Errorf("tenant A's backlog drained (%d sent) before B was measured: the figure says nothing", sentA)
	}
}
