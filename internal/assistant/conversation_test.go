package assistant_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wapipe/wapipe/internal/assistant"
	"github.com/wapipe/wapipe/internal/assistant/assistanttest"
	"github.com/wapipe/wapipe/internal/i18n"
	"github.com/wapipe/wapipe/internal/llm"
	"github.com/wapipe/wapipe/internal/tenant"
	"github.com/wapipe/wapipe/internal/turnstate"
	"github.com/wapipe/wapipe/internal/whatsapp"
)

// conversation plays the turns of one conversation, each with the state the previous left.
type conversation struct {
	t     *testing.T
	e     *assistant.Engine
	tn    *tenant.Tenant
	id    string
	state turnstate.State
}

func (c *conversation) send(m whatsapp.Message, now time.Time) assistant.Outcome {
	c.t.Helper()
	in := input(c.tn, m, now, c.state)
	in.ConversationID = c.id
	out := run(c.t, c.e, in)
	c.state = out.State
	return out
}

func always(r llm.Result) func(llm.Request) (llm.Result, error) {
	return func(llm.Request) (llm.Result, error) { return r, nil }
}

func TestRateLimitSendsOneNoticePerWindowThenSilence(t *testing.T) {
	t.Parallel()
	x := assistanttest.NewExtractor()
	x.Default = always(generalResult("Halo!"))
	c := &conversation{t: t, e: assistant.New(x, assistanttest.NewGuard()), tn: newTenant(t), id: convID}

	var events []string
	var sent []i18n.Key
	for i := range 8 { // a burst: 5 per 30 s allowed
		out := c.send(textMsg(fmt.Sprintf("m-%d", i), ownerID, "halo"), t0.Add(time.Duration(i)*time.Second))
		events = append(events, out.Event+"/"+out.Reason)
		for _, r := range out.Replies {
			sent = append(sent, r.Key)
		}
	}
	wantEvents := []string{"general_query/", "general_query/", "general_query/", "general_query/", "general_query/",
		"rate_limited/conversation_limit", "rate_limited/conversation_limit", "rate_limited/conversation_limit"}
	if diff := cmp.Diff(wantEvents, events); diff != "" {
		t.Errorf("events (-want, +got):\n%s", diff)
	}
	if want := []i18n.Key{"", "", "", "", "", i18n.RateLimited}; !slices.Equal(sent, want) {
		t.Errorf("replies' keys = %q; want five answers and one notice", sent)
	}
	if x.Calls() != 5 {
		t.Errorf("LLM calls = %d; want 5", x.Calls())
	}
	// After the window, served again.
	if out := c.send(textMsg("m-late", ownerID, "halo"), t0.Add(30*time.Second)); out.Event != assistant.EventGeneralQuery {
		t.Errorf("after the window: event %q; want general_query", out.Event)
	}
	if x.Calls() != 6 {
		t.Errorf("LLM calls = %d after the window; want 6", x.Calls())
	}
}

func TestAnswersToAPendingActionAreNotRateLimited(t *testing.T) {
	t.Parallel()
	x := assistanttest.NewExtractor()
	x.Default = always(bookingResult())
	c := &conversation{t: t, e: assistant.New(x, assistanttest.NewGuard()), tn: newTenant(t), id: convID}
	for i := range 5 {
		c.send(textMsg(fmt.Sprintf("m-%d", i), ownerID, "book bus 01 for Pak Agus on 1 March"), t0)
	}
	out := c.send(buttonMsg("m-yes", ownerID, assistant.ButtonYes, "Ya, konfirmasi"), t0.Add(time.Second))
	if out.Event != assistant.EventConfirmed || out.Action == nil || out.Action.ActionID != assistant.ActionID(tenantID, convID, "m-4") {
		t.Errorf("confirmation over the limit: event %q action %+v; want the last booking confirmed", out.Event, out.Action)
	}
}

