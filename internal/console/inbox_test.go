package console

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/wapipe/wapipe/internal/keyedid"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/taskqueue"
)

func TestInboxFiltersAndRows(t *testing.T) {
	t.Parallel()
	f := newFixture(t, false)
	now := fixedNow
	add := func(c store.Conversation, msgs ...store.Message) {
		c.TenantID, c.PhoneNumberID = "acme-02", "106540352202"
		if c.Status == "" {
			c.Status = store.ConversationOpen
		}
		f.convs.convs = append(f.convs.convs, c)
		f.convs.msgs[c.ID] = msgs
	}
	add(store.Conversation{ID: "conv_waiting", ContactName: "Bu Sari", Contact: "6281230000002", LastMessageAt: now.Add(-time.Minute)},
		store.Message{Direction: store.DirectionIn, Text: "Where is my bus?", Timestamp: now.Add(-2 * time.Minute).Unix()},
		store.Message{Direction: store.DirectionIn, Text: "Hello??", Timestamp: now.Add(-time.Minute).Unix()})
	add(store.Conversation{ID: "conv_answered", ContactName: "Pak Budi", Contact: "6281230000003", AssignedTo: "carol@example.com",
		LastMessageAt: now.Add(-2 * time.Minute)},
		store.Message{Direction: store.DirectionIn, Text: "hi", Timestamp: now.Add(-3 * time.Minute).Unix(),
			Replies: []store.Reply{{IdempotencyKey: "k", Body: "Hello, how can we help?"}}})
	hdr := f.as(t, "carol@example.com")
	cases := []struct {
		path      string
		want, not []string
	}{
		{"/tenants/acme-02/inbox", []string{`data-conversation="conv_waiting"`, `data-conversation="conv_answered"`, "Hello??",
			`<span class="badge unread"`, ">2</span>", "needs reply", "↩ </span>Hello, how can we help?", "@ carol@example.com",
			`data-filter="open" class="current"`}, []string{"6281230000002"}},
		{"/tenants/acme-02/inbox?filter=mine", []string{`data-conversation="conv_answered"`, `data-filter="mine" class="current"`},
			[]string{`data-conversation="conv_waiting"`}},
		{"/tenants/acme-02/inbox?filter=needs_reply", []string{`data-conversation="conv_waiting"`},
			[]string{`data-conversation="conv_answered"`}},
		{"/tenants/acme-02/inbox/list?filter=needs_reply", []string{`<div id="conv-list"`, `data-conversation="conv_waiting"`},
			[]string{"<html", `data-conversation="conv_answered"`}},
		{"/conversations/conv_waiting?filter=needs_reply", []string{`class="split has-conv"`, `class="conv selected needs-reply" data-conversation="conv_waiting"`,
			`id="reply-form"`, `hx-get="/conversations/conv_waiting/live?v=`}, []string{`data-conversation="conv_answered"`}},
	}
	for _, tc := range cases {
		code, body := f.get(t, tc.path, hdr...)
		if code != http.StatusOK {
			t.Errorf("GET %s = %d", tc.path, code)
			continue
		}
		checkBody(t, "GET "+tc.path, body, tc.want, tc.not)
	}
	if f.convs.listed.AssignedTo != "" {
		t.Errorf("the last list asked for assignee %q", f.convs.listed.AssignedTo)
	}
}

