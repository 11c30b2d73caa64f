package console

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/internal/store"
)

// pageCase is one page in one state: what its status and body must be.
type pageCase struct {
	name  string
	path  string
	setup func(f *fixture)
	empty bool
	code  int
	want  []string
	// not must not appear.
	not []string
}

func runPages(t *testing.T, cases []pageCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, tc.empty)
			if tc.setup != nil {
				tc.setup(f)
				f.rebuild()
			}
			code, body := f.get(t, tc.path)
			if code != tc.code {
				t.Errorf("GET %s = %d, want %d; body:\n%s", tc.path, code, tc.code, body)
			}
			checkBody(t, "GET "+tc.path, body, tc.want, tc.not)
		})
	}
}

// checkBody fails t when body lacks one of want or shows one of not; what names the request.
func checkBody(t *testing.T, what, body string, want, not []string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(body, w) {
			t.Errorf("%s: body lacks %q:\n%s", what, w, body)
		}
	}
	for _, n := range not {
		if strings.Contains(body, n) {
			t.Errorf("%s: body shows %q", what, n)
		}
	}
}

func TestOverviewPage(t *testing.T) {
	t.Parallel()
	runPages(t, []pageCase{
		{name: "empty", path: "/", empty: true, code: http.StatusOK,
			want: []string{`id="health-status">ok<`, "No queue read.", `<li class="none">None.</li>`, `id="chart"`, `hx-get="/overview/live"`}},
		{name: "normal", path: "/", code: http.StatusOK,
			want: []string{`id="health-status">failing<`, "queue wa-inbound is paused", `data-queue="wa-inbound"`,
				`<td class="num backlog">7</td>`, "1m35s", "paused", `<rect `, `<polyline points=`,
				`href="/tenants/acme-01"`, "needs_reauth", "over quota", "100/100"},
			not: []string{`<li data-tenant="acme-02">`, "max 2150 ms"}},
		{name: "health error", path: "/", code: http.StatusOK,
			setup: func(f *fixture) {
				f.health.err = errBoom
				f.health.rep.Status, f.health.rep.Reason = "failing", "check failed: queue stats unavailable"
			},
			want: []string{`id="health-status">failing<`, "part of the report could not be read"}, not: []string{"10.0.0.7"}},
		{name: "chart and tenants error", path: "/", code: http.StatusOK,
			setup: func(f *fixture) { f.sends.err, f.tenants.err = errBoom, errBoom },
			want:  []string{"The chart could not be read", "The tenants could not be read"}, not: []string{"10.0.0.7", "sk-internal"}},
		{name: "live fragment", path: "/overview/live", code: http.StatusOK,
			want: []string{`<div id="live"`, `id="health-status">failing<`}, not: []string{"<html", "<nav>"}},
	})
}

func TestTenantPages(t *testing.T) {
	t.Parallel()
	runPages(t, []pageCase{
		{name: "list empty", path: "/tenants", empty: true, code: http.StatusOK, want: []string{"No tenants yet"}},
		{name: "list normal", path: "/tenants", code: http.StatusOK,
			want: []string{`data-tenant="acme-01"`, "106540352201", `<span class="bad">needs_reauth</span>`, "100 / 100", "4 waiting",
				`data-tenant="acme-02"`, "12 (unlimited)"}},
		{name: "list error", path: "/tenants", code: http.StatusInternalServerError,
			setup: func(f *fixture) { f.tenants.err = errBoom },
			want:  []string{"List the tenants: internal error"}, not: []string{"10.0.0.7"}},
		{name: "list usage and queue errors", path: "/tenants", code: http.StatusOK,
			setup: func(f *fixture) { f.usage.err, f.queues.err = errBoom, errBoom },
			want:  []string{`<span class="bad">unavailable</span>`}},
		{name: "tenant normal", path: "/tenants/acme-01", code: http.StatusOK,
			want: []string{`id="auth-status" class="bad">needs_reauth<`, secretAuthError, `id="reconnect" class="primary"`,
				"stored (encrypted)", "gemini-2.5-flash", "Pak Agus (…7890)", "100 LLM calls in 2026-11 of 100"},
			not: []string{"6281234567890"}},
		{name: "tenant ok has no primary reconnect", path: "/tenants/acme-02", code: http.StatusOK,
			want: []string{`id="auth-status" >ok<`, `id="reconnect" >`}},
		{name: "shared number", path: "/tenants/acme-01", code: http.StatusOK,
			setup: func(f *fixture) { f.tenants.recs[0].Tenant.PhoneNumbers[0].Shared = true },
			want:  []string{"106540352201 (WABA 102290129340398) (shared)"}},
		{name: "shared number in the list", path: "/tenants", code: http.StatusOK,
			setup: func(f *fixture) { f.tenants.recs[0].Tenant.PhoneNumbers[0].Shared = true },
			want:  []string{"106540352201 (shared)"}},
		{name: "tenant missing", path: "/tenants/nope", code: http.StatusNotFound, want: []string{"Read the tenant: not found"}},
		{name: "tenant error", path: "/tenants/acme-01", code: http.StatusInternalServerError,
			setup: func(f *fixture) { f.tenants.err = errBoom }, want: []string{"internal error"}},
	})
}