func TestSenderLimitAppliesAcrossConversations(t *testing.T) {
	t.Parallel()
	tn := newTenant(t, func(t *tenant.Tenant) { t.Limits.Sender = tenant.Limit{Max: 3, Per: 5 * time.Minute} })
	x := assistanttest.NewExtractor()
	x.Default = always(generalResult("Halo!"))
	g := assistanttest.NewGuard()
	e := assistant.New(x, g)
	// One contact writing to two of the tenant's numbers: two conversations.
	a := &conversation{t: t, e: e, tn: tn, id: "conv-a"}
	b := &conversation{t: t, e: e, tn: tn, id: "conv-b"}
	var got []string
	for i, c := range []*conversation{a, b, a, b, a, b} {
		out := c.send(textMsg(fmt.Sprintf("m-%d", i), ownerID, "halo"), t0.Add(time.Duration(i)*time.Second))
		got = append(got, fmt.Sprintf("%s/%s/%d", out.Event, out.Reason, len(out.Replies)))
	}
	want := []string{"general_query//1", "general_query//1", "general_query//1",
		"rate_limited/sender_limit/1", "rate_limited/sender_limit/0", "rate_limited/sender_limit/0"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events/reasons/replies (-want, +got):\n%s", diff)
	}
	if x.Calls() != 3 {
		t.Errorf("LLM calls = %d; want 3", x.Calls())
	}
}

func TestQuotaBlockIsCachedUntilRaised(t *testing.T) {
	t.Parallel()
	x := assistanttest.NewExtractor()
	x.Default = always(generalResult("Halo!"))
	g := assistanttest.NewGuard()
	c := &conversation{t: t, e: assistant.New(x, g), tn: newTenant(t, quota(2)), id: convID}
	period := turnstate.Period(t0)

	type step struct {
		Event       string
		Replies     []i18n.Key
		QuotaChecks int
		LLMCalls    int
		Usage       int
	}
	var got []step
	play := func(id string, at time.Time) {
		out := c.send(textMsg(id, ownerID, "halo"), at)
		var keys []i18n.Key
		for _, r := range out.Replies {
			keys = append(keys, r.Key)
		}
		got = append(got, step{out.Event, keys, g.QuotaChecks(), x.Calls(), g.Usage(tenantID, period)})
	}
	play("m-1", t0)
	play("m-2", t0.Add(time.Minute))
	play("m-3", t0.Add(2*time.Minute)) // over quota
	play("m-4", t0.Add(2*time.Minute+time.Second))
	c.tn = newTenant(t, quota(3)) // apply raised the quota
	play("m-5", t0.Add(3*time.Minute))
	want := []step{
		{"general_query", []i18n.Key{""}, 1, 1, 1},
		{"general_query", []i18n.Key{""}, 2, 2, 2},
		{"quota_blocked", []i18n.Key{i18n.QuotaExceeded}, 3, 2, 2},
		{"quota_blocked_cached", nil, 3, 2, 2},
		{"general_query", []i18n.Key{""}, 4, 3, 3},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("steps (-want, +got):\n%s", diff)
	}
	if c.state.QuotaBlocked != nil {
		t.Errorf("block still cached after the quota was raised: %+v", c.state.QuotaBlocked)
	}
}

func TestConcurrentTurnsMakeExactlyTheQuotasCalls(t *testing.T) {
	t.Parallel()
	tn := newTenant(t, quota(50))
	var mu sync.Mutex
	calls := 0
	x := assistant.ExtractorFunc(func(context.Context, llm.Request) (llm.Result, error) {
		mu.Lock()
		defer mu.Unlock()
		calls++
		return generalResult("Halo!"), nil
	})
	g := assistanttest.NewGuard()
	e := assistant.New(x, g)
	var wg sync.WaitGroup
	blocked := make([]bool, 100)
	for i := range 100 {
		wg.Go(func() {
			in := input(tn, textMsg(fmt.Sprintf("m-%d", i), ownerID, "halo"), t0, turnstate.State{})
			in.ConversationID = fmt.Sprintf("conv-%d", i)
			in.Message.From = fmt.Sprintf("62800000%03d", i) // 100 contacts: no sender limit
			in.ContactID, in.Person = contactOf(in.Message.From), in.Message.Identity()
			out, err := e.Turn(context.Background(), in)
			if err != nil {
				t.Error(err)
				return
			}
			blocked[i] = out.Event == assistant.EventQuotaBlocked
		})
	}
	wg.Wait()
	nBlocked := 0
	for _, b := range blocked {
		if b {
			nBlocked++
		}
	}
	if calls != 50 || nBlocked != 50 || g.Usage(tenantID, turnstate.Period(t0)) != 50 {
		t.Errorf("LLM calls %d, blocked turns %d, usage %d; want 50 each", calls, nBlocked, g.Usage(tenantID, turnstate.Period(t0)))
	}
}