func TestInboxSearch(t *testing.T) {
	t.Parallel()
	f := newFixture(t, false)
	// The sample tenant's conversation with Pak Agus, stored under the id the worker derives
	// from his contact (keyed: nobody computes it from his number).
	id := store.ConversationID(keyedid.Dev(), "acme-01", "106540352201", "ct_agus")
	f.convs.convs = append(f.convs.convs, store.Conversation{ID: id, TenantID: "acme-01", PhoneNumberID: "106540352201",
		ContactID: "ct_agus", Contact: "6281234567890", ContactName: "Pak Agus", Status: store.ConversationOpen})
	f.convs.msgs[id] = []store.Message{{Direction: store.DirectionIn, Text: "Jadwal bus besok?", Timestamp: fixedNow.Unix()}}
	f.convs.convs = append(f.convs.convs, store.Conversation{ID: "conv_other", TenantID: "acme-02", ContactName: "Pak Agus"})
	f.convs.msgs["conv_other"] = []store.Message{{Direction: store.DirectionIn, Text: "Jadwal?"}}
	cases := []struct {
		name, q   string
		want, not []string
	}{
		{"by number as people write it", "+62 812-3456-7890", []string{`data-conversation="` + id + `"`, "number ending 7890"},
			[]string{"6281234567890", "conv_other"}},
		{"by a number with no conversation", "+1 555 000 1111", []string{"Nothing found."}, []string{"conv_"}},
		{"by name, any case of the first letter", "pak", []string{`data-conversation="` + id + `"`}, []string{"conv_other"}},
		{"by the start of a message", "Jadwal", []string{`data-conversation="` + id + `"`}, []string{"conv_other"}},
		{"a ph_ ref is one-way", "ph_0123456789ab", []string{"one-way"}, []string{"data-conversation="}},
		{"empty", "", []string{"Type a phone number"}, []string{"data-conversation="}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec := f.post(t, "/tenants/acme-01/inbox/search", url.Values{"q": {tc.q}})
			body := rec.Body.String()
			if rec.Code != http.StatusOK {
				t.Fatalf("POST search = %d:\n%s", rec.Code, body)
			}
			checkBody(t, "search "+tc.q, body, tc.want, tc.not)
		})
	}
	// A search is a POST behind the CSRF token, so the number is never in a URL.
	rec := f.post(t, "/tenants/acme-01/inbox/search", url.Values{"q": {"6281234567890"}, CSRFField: {strings.Repeat("B", 43)}})
	if rec.Code != http.StatusForbidden {
		t.Errorf("search without the CSRF token = %d, want 403", rec.Code)
	}
}

// TestConversationLive: the thread's refresh answers 204 while nothing changed, and the new
// thread once a message came.
func TestConversationLive(t *testing.T) {
	t.Parallel()
	f := newFixture(t, false)
	_, page := f.get(t, "/conversations/conv_abc")
	m := regexp.MustCompile(`data-version="([^"]+)"`).FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no thread version on the page:\n%s", page)
	}
	version := m[1]
	code, body := f.get(t, "/conversations/conv_abc/live?v="+version)
	if code != http.StatusNoContent || body != "" {
		t.Errorf("unchanged thread = %d %q, want 204 and nothing", code, body)
	}
	f.convs.mu.Lock()
	f.convs.msgs["conv_abc"] = append(f.convs.msgs["conv_abc"], store.Message{Direction: store.DirectionIn, MessageID: "wamid.new",
		Type: "text", Text: "One more thing", Timestamp: fixedNow.Unix()})
	f.convs.mu.Unlock()
	code, body = f.get(t, "/conversations/conv_abc/live?v="+version)
	if code != http.StatusOK || !strings.Contains(body, "One more thing") || !strings.Contains(body, `<div id="thread"`) || strings.Contains(body, "<html") {
		t.Errorf("changed thread = %d:\n%s", code, body)
	}
}

