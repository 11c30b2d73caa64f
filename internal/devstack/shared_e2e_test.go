package devstack_test

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/wapipe/wapipe/internal/contact"
	"github.com/wapipe/wapipe/internal/devstack"
	"github.com/wapipe/wapipe/internal/graph/graphfake"
	"github.com/wapipe/wapipe/internal/i18n"
	"github.com/wapipe/wapipe/internal/operator"
	"github.com/wapipe/wapipe/internal/secrets"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/tenant"
	"github.com/wapipe/wapipe/internal/testenv"
	"github.com/wapipe/wapipe/internal/whatsapp"
)

// The shared number and the people writing to it.
const (
	sharedNumber = "310000000000001"
	sharedWABA   = "410000000000001"
	acmeMember   = "6281111111111" // acme-bus's member, by file
	baliMember   = "6282222222222" // bali-tours's member, by file
	stranger     = "6283333333333" // nobody's
)

// sharedTenantFile is a members-only tenant in mode ack, answering ack, that lists the shared
// number with shared: true and the file member member.
func sharedTenantFile(id, language, ack, member string) []byte {
	return []byte(fmt.Sprintf(`id: %s
name: %s
language: %s
audience: members
phone_numbers:
  - {phone_number_id: %q, waba_id: %q, shared: true}
members:
  - {wa_id: %q, role: member}
assistant: {mode: ack, ack_text: %q}
`, id, id, language, sharedNumber, sharedWABA, member, ack))
}

// sharedStack is the whole stack with two tenants on one shared number, each with its own token.
type sharedStack struct {
	t    *testing.T
	st   *devstack.Stack
	logs *testenv.LogBuffer
	ops  *operator.Tenants
	db   *store.DB
	seq  atomic.Int64
}

// replyTo sends text from contact to the shared number through the webhook and returns the one
// send that answers it (the contact's next send).
func (s *sharedStack) replyTo(contact, text string) graphfake.Request {
	s.t.Helper()
	return s.replyOn(sharedNumber, sharedWABA, contact, text)
}

// replyOn is replyTo on the business number number of account waba.
func (s *sharedStack) replyOn(number, waba, contact, text string) graphfake.Request {
	s.t.Helper()
	before := len(sendsTo(s.st.Graph, contact))
	post(s.t, s.st, whatsapp.SampleText(whatsapp.SampleOptions{PhoneNumberID: number, WABAID: waba, From: contact,
		ContactName: "Nyoman", MessageID: fmt.Sprintf("wamid.shared-%d", s.seq.Add(1))}, text))
	var got []graphfake.Request
	testenv.Eventually(s.t, eventsWait, func() bool {
		got = sendsTo(s.st.Graph, contact)
		return len(got) > before
	}, "no answer to a message on the shared number")
	return got[before]
}

// sendsTo returns the fake Graph API's successful sends to contact, in order.
func sendsTo(g *graphfake.Fake, contact string) []graphfake.Request {
	var out []graphfake.Request
	for _, r := range g.Sends() {
		if to, _ := r.Body["to"].(string); to == contact && r.Status == 200 {
			out = append(out, r)
		}
	}
	return out
}

func sentText(r graphfake.Request) string {
	if t, ok := r.Body["text"].(map[string]any); ok {
		s, _ := t["body"].(string)
		return s
	}
	return ""
}

// answer is what a test expects of a reply: its text, the token it went with, its number.
type answer struct{ Text, Token, Number string }

func answerOf(r graphfake.Request) answer {
	return answer{Text: sentText(r), Token: r.Token, Number: r.PhoneNumberID}
}

func startSharedStack(t *testing.T) *sharedStack {
	t.Helper()
	return startSharedStackWith(t,
		sharedTenantFile("acme-bus", "id", "acme heard you", acmeMember),
		sharedTenantFile("bali-tours", "en", "bali heard you", baliMember))
}