func TestRedoneTurnsGiveTheSameOutcome(t *testing.T) {
	t.Parallel()
	tn := newTenant(t, quota(100), func(t *tenant.Tenant) { t.Limits.Sender = tenant.Limit{Max: 1, Per: time.Minute} })
	tests := []struct {
		name  string
		msg   whatsapp.Message
		state turnstate.State
	}{
		{"booking", textMsg("m-book", ownerID, "book bus 01 for Pak Agus on 1 March"), turnstate.State{}},
		{"confirmation", buttonMsg("m-yes", ownerID, assistant.ButtonYes, "Ya, konfirmasi"), turnstate.State{Pending: pendingBooking()}},
		{"correction", textMsg("m-fix", ownerID, "tanggal 12"), turnstate.State{Pending: pendingBooking()}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := assistanttest.NewGuard()
			x := assistanttest.NewExtractor()
			x.Default = always(bookingResult())
			e := assistant.New(x, g)
			in := input(tn, tt.msg, t0.Add(time.Minute), tt.state)
			first := run(t, e, in)
			// The instance died before committing; the turn is redone from the same state with
			// the same guard (whose counters the first attempt already moved).
			second := run(t, e, in)
			if diff := cmp.Diff(first, second); diff != "" {
				t.Errorf("redone turn differs (-first, +second):\n%s", diff)
			}
			if diff := cmp.Diff(tt.state, in.State); diff != "" {
				t.Errorf("Turn changed its input state (-before, +after):\n%s", diff)
			}
			if u := g.Usage(tenantID, turnstate.Period(t0)); u > 1 {
				t.Errorf("usage = %d; a redone turn paid twice", u)
			}
		})
	}
}

func TestRedoneTurnsNumberRepliesTheSame(t *testing.T) {
	t.Parallel()
	long := bookingResult()
	long.Reply = strings.Repeat("x", 2000)
	x := assistanttest.NewExtractor()
	x.Default = always(long)
	e := assistant.New(x, assistanttest.NewGuard())
	in := input(newTenant(t), textMsg("m-book", ownerID, "book"), t0, turnstate.State{})
	for range 2 {
		out := run(t, e, in)
		var idx []int
		for _, r := range out.Replies {
			idx = append(idx, r.Index)
		}
		if !slices.Equal(idx, []int{0, 1}) || out.Replies[1].Graph == nil {
			t.Errorf("reply indexes %v; want [0 1] with the buttons second", idx)
		}
		if got, want := out.State.Pending.ActionID, assistant.ActionID(tenantID, convID, "m-book"); got != want {
			t.Errorf("action id %q; want %q", got, want)
		}
	}
}