// TestConversationShowsMediaAndAuthors: a media message says what it was (never its bytes: no
// image proxy), the operator's reply is marked, and no bubble holds blank lines.
func TestConversationShowsMediaAndAuthors(t *testing.T) {
	t.Parallel()
	f := newFixture(t, false)
	f.convs.msgs["conv_abc"] = append(f.convs.msgs["conv_abc"],
		store.Message{Direction: store.DirectionIn, MessageID: "wamid.doc", Type: "document", Timestamp: fixedNow.Unix(),
			Media: &store.Media{MIMEType: "application/pdf", SHA256: "abc", Size: 2_400_000, Caption: "the invoice", Filename: "inv-42.pdf"}},
		store.Message{Direction: store.DirectionIn, MessageID: "wamid.img", Type: "image", Text: "bus 3 dent", Timestamp: fixedNow.Unix(),
			Media: &store.Media{MIMEType: "image/jpeg", Size: 48_000, Caption: "bus 3 dent"}},
		store.Message{Direction: store.DirectionOut, MessageID: "console-9", Type: "text", Text: "\n\nGot it, thanks\n\n\n\nAna\n",
			Timestamp: fixedNow.Unix() + 1, Event: operatorReplyEvent, Operator: "ana@example.com"})
	code, body := f.get(t, "/conversations/conv_abc")
	if code != http.StatusOK {
		t.Fatalf("GET = %d", code)
	}
	for _, w := range []string{`<span class="kind">document</span> · application/pdf · 2.4 MB · <span class="filename">inv-42.pdf</span>`,
		`<div class="text caption">the invoice</div>`, `data-author="operator"><div class="author">Operator ana@example.com</div>`,
		`<div class="text">Got it, thanks` + "\n\nAna</div>"} {
		if !strings.Contains(body, w) {
			t.Errorf("conversation lacks %q:\n%s", w, body)
		}
	}
	if n := strings.Count(body, "bus 3 dent"); n != 1 {
		t.Errorf("a caption kept as the text too is shown %d times, want once", n)
	}
	if strings.Contains(body, "<img") {
		t.Error("an image is shown: there is no media proxy")
	}
}

func TestOverviewAttentionAndBacklogs(t *testing.T) {
	t.Parallel()
	f := newFixture(t, false)
	f.tenants.recs = append(f.tenants.recs, store.TenantRecord{Tenant: sampleTenant("acme-03", nil), AuthStatus: store.AuthNoToken})
	f.queues.stats["wa-out-acme-02"] = tenantQueueStats(9)
	f.rebuild()
	_, body := f.get(t, "/")
	start := strings.Index(body, `id="attention"`)
	end := strings.Index(body[start:], "</ul>")
	attention := body[start : start+end]
	for _, w := range []string{`data-tenant="acme-01"`, `data-tenant="acme-03"`, "no_token"} {
		if !strings.Contains(attention, w) {
			t.Errorf("attention lacks %q:\n%s", w, attention)
		}
	}
	if strings.Contains(attention, `data-tenant="acme-02"`) {
		t.Errorf("a healthy tenant needs attention:\n%s", attention)
	}
	for _, w := range []string{`data-tenant-queue="acme-01"`, `data-tenant-queue="acme-02"`, `<td class="num backlog">9</td>`, `<td class="oldest">2m0s ago</td>`} {
		if !strings.Contains(body, w) {
			t.Errorf("backlogs lack %q", w)
		}
	}
	// One p95 figure: the hour's, among the figures; the chart's legend names the line only.
	if n := len(regexp.MustCompile(`<dt>[^<]*p95[^<]*</dt>`).FindAllString(body, -1)); n != 1 {
		t.Errorf("%d p95 figures, want 1", n)
	}
	legend := body[strings.Index(body, `<p class="legend">`):]
	legend = legend[:strings.Index(legend, "</p>")]
	if strings.Contains(legend, " ms") {
		t.Errorf("the legend repeats a latency figure: %s", legend)
	}
}