func TestInboxPages(t *testing.T) {
	t.Parallel()
	runPages(t, []pageCase{
		{name: "empty", path: "/tenants/acme-02/inbox", code: http.StatusOK, want: []string{"No open conversations."}},
		{name: "open", path: "/tenants/acme-01/inbox", code: http.StatusOK,
			want: []string{`data-conversation="conv_abc"`, "Pak Agus (…7890)", "action awaiting confirmation"},
			not:  []string{"conv_old", "6281234567890"}},
		{name: "closed", path: "/tenants/acme-01/inbox?status=closed", code: http.StatusOK,
			want: []string{`data-conversation="conv_old"`}, not: []string{"conv_abc"}},
		{name: "all", path: "/tenants/acme-01/inbox?status=all", code: http.StatusOK,
			want: []string{"conv_abc", "conv_old"}},
		{name: "bad page token", path: "/tenants/acme-01/inbox?after=bad", code: http.StatusBadRequest, want: []string{"bad page link"}},
		{name: "no tenant", path: "/tenants/nope/inbox", code: http.StatusNotFound},
		{name: "error", path: "/tenants/acme-01/inbox", code: http.StatusInternalServerError,
			setup: func(f *fixture) { f.convs.err = errBoom }, want: []string{"List the conversations: internal error"}},
	})
}

func TestInboxPaginates(t *testing.T) {
	t.Parallel()
	f := newFixture(t, false)
	for i := range InboxPageSize + 5 {
		f.convs.convs = append(f.convs.convs, store.Conversation{ID: "conv_" + string(rune('a'+i%26)) + string(rune('a'+i/26)),
			TenantID: "acme-02", Status: store.ConversationOpen})
	}
	code, body := f.get(t, "/tenants/acme-02/inbox")
	if code != http.StatusOK {
		t.Fatalf("GET inbox = %d", code)
	}
	if got := strings.Count(body, "data-conversation="); got != InboxPageSize {
		t.Errorf("rows = %d, want a page of %d", got, InboxPageSize)
	}
	if !strings.Contains(body, `href="/tenants/acme-02/inbox?after=NEXTTOKEN&amp;filter=open" id="next-page"`) {
		t.Errorf("no next page link:\n%s", body)
	}
	if diff := cmp.Diff(store.InboxQuery{TenantID: "acme-02", Status: "open", Limit: InboxPageSize}, f.convs.listed); diff != "" {
		t.Errorf("query (-want, +got):\n%s", diff)
	}
}