func TestHistoryKeepsTheLastTenTurns(t *testing.T) {
	t.Parallel()
	x := assistanttest.NewExtractor()
	x.Default = func(r llm.Request) (llm.Result, error) { return generalResult("re: " + r.Text), nil }
	tn := newTenant(t, func(t *tenant.Tenant) { t.Limits.Conversation.Max = 100 })
	c := &conversation{t: t, e: assistant.New(x, assistanttest.NewGuard()), tn: tn, id: convID}
	for i := range 13 {
		c.send(textMsg(fmt.Sprintf("m-%d", i), ownerID, fmt.Sprintf("pesan %d", i)), t0.Add(time.Duration(i)*time.Minute))
	}
	if n := len(c.state.Turns); n != turnstate.MaxTurns {
		t.Fatalf("state keeps %d turns; want %d", n, turnstate.MaxTurns)
	}
	if first := c.state.Turns[0]; first.MessageID != "m-3" || first.User != "pesan 3" || first.Reply != "re: pesan 3" {
		t.Errorf("oldest kept turn = %+v; want m-3", first)
	}
	// The last request saw the ten turns before it (m-2 … m-11) as history.
	reqs := x.Requests()
	last := reqs[len(reqs)-1]
	var want []llm.Turn
	for i := 2; i <= 11; i++ {
		want = append(want, llm.Turn{Role: llm.RoleUser, Text: fmt.Sprintf("pesan %d", i)},
			llm.Turn{Role: llm.RoleModel, Text: fmt.Sprintf("re: pesan %d", i)})
	}
	if diff := cmp.Diff(want, last.History); diff != "" {
		t.Errorf("history (-want, +got):\n%s", diff)
	}
	if last.Text != "pesan 12" {
		t.Errorf("request text %q; want pesan 12", last.Text)
	}
}

func TestLLMRequest(t *testing.T) {
	t.Parallel()
	x := assistanttest.NewExtractor(ok(generalResult("Halo!")))
	tn := newTenant(t)
	st := turnstate.State{Turns: []turnstate.Turn{
		{MessageID: "m-0", User: "halo", Reply: "Halo!", Event: "general_query"},
		{MessageID: "m-0b", User: "", Reply: "", Event: "unsupported_message"},
		{MessageID: "m-0c", User: "ya", Reply: "", Event: "confirmed"},
	}}
	run(t, assistant.New(x, assistanttest.NewGuard()), input(tn, textMsg("m-1", memberID, "when is bus 3 free?"), t0, st))
	want := llm.Request{
		Model: "gemini-2.5-flash", Instructions: "You are the operations assistant of a tour-bus company.",
		Role: "member", Name: "Sam", Language: "en", Text: "when is bus 3 free?", Now: t0,
		History: []llm.Turn{{Role: "user", Text: "halo"}, {Role: "model", Text: "Halo!"}, {Role: "user", Text: "ya"}},
		Intents: []llm.Intent{
			{Name: "create_booking", Description: "a new booking", Required: []string{"client", "date", "bus"},
				Fields: []llm.Field{{Name: "client", Type: "string"}, {Name: "date", Type: "date"}, {Name: "route", Type: "string"},
					{Name: "bus", Type: "string"}, {Name: "price", Type: "integer"}}},
			{Name: "check_schedule", Description: "who drives which bus when", Fields: []llm.Field{{Name: "date", Type: "date"}}},
			{Name: "report_issue", Required: []string{"bus"},
				Description: "a problem with a bus (departure is a time HH:MM (24-hour); since is a date and time YYYY-MM-DDTHH:MM)",
				Fields: []llm.Field{{Name: "bus", Type: "string"}, {Name: "issue", Type: "string"},
					{Name: "departure", Type: "string"}, {Name: "since", Type: "string"}}},
		},
	}
	if diff := cmp.Diff([]llm.Request{want}, x.Requests()); diff != "" {
		t.Errorf("requests (-want, +got):\n%s", diff)
	}
}