func TestFailuresSayWhatCanBeReplayed(t *testing.T) {
	t.Parallel()
	outBody := `{"idempotency_key":"reply-ok","phone_number_id":"106540352202","to":"6281230000009","tenant_id":"acme-02"}`
	cases := []struct {
		name string
		d    store.DeadLetter
		rec  *store.OutboundRecord
		auth string
		why  string
	}{
		{"a temporary failure", store.DeadLetter{Path: "/internal/process_outbound", Body: outBody, Reason: "temporary"}, nil, store.AuthOK, ""},
		{"a permanent error", store.DeadLetter{Path: "/internal/process_outbound", Body: outBody, Reason: "permanent"}, nil, store.AuthOK,
			"permanent error: a replay fails the same way until its cause is fixed (then wapipe replay dlx)"},
		{"sent already", store.DeadLetter{Path: "/internal/process_outbound", Body: outBody},
			&store.OutboundRecord{State: store.OutboundSent}, store.AuthOK, "the reply was sent already: a replay would send nothing"},
		{"tenant needs reauth", store.DeadLetter{Path: "/internal/process_outbound", Body: outBody}, nil, store.AuthNeedsReauth,
			"the tenant's token is needs_reauth: reconnect it first (its sends wait, parked)"},
		{"no body", store.DeadLetter{Path: "/internal/process_inbound"}, nil, "", "no task body kept: nothing to replay"},
		{"unknown route", store.DeadLetter{Path: "/internal/nope", Body: "{}"}, nil, "", "unknown route: nothing to replay"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, false)
			tc.d.ID = "dlx"
			f.dls.list = []store.DeadLetter{tc.d}
			for i := range f.tenants.recs {
				if f.tenants.recs[i].Tenant.ID == "acme-02" {
					f.tenants.recs[i].AuthStatus = tc.auth
				}
			}
			if tc.rec != nil {
				f.out.recs["reply-ok"] = *tc.rec
			}
			f.rebuild()
			_, body := f.get(t, "/failures")
			if tc.why == "" {
				if !strings.Contains(body, `class="btn primary replay"`) {
					t.Errorf("no Replay button:\n%s", body)
				}
				return
			}
			if strings.Contains(body, `class="btn primary replay"`) || !strings.Contains(body, "Not replayable: "+strings.ReplaceAll(tc.why, "'", "&#39;")) {
				t.Errorf("want no Replay and %q:\n%s", tc.why, body)
			}
			rec := f.post(t, "/failures/dlx/replay", url.Values{RequestIDField: {newRequestID()}})
			if rec.Code != http.StatusConflict || replays(f) != 0 {
				t.Errorf("POST replay = %d, %d replays; want 409 and none", rec.Code, replays(f))
			}
		})
	}
	// Links to the tenant and the conversation, and errors one per line.
	f := newFixture(t, false)
	f.dls.list = []store.DeadLetter{{ID: "dly", Path: "/internal/process_outbound", Body: outBody, LastError: "graph 503\ntimeout", RetryCount: 2}}
	f.rebuild()
	_, body := f.get(t, "/failures")
	conv := store.ConversationID(keyedid.Dev(), "acme-02", "106540352202", "ct_nine")
	for _, w := range []string{`<li>graph 503</li><li>timeout</li>`, "3 attempts", `href="/tenants/acme-02"`, `href="/conversations/` + conv + `"`, "<code class=\"dl-id\" title=\"dead letter id\">dly</code>"} {
		if !strings.Contains(body, w) {
			t.Errorf("failures lack %q:\n%s", w, body)
		}
	}
}

func replays(f *fixture) int {
	f.replay.mu.Lock()
	defer f.replay.mu.Unlock()
	return len(f.replay.calls)
}

func tenantQueueStats(n int64) taskqueue.QueueStats {
	return taskqueue.QueueStats{Tasks: n, OldestArrival: fixedNow.Add(-2 * time.Minute)}
}

// TestConversationWithoutTenant: a conversation of the default number, or of a tenant removed
// since, is still shown.
func TestConversationWithoutTenant(t *testing.T) {
	t.Parallel()
	f := newFixture(t, false)
	f.convs.convs = append(f.convs.convs,
		store.Conversation{ID: "conv_default", Contact: "6281230000077", Status: store.ConversationOpen},
		store.Conversation{ID: "conv_gone", TenantID: "gone-01", Contact: "6281230000078", Status: store.ConversationOpen})
	f.convs.msgs["conv_default"] = []store.Message{{Direction: store.DirectionIn, Text: "hello default", Timestamp: fixedNow.Unix()}}
	for path, want := range map[string][]string{
		"/conversations/conv_default": {"hello default", "belongs to no tenant"},
		"/conversations/conv_gone":    {"gone-01 (no such tenant now)", `data-conversation="conv_gone"`},
	} {
		code, body := f.get(t, path)
		if code != http.StatusOK {
			t.Errorf("GET %s = %d:\n%s", path, code, body)
			continue
		}
		checkBody(t, "GET "+path, body, want, nil)
	}
}