func TestConversationPage(t *testing.T) {
	t.Parallel()
	runPages(t, []pageCase{
		{name: "normal", path: "/conversations/conv_abc", code: http.StatusOK,
			want: []string{"Book bus 7 please", "An operator here", "✓✓ read", "✗ send failed (code 131047)",
				"<code>create_booking</code> — Book bus 7 for 2026-12-01?", "<code>check_schedule</code>", "done</span> (HTTP 200, 1 attempt): “Schedule sent”",
				`id="reply-form"`, `name="request_id"`, `name="csrf"`},
			not: []string{"6281234567890"}},
		{name: "empty", path: "/conversations/conv_old", code: http.StatusOK,
			want: []string{"No messages stored.", `id="close" disabled`, `<p class="none">None.</p>`}},
		{name: "missing", path: "/conversations/conv_nope", code: http.StatusNotFound},
		{name: "error", path: "/conversations/conv_abc", code: http.StatusInternalServerError,
			setup: func(f *fixture) { f.out.err = errBoom }, want: []string{"internal error"}},
	})
}

func TestFailuresAndSearchPages(t *testing.T) {
	t.Parallel()
	runPages(t, []pageCase{
		{name: "failures empty", path: "/failures", empty: true, code: http.StatusOK, want: []string{"No dead letters waiting."}},
		{name: "failures normal", path: "/failures", code: http.StatusOK,
			want: []string{`data-dead-letter="dl1"`, "whatsapp permanent error", "131026", "process_outbound", `class="btn primary replay"`, "5 attempts",
				// The inspect link names the dead letter (no inbound event to name by its ref), never
				// the reply key derived from the wamid.
				`href="/search?q=dl1"`},
			not: []string{"dl2", "PRIVATE CUSTOMER TEXT"}},
		{name: "failures all", path: "/failures?all=1", code: http.StatusOK, want: []string{"dl1", `data-dead-letter="dl2"`, "replayed "}},
		{name: "failures error", path: "/failures", code: http.StatusInternalServerError,
			setup: func(f *fixture) { f.dls.err = errBoom }, want: []string{"List the dead letters: internal error"}},
		{name: "search empty", path: "/search", code: http.StatusOK, want: []string{`id="search-form"`, `method="post"`}, not: []string{`id="report"`}},
		{name: "search by a wamid in a URL is refused unread", path: "/search?q=wamid.HBgLFOUND", code: http.StatusBadRequest,
			want: []string{"keeps them out of URLs"}, not: []string{`id="report"`, "wamid.HBgLFOUND"}},
		{name: "unknown page", path: "/nope", code: http.StatusNotFound, want: []string{"No such page."}},
	})
}

// TestSearchIsAPost: the inspect search runs from its form, a POST behind the CSRF token, so a
// wamid never sits in a URL; a URL runs only a search by a keyed ref or a dead letter's id (the
// failures page's links), and the inspector is never asked for anything else from a URL.
func TestSearchIsAPost(t *testing.T) {
	t.Parallel()
	dlID := strings.Repeat("ab", 32)
	ref := logging.DevHasher().Ref("wamid.HBgLFOUND")
	for _, tc := range []struct {
		name, method, q string
		setup           func(f *fixture)
		code            int
		want, not       []string
	}{
		{name: "found", method: http.MethodPost, q: "wamid.HBgLFOUND", code: http.StatusOK,
			want: []string{`id="report"`, "inbound_event_id: wamid.HBgLFOUND", "event_ref: ev_1234"}},
		{name: "nothing", method: http.MethodPost, q: "wamid.NOPE", code: http.StatusNotFound, want: []string{`id="search-error">nothing found<`}},
		{name: "error", method: http.MethodPost, q: "wamid.X", code: http.StatusInternalServerError,
			setup: func(f *fixture) { f.inspect.err = errBoom }, want: []string{"internal error"}, not: []string{"10.0.0.7"}},
		{name: "a keyed ref in a URL", method: http.MethodGet, q: ref, code: http.StatusOK,
			setup: func(f *fixture) { f.inspect.rep.Query = ref }, want: []string{`id="report"`}},
		{name: "a dead letter's id in a URL", method: http.MethodGet, q: dlID, code: http.StatusOK,
			setup: func(f *fixture) { f.inspect.rep.Query = dlID }, want: []string{`id="report"`}},
		{name: "a wamid in a URL", method: http.MethodGet, q: "wamid.HBgLFOUND", code: http.StatusBadRequest,
			not: []string{`id="report"`, "HBgLFOUND"}},
		{name: "an idempotency key in a URL", method: http.MethodGet, q: "reply-k9", code: http.StatusBadRequest,
			setup: func(f *fixture) { f.inspect.rep.Query = "reply-k9" }, not: []string{`id="report"`, "reply-k9"}},
		{name: "a phone in a URL", method: http.MethodGet, q: "6281234567890", code: http.StatusBadRequest,
			not: []string{"6281234567890"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, false)
			if tc.setup != nil {
				tc.setup(f)
				f.rebuild()
			}
			var code int
			var body string
			if tc.method == http.MethodPost {
				rec := f.post(t, "/search", url.Values{"q": {tc.q}})
				code, body = rec.Code, rec.Body.String()
			} else {
				code, body = f.get(t, "/search?"+url.Values{"q": {tc.q}}.Encode())
			}
			if code != tc.code {
				t.Errorf("%s /search %q = %d, want %d:\n%s", tc.method, tc.q, code, tc.code, body)
			}
			checkBody(t, tc.method+" /search", body, tc.want, tc.not)
		})
	}
	// Without the CSRF token a search is refused before the inspector is asked.
	f := newFixture(t, false)
	f.inspect.err = errBoom
	f.rebuild()
	if rec := f.post(t, "/search", url.Values{"q": {"wamid.HBgLFOUND"}, CSRFField: {strings.Repeat("B", 43)}}); rec.Code != http.StatusForbidden {
		t.Errorf("search without the CSRF token = %d, want 403", rec.Code)
	}
}