func TestActionRequestJSONHasTheContractsFields(t *testing.T) {
	t.Parallel()
	b, err := json.Marshal(assistant.ActionRequest{ActionID: "act_1", TenantID: tenantID, Intent: "create_booking",
		Data: map[string]any{"bus": "01", "price": int64(15000000)}, From: assistant.ActionFrom{WaID: ownerID, Name: "Pak Agus", Role: "owner"},
		ConversationID: convID, RequestedAt: t0})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"action_id":"act_1","tenant_id":"acme-bus","intent":"create_booking","data":{"bus":"01","price":15000000},` +
		`"from":{"wa_id":"6281234567890","name":"Pak Agus","role":"owner"},"conversation_id":"conv-1","requested_at":"2026-11-23T09:00:00Z"}`
	if string(b) != want {
		t.Errorf("body = %s\nwant   %s", b, want)
	}
}

func TestActionIDs(t *testing.T) {
	t.Parallel()
	a := assistant.ActionID(tenantID, convID, "m-1")
	if a != assistant.ActionID(tenantID, convID, "m-1") || len(a) != len("act_")+32 || !strings.HasPrefix(a, "act_") {
		t.Errorf("ActionID = %q; want a stable act_ + 32 hex", a)
	}
	for _, other := range []string{assistant.ActionID("other", convID, "m-1"), assistant.ActionID(tenantID, "conv-2", "m-1"),
		assistant.ActionID(tenantID, convID, "m-2"), assistant.ActionID(tenantID+convID, "", "m-1")} {
		if other == a {
			t.Errorf("ActionID collides: %q", other)
		}
	}
}

func TestActionTexts(t *testing.T) {
	t.Parallel()
	for _, lang := range i18n.Languages() {
		tests := []struct{ got, want string }{
			{assistant.ActionReply(lang, "Booking 42 recorded."), "Booking 42 recorded."},
			{assistant.ActionReply(lang, " "), i18n.Text(lang, i18n.Done)},
			{assistant.ActionRefusal(lang, "Bus 01 is taken that day."), "Bus 01 is taken that day."},
			{assistant.ActionRefusal(lang, ""), i18n.Text(lang, i18n.ActionError)},
			{assistant.ActionFailed(lang), i18n.Text(lang, i18n.ActionError)},
		}
		for i, tt := range tests {
			if tt.got != tt.want || tt.got == "" {
				t.Errorf("%s case %d: %q; want %q", lang, i, tt.got, tt.want)
			}
		}
	}
	if n := len([]rune(assistant.ActionReply("en", strings.Repeat("é", 5000)))); n != assistant.MaxTextLen {
		t.Errorf("a long business reply is %d characters; want it cut to %d", n, assistant.MaxTextLen)
	}
}

func TestSystemRepliesExistInEveryLanguage(t *testing.T) {
	t.Parallel()
	for _, lang := range i18n.Languages() {
		tn := newTenant(t, func(t *tenant.Tenant) { t.Language = lang; t.Members = nil; t.Audience = tenant.AudiencePublic })
		x := assistanttest.NewExtractor()
		x.Default = always(bookingResult())
		e := assistant.New(x, assistanttest.NewGuard())
		for _, tc := range []struct {
			msg   whatsapp.Message
			state turnstate.State
			key   i18n.Key
		}{
			{mediaMsg("m-1", strangerID, "audio"), turnstate.State{}, i18n.UnsupportedMessage},
			{textMsg("m-1", strangerID, "book"), turnstate.State{}, i18n.NotAllowed},
			{buttonMsg("m-1", strangerID, assistant.ButtonNo, "x"), turnstate.State{Pending: pendingBooking()}, i18n.Cancelled},
			{buttonMsg("m-1", strangerID, assistant.ButtonNo, "x"), turnstate.State{}, i18n.NothingToConfirm},
		} {
			out := run(t, e, input(tn, tc.msg, t0, tc.state))
			if len(out.Replies) != 1 || out.Replies[0].Text != i18n.Text(lang, tc.key) || out.Language != lang {
				t.Errorf("%s/%s: replies %+v language %q", lang, tc.key, views(out.Replies), out.Language)
			}
		}
		// The buttons fit Meta's limits in every language.
		x.Default = always(bookingResult())
		tn.Audience, tn.Members = tenant.AudienceMembers, []tenant.Member{{WaID: ownerID, Role: tenant.RoleOwner}}
		out := run(t, e, input(tn, textMsg("m-b", ownerID, "book"), t0, turnstate.State{}))
		if diff := cmp.Diff([]replyView{{Text: confirmBodyIn(lang, bookingResult()), Buttons: confirmButtons(lang)}}, views(out.Replies)); diff != "" {
			t.Errorf("%s: confirmation (-want, +got):\n%s", lang, diff)
		}
	}
}