// startSharedStackWith is the stack with the tenant files files (acme-bus and bali-tours).
func startSharedStackWith(t *testing.T, files ...[]byte) *sharedStack {
	t.Helper()
	ctx := context.Background()
	e := startEventsStackWith(t, files...)
	st, logs, db := e.st, e.logs, e.db
	keeper, err := secrets.New(ctx, secrets.Config{Dev: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { keeper.Close() })
	ops := &operator.Tenants{Store: store.NewTenants(db, store.Options{}), Sealer: keeper, Dev: true}
	// Each tenant gets its own token (set-token --no-verify on each), before any message.
	for id, token := range map[string]string{"acme-bus": "EAAtoken-acme", "bali-tours": "EAAtoken-bali"} {
		st.Graph.AcceptToken(token)
		if _, err := ops.SetToken(ctx, id, token, false); err != nil {
			t.Fatal(err)
		}
	}
	return &sharedStack{t: t, st: st, logs: logs, ops: ops, db: db}
}

// TestSharedNumberEndToEnd runs issue 26's shared number through the real webhook, the Cloud
// Tasks emulator and the worker: two tenants list one number with shared: true; each member is
// answered by their own tenant with its token; a stranger gets the onboarding prompt in the
// number's language (its first tenant by id); a stranger joins bali-tours by its code; acme's
// file member moves to bali-tours by its code and stays there after acme's file is applied
// again; a marketing stop holds for both; statuses update the record of the tenant that sent, and a status about neither's
// message changes nothing.
func TestSharedNumberEndToEnd(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := startSharedStack(t)
	acme := func(text string) answer { return answer{text, "EAAtoken-acme", sharedNumber} }
	bali := func(text string) answer { return answer{text, "EAAtoken-bali", sharedNumber} }
	check := func(what string, want answer, got graphfake.Request) {
		t.Helper()
		if diff := cmp.Diff(want, answerOf(got)); diff != "" {
			t.Errorf("%s (-want, +got):\n%s", what, diff)
		}
	}

	// Each member, their own tenant and token.
	acmeSend := s.replyTo(acmeMember, "halo")
	check("acme's member", acme("acme heard you"), acmeSend)
	baliSend := s.replyTo(baliMember, "hello")
	check("bali's member", bali("bali heard you"), baliSend)

	// A stranger: the onboarding prompt in the number's language (acme-bus, first by id: id).
	check("a stranger", acme(i18n.Text("id", i18n.OnboardingPrompt)), s.replyTo(stranger, "hi"))

	// The stranger sends bali's code: bali's member, welcomed by bali, then served by bali.
	code, _, err := s.ops.Invite(ctx, "bali-tours", tenant.RoleMember)
	if err != nil {
		t.Fatal(err)
	}
	check("the stranger's bali code", bali(i18n.Text("en", i18n.WelcomeName, "name", "Nyoman")), s.replyTo(stranger, code))
	check("the stranger, now bali's", bali("bali heard you"), s.replyTo(stranger, "hello again"))

	// acme's file member sends bali's code: moves to bali, and stays there.
	code2, _, err := s.ops.Invite(ctx, "bali-tours", tenant.RoleMember)
	if err != nil {
		t.Fatal(err)
	}
	check("acme's member with bali's code", bali(i18n.Text("en", i18n.WelcomeName, "name", "Nyoman")), s.replyTo(acmeMember, code2))
	check("acme's member, moved", bali("bali heard you"), s.replyTo(acmeMember, "halo lagi"))
	if _, err := s.ops.Apply(ctx, sharedTenantFile("acme-bus", "id", "acme heard you again", acmeMember), false); err != nil {
		t.Fatal(err)
	}
	check("the moved member after acme's file is applied again", bali("bali heard you"), s.replyTo(acmeMember, "masih di sini"))

	// A contact's stop of marketing on the shared number holds for every tenant there: Meta
	// keeps one preference per number and contact.
	post(t, s.st, whatsapp.SamplePreference(whatsapp.SampleOptions{PhoneNumberID: sharedNumber, WABAID: sharedWABA, From: stranger,
		MessageID: whatsapp.NewMessageID()}, "stop"))
	prefs := store.NewContactPrefs(s.db, store.Options{})
	for _, id := range []string{"acme-bus", "bali-tours"} {
		who := contactOf(t, s.db, id, contact.Identity{WaID: stranger})
		testenv.Eventually(t, eventsWait, func() bool {
			p, err := prefs.Preference(ctx, id, who)
			return err == nil && p.MarketingStopped
		}, "the stop on the shared number was not recorded for %s", id)
	}

	// Statuses on the shared number follow the record that sent: acme's (the number's first
	// tenant) and bali's.
	outbound := store.NewOutbound(s.db, store.Options{})
	statuses := store.NewStatuses(s.db, store.Options{})
	recordOf := func(r graphfake.Request) store.OutboundRecord {
		t.Helper()
		key, _ := r.Body["biz_opaque_callback_data"].(string)
		rec, err := outbound.GetOutbound(ctx, key)
		if err != nil {
			t.Fatalf("the record of a send: %v", err)
		}
		return rec
	}
	for _, sent := range []struct {
		send   graphfake.Request
		tenant string
		to     string
	}{{acmeSend, "acme-bus", acmeMember}, {baliSend, "bali-tours", baliMember}} {
		if rec := recordOf(sent.send); rec.TenantID != sent.tenant {
			t.Fatalf("record of %s's send is the tenant %q's", sent.tenant, rec.TenantID)
		}
		post(t, s.st, whatsapp.SampleStatus(whatsapp.SampleOptions{PhoneNumberID: sharedNumber, WABAID: sharedWABA, From: sent.to,
			MessageID: sent.send.MessageID, BizOpaqueCallbackData: sent.send.Body["biz_opaque_callback_data"].(string)}, "delivered"))
		testenv.Eventually(t, eventsWait, func() bool {
			return recordOf(sent.send).DeliveryStatus == store.DeliveryDelivered
		}, "the delivered status of %s's send on the shared number was not applied", sent.tenant)
		// The status is recorded after it is applied: wait for that too.
		var sts []store.StatusRecord
		testenv.Eventually(t, eventsWait, func() bool {
			var err error
			sts, err = statuses.ListStatusesFor(ctx, sent.send.MessageID)
			return err == nil && len(sts) > 0
		}, "the delivered status of %s's send was never recorded", sent.tenant)
		if len(sts) != 1 || sts[0].TenantID != sent.tenant {
			t.Errorf("the status of %s's send recorded as %+v, want one for %s", sent.tenant, sts, sent.tenant)
		}
	}

	// A status about a message of neither tenant: one naming acme's record with another wamid
	// (refused, status_mismatch), one naming nothing. Both are recorded and change nothing.
	acmeBefore, baliBefore := recordOf(acmeSend), recordOf(baliSend)
	for i, key := range []string{acmeSend.Body["biz_opaque_callback_data"].(string), ""} {
		wamid := fmt.Sprintf("wamid.neither-%d", i)
		post(t, s.st, whatsapp.SampleStatus(whatsapp.SampleOptions{PhoneNumberID: sharedNumber, WABAID: sharedWABA, From: stranger,
			MessageID: wamid, BizOpaqueCallbackData: key}, "read"))
		testenv.Eventually(t, eventsWait, func() bool {
			sts, err := statuses.ListStatusesFor(ctx, wamid)
			return err == nil && len(sts) == 1
		}, "the status of a message of neither tenant was never recorded")
	}
	if diff := cmp.Diff(acmeBefore, recordOf(acmeSend)); diff != "" {
		t.Errorf("acme's record changed by a status of neither (-before, +after):\n%s", diff)
	}
	if diff := cmp.Diff(baliBefore, recordOf(baliSend)); diff != "" {
		t.Errorf("bali's record changed by a status of neither (-before, +after):\n%s", diff)
	}
	mismatch := regexp.MustCompile(`"severity":"WARNING"[^\n]*"event":"status_mismatch"`)
	if n := len(mismatch.FindAllString(s.logs.String(), -1)); n != 1 {
		t.Errorf("%d status_mismatch lines, want 1 (the status naming acme's record with another wamid)", n)
	}
	checkSharedPrivacy(t, s.logs.String(), "EAAtoken-acme", "EAAtoken-bali", code, code2, acmeMember, baliMember, stranger)
}

// TestSharedNumberCodeEvictsNoOne is the red team's attack on membership by code: a person who
// joined acme-bus by acme's code redeems bali-tours's code on the number the two share. The code
// records the person's choice there (bali answers them on the shared number) and takes nothing
// from acme: on acme's own number acme still answers them as its member, where before the fix
// they got acme's onboarding prompt.
func TestSharedNumberCodeEvictsNoOne(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const ownNumber, ownWABA, joiner = "310000000000002", "410000000000002", "6284444444444"
	// acme's file with a number of its own beside the shared one.
	acmeFile := []byte(regexp.MustCompile(`(?m)^members:`).ReplaceAllString(string(sharedTenantFile("acme-bus", "id", "acme heard you", acmeMember)),
		fmt.Sprintf("  - {phone_number_id: %q, waba_id: %q}\nmembers:", ownNumber, ownWABA)))
	s := startSharedStackWith(t, acmeFile, sharedTenantFile("bali-tours", "en", "bali heard you", baliMember))
	acmeCode, _, err := s.ops.Invite(ctx, "acme-bus", tenant.RoleMember)
	if err != nil {
		t.Fatal(err)
	}
	baliCode, _, err := s.ops.Invite(ctx, "bali-tours", tenant.RoleMember)
	if err != nil {
		t.Fatal(err)
	}
	welcome := func(lang string) string { return i18n.Text(lang, i18n.WelcomeName, "name", "Nyoman") }
	check := func(what, want string, got graphfake.Request) {
		t.Helper()
		if sentText(got) != want {
			t.Errorf("%s: %q, want %q", what, sentText(got), want)
		}
	}
	check("acme's code on acme's own number", welcome("id"), s.replyOn(ownNumber, ownWABA, joiner, acmeCode))
	check("bali's code on the shared number", welcome("en"), s.replyTo(joiner, baliCode))
	check("on the shared number, the choice routes", "bali heard you", s.replyTo(joiner, "hello"))
	check("on acme's own number, still acme's member", "acme heard you", s.replyOn(ownNumber, ownWABA, joiner, "halo"))
	checkSharedPrivacy(t, s.logs.String(), acmeCode, baliCode, joiner)
}

// TestSharedNumberStrangersGoToThePrimary is the red team's capture of strangers: a tenant added
// later to a shared number whose id sorts first took every stranger's first message and set the
// number's onboarding language. The number's strangers now go to the tenant whose entry says
// primary: true (bali-tours here, in English), whoever joins later; a second claim of primary is
// refused by apply with one line naming the primary.
func TestSharedNumberStrangersGoToThePrimary(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	primary := bytes.Replace(sharedTenantFile("bali-tours", "en", "bali heard you", baliMember),
		[]byte("shared: true}"), []byte("shared: true, primary: true}"), 1)
	s := startSharedStackWith(t, primary, sharedTenantFile("acme-bus", "id", "acme heard you", acmeMember))
	got := s.replyTo(stranger, "hi")
	if want := (answer{i18n.Text("en", i18n.OnboardingPrompt), "EAAtoken-bali", sharedNumber}); answerOf(got) != want {
		t.Errorf("a stranger on the shared number: %+v, want bali's onboarding prompt in English %+v", answerOf(got), want)
	}
	claim := bytes.Replace(sharedTenantFile("acme-bus", "id", "acme heard you", acmeMember),
		[]byte("shared: true}"), []byte("shared: true, primary: true}"), 1)
	if _, err := s.ops.Apply(ctx, claim, false); err == nil || !strings.Contains(err.Error(), "tenant bali-tours is its primary already") {
		t.Errorf("acme-bus claims primary too: %v, want a refusal naming bali-tours", err)
	}
	if got := s.replyTo(stranger, "hello?"); answerOf(got).Token != "EAAtoken-bali" {
		t.Errorf("after acme's claim, a stranger is answered by %+v, want bali-tours", answerOf(got))
	}
}

// checkSharedPrivacy fails when the logs carry any of secrets (tokens, codes, numbers in clear).
func checkSharedPrivacy(t *testing.T, logs string, secrets ...string) {
	t.Helper()
	for _, s := range secrets {
		if regexp.MustCompile(regexp.QuoteMeta(s)).MatchString(logs) {
			t.Errorf("the logs carry %q", s)
		}
	}
}

// TestSharedNumberMemberOfSeveralIsAsked: a person both tenants list on their shared number
// (the operator allowed it) and who chose neither is taken by neither: their messages are held
// and they are asked once, with a list from the primary tenant (bali-tours) naming both; their
// tap on acme-bus sends the held messages to acme-bus, which answers each with its own token, and
// routes their next message there. The same tap from a stranger (a forged row) makes them no
// member: they still get bali's onboarding prompt. Tapping again changes nothing.
func TestSharedNumberMemberOfSeveralIsAsked(t *testing.T) {
	t.Parallel()
	const both = "6284444444444"
	primary := func(member string) []byte {
		return bytes.Replace(sharedTenantFile("bali-tours", "en", "bali heard you", member),
			[]byte("shared: true}"), []byte("shared: true, primary: true}"), 1)
	}
	s := startSharedStackWith(t, sharedTenantFile("acme-bus", "id", "acme heard you", both), primary(baliMember))
	if _, err := s.ops.ApplyWith(context.Background(), primary(both), operator.ApplyOptions{AllowSharedMember: true}); err != nil {
		t.Fatal(err)
	}
	e := &eventsStack{st: s.st, db: s.db}
	var lastID string
	opts := func(from string) whatsapp.SampleOptions {
		lastID = fmt.Sprintf("wamid.ask-%d", s.seq.Add(1))
		return whatsapp.SampleOptions{PhoneNumberID: sharedNumber, WABAID: sharedWABA, From: from, ContactName: "Agus", MessageID: lastID}
	}
	// send posts body and returns the status of its message in the inbound event's trace.
	send := func(body []byte) string {
		t.Helper()
		id := lastID
		post(t, s.st, body)
		return e.traceTarget(t, body, id).Status
	}
	if st := send(whatsapp.SampleText(opts(both), "Bus 03 AC mati")); st != "held_for_choice" {
		t.Errorf("the first message of the member of both: %s, want held_for_choice", st)
	}
	var list graphfake.Request
	testenv.Eventually(t, eventsWait, func() bool {
		got := sendsTo(s.st.Graph, both)
		if len(got) > 0 {
			list = got[0]
		}
		return len(got) > 0
	}, "no question to the member of both tenants")
	it, _ := list.Body["interactive"].(map[string]any)
	if list.Token != "EAAtoken-bali" || it["type"] != "list" {
		t.Fatalf("the question: %+v, want a list with bali-tours's token", list.Body)
	}
	rows := listRows(it)
	if want := []string{"tenant:acme-bus acme-bus", "tenant:bali-tours bali-tours"}; !cmp.Equal(rows, want) {
		t.Errorf("the list's rows: %v, want %v", rows, want)
	}
	if body, _ := it["body"].(map[string]any); body["text"] != i18n.Text("en", i18n.ChooseTenant) {
		t.Errorf("the list's text: %v, want the primary's language's", body["text"])
	}
	// A second message before the tap is held too, and asks nothing more.
	if st := send(whatsapp.SampleText(opts(both), "tolong cepat")); st != "held_for_choice" {
		t.Errorf("the second message: %s, want held_for_choice", st)
	}
	if st := send(whatsapp.SampleListReply(opts(both), "tenant:acme-bus", "acme-bus", "")); st != "tenant_chosen" {
		t.Errorf("the tap: %s, want tenant_chosen", st)
	}
	var answers []graphfake.Request
	testenv.Eventually(t, eventsWait, func() bool {
		answers = sendsTo(s.st.Graph, both)[1:]
		return len(answers) >= 2
	}, "the held messages were not answered after the tap")
	for _, a := range answers[:2] {
		if want := (answer{"acme heard you", "EAAtoken-acme", sharedNumber}); answerOf(a) != want {
			t.Errorf("a held message's answer: %+v, want %+v", answerOf(a), want)
		}
	}
	if got := s.replyTo(both, "lagi"); answerOf(got).Token != "EAAtoken-acme" {
		t.Errorf("after the choice: %+v, want acme-bus", answerOf(got))
	}
	// The tap again (a redelivery of another tap) sends nothing more.
	if st := send(whatsapp.SampleListReply(opts(both), "tenant:acme-bus", "acme-bus", "")); st != "tenant_chosen" {
		t.Errorf("the tap again: %s, want tenant_chosen", st)
	}
	// A stranger's forged row: an ordinary message, to the primary.
	if st := send(whatsapp.SampleListReply(opts(stranger), "tenant:acme-bus", "acme-bus", "")); st != "created" {
		t.Errorf("a stranger's forged row: %s, want an ordinary message's task", st)
	}
	testenv.Eventually(t, eventsWait, func() bool { return len(sendsTo(s.st.Graph, stranger)) > 0 }, "the stranger's row was not answered")
	if got := sendsTo(s.st.Graph, stranger)[0]; answerOf(got) != (answer{i18n.Text("en", i18n.OnboardingPrompt), "EAAtoken-bali", sharedNumber}) {
		t.Errorf("a stranger's forged row: %+v, want bali-tours's onboarding prompt", answerOf(got))
	}
	if n := len(sendsTo(s.st.Graph, both)); n != 4 {
		t.Errorf("the member of both got %d sends, want 4 (a list, two held answers, one answer)", n)
	}
	checkSharedPrivacy(t, s.logs.String(), both, "Bus 03 AC mati", "tolong cepat")
}

// listRows are the "id title" of an interactive list's rows.
func listRows(it map[string]any) []string {
	var out []string
	action, _ := it["action"].(map[string]any)
	sections, _ := action["sections"].([]any)
	for _, sec := range sections {
		rows, _ := sec.(map[string]any)["rows"].([]any)
		for _, r := range rows {
			row, _ := r.(map[string]any)
			out = append(out, fmt.Sprint(row["id"], " ", row["title"]))
		}
	}
	return out
}