// TestNoPageShowsASecret renders every page with fixtures that hold a token's ciphertext, an
// action URL and dead-letter bodies, and checks none of what must stay hidden is shown.
func TestNoPageShowsASecret(t *testing.T) {
	t.Parallel()
	f := newFixture(t, false)
	hidden := []string{secretCiphertext, "EAAG", "PRIVATE CUSTOMER TEXT", "6281234567890", "6289999990000", "sk-internal", "10.0.0.7"}
	pages := []string{"/", "/overview/live", "/tenants", "/tenants/acme-01", "/tenants/acme-02", "/tenants/acme-01/inbox",
		"/tenants/acme-01/inbox?status=all", "/conversations/conv_abc", "/conversations/conv_old", "/failures", "/failures?all=1",
		"/search?q=wamid.HBgLFOUND", "/search?q=nothing"}
	for _, p := range pages {
		_, body := f.get(t, p)
		for _, h := range hidden {
			if strings.Contains(body, h) {
				t.Errorf("GET %s shows %q", p, h)
			}
		}
	}
	for _, q := range []string{"wamid.HBgLFOUND", "nothing"} {
		body := f.post(t, "/search", url.Values{"q": {q}}).Body.String()
		for _, h := range hidden {
			if strings.Contains(body, h) {
				t.Errorf("POST /search %s shows %q", q, h)
			}
		}
	}
	// An error page neither.
	f.tenants.err = errBoom
	f.rebuild()
	for _, p := range []string{"/tenants", "/tenants/acme-01"} {
		_, body := f.get(t, p)
		for _, h := range hidden {
			if strings.Contains(body, h) {
				t.Errorf("GET %s (failing) shows %q", p, h)
			}
		}
	}
}

func TestGetSetsCSRFCookie(t *testing.T) {
	t.Parallel()
	f := newFixture(t, false)
	req := httptest.NewRequest(http.MethodGet, "/conversations/conv_abc", nil)
	req.RemoteAddr = testLoopback
	rec := httptest.NewRecorder()
	f.handler.ServeHTTP(rec, req)
	var tok string
	for _, c := range rec.Result().Cookies() {
		if c.Name == CSRFCookie {
			tok = c.Value
			if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode {
				t.Errorf("cookie %+v: want HttpOnly and SameSite=Strict", c)
			}
		}
	}
	if !validToken(tok) || !strings.Contains(rec.Body.String(), `name="csrf" value="`+tok+`"`) {
		t.Errorf("CSRF cookie %q not in the forms", tok)
	}
}

func TestActionsRefuseForgedRequests(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		form   url.Values
		cookie bool
		header []string
		code   int
	}{
		{"no token", url.Values{RequestIDField: {newRequestID()}, "text": {"hi"}, CSRFField: {"x"}}, true, nil, http.StatusForbidden},
		{"token mismatch", url.Values{RequestIDField: {newRequestID()}, "text": {"hi"}, CSRFField: {strings.Repeat("B", 43)}}, true, nil, http.StatusForbidden},
		{"cross site", url.Values{RequestIDField: {newRequestID()}, "text": {"hi"}}, true, []string{"Sec-Fetch-Site", "cross-site"}, http.StatusForbidden},
		{"foreign origin", url.Values{RequestIDField: {newRequestID()}, "text": {"hi"}}, true, []string{"Origin", "https://evil.example"}, http.StatusForbidden},
		{"no request id", url.Values{"text": {"hi"}}, true, nil, http.StatusBadRequest},
		{"empty reply", url.Values{RequestIDField: {newRequestID()}, "text": {"  "}}, true, nil, http.StatusBadRequest},
		{"reply too long", url.Values{RequestIDField: {newRequestID()}, "text": {strings.Repeat("é", MaxReplyRunes+1)}}, true, nil, http.StatusBadRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, false)
			rec := f.post(t, "/conversations/conv_abc/reply", tc.form, tc.header...)
			if rec.Code != tc.code {
				t.Errorf("POST = %d, want %d; body:\n%s", rec.Code, tc.code, rec.Body.String())
			}
			if len(f.replier.calls) != 0 || len(f.audit.entries) != 0 {
				t.Errorf("replier calls %d, audit entries %d: want none", len(f.replier.calls), len(f.audit.entries))
			}
		})
	}
}

func TestReplyRunsOncePerRequestID(t *testing.T) {
	t.Parallel()
	f := newFixture(t, false)
	id := newRequestID()
	form := url.Values{RequestIDField: {id}, "text": {"We are on it"}}
	for range 3 {
		rec := f.post(t, "/conversations/conv_abc/reply", form, f.as(t, "alice@example.com")...)
		if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != "/conversations/conv_abc?req="+id {
			t.Fatalf("POST = %d to %q, want 303 to the conversation", rec.Code, rec.Header().Get("Location"))
		}
	}
	want := []ReplyRequest{{TenantID: "acme-01", PhoneNumberID: "106540352201", ConversationID: "conv_abc", To: "6281234567890",
		Text: "We are on it", IdempotencyKey: "console-" + id, Operator: "alice@example.com"}}
	if diff := cmp.Diff(want, f.replier.calls); diff != "" {
		t.Errorf("replies (-want, +got):\n%s", diff)
	}
	e := f.audit.entries[id]
	if e.Operator != "alice@example.com" || e.Action != "reply" || e.State != store.AuditDone || e.Target != "conv_abc" || e.TenantID != "acme-01" {
		t.Errorf("audit entry = %+v", e)
	}
	if strings.Contains(e.Result, "We are on it") {
		t.Errorf("audit entry holds the message text: %+v", e)
	}
	// The page the operator lands on says what happened.
	_, body := f.get(t, "/conversations/conv_abc?req="+id)
	if !strings.Contains(body, `id="flash"`) || !strings.Contains(body, "reply: done — message msg_1 queued") {
		t.Errorf("no outcome on the page:\n%s", body)
	}
}

func TestReplyFailureIsAuditedAndShown(t *testing.T) {
	t.Parallel()
	f := newFixture(t, false)
	f.deps.Replier = NotAvailable{}
	f.rebuild()
	id := newRequestID()
	f.post(t, "/conversations/conv_abc/reply", url.Values{RequestIDField: {id}, "text": {"hello"}})
	if e := f.audit.entries[id]; e.State != store.AuditFailed || e.Error != "not available in this deployment yet" {
		t.Errorf("audit entry = %+v, want failed: not available", e)
	}
	_, body := f.get(t, "/conversations/conv_abc?req="+id)
	if !strings.Contains(body, "reply: failed — not available in this deployment yet") {
		t.Errorf("the failure is not shown:\n%s", body)
	}
}

func TestAssignAndClose(t *testing.T) {
	t.Parallel()
	f := newFixture(t, false)
	hdr := f.as(t, "carol@example.com")
	for _, p := range []string{"/conversations/conv_abc/assign", "/conversations/conv_abc/close"} {
		if rec := f.post(t, p, url.Values{RequestIDField: {newRequestID()}}, hdr...); rec.Code != http.StatusSeeOther {
			t.Fatalf("POST %s = %d", p, rec.Code)
		}
	}
	_, body := f.get(t, "/conversations/conv_abc")
	for _, w := range []string{`id="assignee">carol@example.com<`, `id="conv-status">closed<`, `id="close" disabled`} {
		if !strings.Contains(body, w) {
			t.Errorf("conversation page lacks %q", w)
		}
	}
	if rec := f.post(t, "/conversations/conv_nope/close", url.Values{RequestIDField: {newRequestID()}}); rec.Code != http.StatusNotFound {
		t.Errorf("close a missing conversation = %d, want 404", rec.Code)
	}
}

func TestReplayOncePerRequestID(t *testing.T) {
	t.Parallel()
	f := newFixture(t, false)
	id := newRequestID()
	for range 2 {
		rec := f.post(t, "/failures/dl1/replay", url.Values{RequestIDField: {id}})
		if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != "/failures?req="+id {
			t.Fatalf("POST = %d to %q", rec.Code, rec.Header().Get("Location"))
		}
	}
	if diff := cmp.Diff([]string{"dl1"}, f.replay.calls); diff != "" {
		t.Errorf("replays (-want, +got):\n%s", diff)
	}
	_, body := f.get(t, "/failures?req="+id)
	if !strings.Contains(body, "replay: done — replay task replay-dl1 created; outbound record reopened (was failed)") {
		t.Errorf("outcome not shown:\n%s", body)
	}
	if rec := f.post(t, "/failures/nope/replay", url.Values{RequestIDField: {newRequestID()}}); rec.Code != http.StatusNotFound {
		t.Errorf("replay a missing dead letter = %d, want 404", rec.Code)
	}
}

func TestReconnectShowsTheLink(t *testing.T) {
	t.Parallel()
	f := newFixture(t, false)
	id := newRequestID()
	rec := f.post(t, "/tenants/acme-01/reconnect", url.Values{RequestIDField: {id}})
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `id="connect-link" href="http://127.0.0.1:9/integrations/meta/whatsapp/connect?state=acme-01"`) {
		t.Fatalf("POST reconnect = %d:\n%s", rec.Code, rec.Body.String())
	}
	if e := f.audit.entries[id]; e.Action != "reconnect" || e.State != store.AuditDone || strings.Contains(e.Result+e.Error, "state=") {
		t.Errorf("audit entry = %+v: want done, without the link", e)
	}

	f.deps.LinkMaker = nil // NotAvailable
	f.rebuild()
	rec = f.post(t, "/tenants/acme-01/reconnect", url.Values{RequestIDField: {newRequestID()}})
	if !strings.Contains(rec.Body.String(), `id="connect-link-error">No link: not available in this deployment yet<`) {
		t.Errorf("placeholder: no explanation:\n%s", rec.Body.String())
	}
}

func TestStaticAssetsAreEmbedded(t *testing.T) {
	t.Parallel()
	f := newFixture(t, true)
	for _, p := range []string{"/static/htmx.min.js", "/static/console.css"} {
		code, body := f.get(t, p)
		if code != http.StatusOK || len(body) < 100 {
			t.Errorf("GET %s = %d, %d bytes", p, code, len(body))
		}
	}
	if code, _ := f.get(t, "/healthz"); code != http.StatusOK {
		t.Errorf("GET /healthz = %d", code)
	}
}
