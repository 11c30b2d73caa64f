package console

import (
	"context"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wapipe/wapipe/internal/contact"
	"github.com/wapipe/wapipe/internal/keyedid"
	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/internal/logging/logcheck"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/tenant"
	"github.com/wapipe/wapipe/internal/workerclient"
)

// The people of the identity tests, on acme-01's number: Julián writes with a username and
// never shared his phone (a BSUID and, his business being enrolled, a parent BSUID); Bu Sari
// writes with her phone, her BSUID known beside it.
const (
	julianBSUID    = "CO.1047385771169864"
	julianParent   = "CO.ENT.11815799212886844830"
	julianUsername = "Julianzlc"
	julianWamid    = "wamid.HBgMQ08xMDQ3Mzg1NzcxMTY5ODY0FQIAEhggQTk2"
	sariPhone      = "6281230000002"
	sariBSUID      = "ID.99887766554433"
	sariUsername   = "sari.bus"
	sariWamid      = "wamid.HBgNNjI4MTIzMDAwMDAwMhUCABIYIEFCQ0RFRg"
	peopleNumber   = "106540352201"
	// Dead letters' ids, as store.DocID makes them.
	deadLetterID       = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	actionDeadLetterID = "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"
)

// people adds Julián and Bu Sari to the fixture: contacts, conversations and messages as the
// worker stores them, and two dead letters naming them (an inbound event of Bu Sari's, an
// action of Julián's). It returns the conversation ids.
func addPeople(f *fixture) (julian, sari string) {
	dev := keyedid.Dev()
	julian = store.ConversationID(dev, "acme-01", peopleNumber, "ct_julian")
	sari = store.ConversationID(dev, "acme-01", peopleNumber, "ct_sari")
	f.contacts.add(store.Contact{ID: "ct_julian", TenantID: "acme-01", Identity: contact.Identity{UserID: julianBSUID,
		ParentUserID: julianParent, Username: julianUsername, Name: "Julián"}})
	f.contacts.add(store.Contact{ID: "ct_sari", TenantID: "acme-01", Identity: contact.Identity{WaID: sariPhone, UserID: sariBSUID,
		Username: sariUsername, Name: "Bu Sari"}})
	f.convs.mu.Lock()
	defer f.convs.mu.Unlock()
	f.convs.convs = append(f.convs.convs,
		store.Conversation{ID: julian, TenantID: "acme-01", PhoneNumberID: peopleNumber, ContactID: "ct_julian", UserID: julianBSUID,
			Username: julianUsername, ContactName: "Julián", Status: store.ConversationOpen, LastMessageAt: fixedNow.Add(-2 * time.Minute),
			LastInboundAt: fixedNow.Add(-2 * time.Minute)},
		store.Conversation{ID: sari, TenantID: "acme-01", PhoneNumberID: peopleNumber, ContactID: "ct_sari", Contact: sariPhone,
			UserID: sariBSUID, Username: sariUsername, ContactName: "Bu Sari", Status: store.ConversationOpen,
			LastMessageAt: fixedNow.Add(-3 * time.Minute), LastInboundAt: fixedNow.Add(-3 * time.Minute)})
	f.convs.msgs[julian] = []store.Message{
		{Direction: store.DirectionIn, MessageID: julianWamid, Type: "text", Text: "Hola, quiero reservar", Timestamp: fixedNow.Add(-3 * time.Minute).Unix()},
		{Direction: store.DirectionIn, MessageID: julianWamid + "2", Type: "image", Timestamp: fixedNow.Add(-2 * time.Minute).Unix(),
			Media: &store.Media{ID: "media-777", MIMEType: "image/jpeg", Size: 4000}},
	}
	f.convs.msgs[sari] = []store.Message{
		{Direction: store.DirectionIn, MessageID: sariWamid, Type: "text", Text: "Where is my bus?", Timestamp: fixedNow.Add(-3 * time.Minute).Unix()},
	}
	f.dls.list = append(f.dls.list,
		store.DeadLetter{ID: deadLetterID, Path: "/internal/process_inbound", InboundEventID: sariWamid, LastError: "boom", CreatedAt: fixedNow,
			Body: `{"payload":{"entry":[{"changes":[{"value":{"metadata":{"phone_number_id":"` + peopleNumber + `"},` +
				`"messages":[{"from":"` + sariPhone + `","from_user_id":"` + sariBSUID + `","id":"` + sariWamid + `"}]}}]}]}}`},
		store.DeadLetter{ID: actionDeadLetterID, Path: "/internal/process_action", Queue: "wa-out-acme-01", LastError: "business answered 500",
			CreatedAt: fixedNow, Body: `{"action_id":"act_9","tenant_id":"acme-01","phone_number_id":"` + peopleNumber + `","user_id":"` +
				julianBSUID + `","message_id":"` + julianWamid + `"}`})
	return julian, sari
}

// usernameConversations is the fake conversation store with the username query the store does
// not have yet (UsernameSearcher): as stored, case counts.
type usernameConversations struct {
	*fakeConversations
	asked []string
}

func (u *usernameConversations) ConversationsByUsernamePrefix(_ context.Context, tenantID, prefix string, _ int) ([]store.Conversation, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.asked = append(u.asked, prefix)
	var out []store.Conversation
	for _, c := range u.convs {
		if c.TenantID == tenantID && c.Username != "" && strings.HasPrefix(c.Username, prefix) {
			out = append(out, c)
		}
	}
	return out, u.err
}

// TestInboxSearchFindsPeople: the inbox search finds a contact by name, username, BSUID, parent
// BSUID or phone, through the tenant's contacts for an identifier; it never shows back a phone or
// a BSUID, and refs are one-way. With the store's username query and without it (the console then
// looks through the latest conversations).
func TestInboxSearchFindsPeople(t *testing.T) {
	t.Parallel()
	for _, store := range []string{"username query", "scan"} {
		t.Run(store, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, false)
			julian, sari := addPeople(f)
			var uc *usernameConversations
			if store == "username query" {
				uc = &usernameConversations{fakeConversations: f.convs}
				f.deps.Conversations = uc
			}
			var logs syncBuffer
			f.deps.Logger = logging.New(&logs, logging.Options{Hasher: logging.DevHasher()})
			f.rebuild()
			cases := []struct {
				name, q string
				found   []string
				note    string
				// shown says the query is shown back in the search box.
				shown bool
			}{
				{"name", "Julián", []string{julian}, "whose name or username", true},
				{"name in lower case", "bu", []string{sari}, "whose name or username", true},
				{"username with @", "@" + julianUsername, []string{julian}, "whose username begins", true},
				{"username in another case", "@julianz", []string{julian}, "whose username begins", true},
				{"username without @", "sari.b", []string{sari}, "whose name or username", true},
				{"BSUID", julianBSUID, []string{julian}, "this WhatsApp user id", false},
				{"parent BSUID", julianParent, []string{julian}, "this WhatsApp user id", false},
				{"BSUID of a contact with a phone", sariBSUID, []string{sari}, "this WhatsApp user id", false},
				{"phone as people write it", "+62 812-3000-0002", []string{sari}, "number ending 0002", false},
				{"phone as Meta writes it", sariPhone, []string{sari}, "number ending 0002", false},
				{"an unknown BSUID", "US.13491208655302741918", nil, "this WhatsApp user id", false},
				{"an unknown username", "@nobody", nil, "whose username begins", true},
				{"a us_ ref is one-way", logging.DevHasher().User(julianBSUID), nil, "one-way", true},
				{"a un_ ref is one-way", logging.DevHasher().Username(julianUsername), nil, "one-way", true},
			}
			for _, tc := range cases {
				rec := f.post(t, "/tenants/acme-01/inbox/search", url.Values{"q": {tc.q}})
				body := rec.Body.String()
				if rec.Code != http.StatusOK {
					t.Errorf("%s: POST search = %d:\n%s", tc.name, rec.Code, body)
					continue
				}
				got := regexp.MustCompile(`data-conversation="([^"]+)"`).FindAllStringSubmatch(body, -1)
				var ids []string
				for _, m := range got {
					ids = append(ids, m[1])
				}
				if diff := cmp.Diff(tc.found, ids); diff != "" {
					t.Errorf("%s: found (-want, +got):\n%s", tc.name, diff)
				}
				if !strings.Contains(html.UnescapeString(body), tc.note) {
					t.Errorf("%s: the note does not say %q:\n%s", tc.name, tc.note, body)
				}
				if shown := strings.Contains(body, `value="`+html.EscapeString(tc.q)+`"`); shown != tc.shown {
					t.Errorf("%s: the query shown back: %v, want %v", tc.name, shown, tc.shown)
				}
				for _, never := range []string{julianBSUID, julianParent, sariBSUID, sariPhone} {
					if strings.Contains(body, never) {
						t.Errorf("%s: the page shows %q", tc.name, never)
					}
				}
			}
			if uc != nil && !slices.Contains(uc.asked, "Julianz") {
				t.Errorf("the username query was asked %q: want the prefix with a capital first letter too", uc.asked)
			}
			out := logs.String()
			if n := logcheck.Check(t, out, []string{sariPhone}, []string{julianBSUID, julianParent, sariBSUID, "@" + julianUsername,
				"@" + sariUsername, julianWamid, sariWamid}); n == 0 {
				t.Error("no log lines")
			}
			for _, ev := range []string{"console_search_user_id", "console_search_username", "console_search_number"} {
				if !strings.Contains(out, ev) {
					t.Errorf("logs lack %s:\n%s", ev, out)
				}
			}
		})
	}
}

// exactUsernames is the fake conversation store with the store's exact username query
// (UsernameFinder) and no prefix query: every tenant's conversations, as Meta sent the name.
type exactUsernames struct{ *fakeConversations }

func (e exactUsernames) ConversationsByUsername(_ context.Context, username string, _ int) ([]store.Conversation, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []store.Conversation
	for _, c := range e.convs {
		if c.Username == username {
			out = append(out, c)
		}
	}
	return out, e.err
}

// TestUsernameScanSaysItIsPartial: without the store's username prefix query, a tenant with more
// conversations than the console looks through is told the search looked at the latest ones; a
// username typed whole is still found beyond them by the store's exact query.
func TestUsernameScanSaysItIsPartial(t *testing.T) {
	t.Parallel()
	f := newFixture(t, false)
	for i := range usernameScan {
		f.convs.convs = append(f.convs.convs, store.Conversation{ID: fmt.Sprintf("conv_many%04d", i), TenantID: "acme-01",
			Status: store.ConversationOpen})
	}
	julian, _ := addPeople(f) // listed after the 500 others: beyond the scan
	f.deps.Conversations = exactUsernames{f.convs}
	f.rebuild()
	for _, tc := range []struct {
		q     string
		found bool
	}{{"@julianz", false}, {"@" + julianUsername, true}, {"@JULIANZLC", true}} {
		body := f.post(t, "/tenants/acme-01/inbox/search", url.Values{"q": {tc.q}}).Body.String()
		if !strings.Contains(body, "among the latest 500 conversations only") {
			t.Errorf("%s: no word of a partial search:\n%s", tc.q, body)
		}
		if found := strings.Contains(body, `data-conversation="`+julian+`"`); found != tc.found {
			t.Errorf("%s: found %v, want %v", tc.q, found, tc.found)
		}
	}
}

// TestConversationShowsPeopleNotIDs: a conversation shows its contact's profile name and
// username and the phone's last digits where it is known, never the phone or the BSUID; a contact
// known by BSUID alone is offered the request for their phone number, a contact with a phone is
// not.
func TestConversationShowsPeopleNotIDs(t *testing.T) {
	t.Parallel()
	f := newFixture(t, false)
	julian, sari := addPeople(f)
	cases := []struct {
		name, path string
		want, not  []string
	}{
		{"known by BSUID alone", "/conversations/" + julian,
			[]string{`<h2 id="contact">Julián</h2>`, `id="contact-username">@Julianzlc<`, `id="no-phone"`, `id="ask-phone"`, `id="request-phone"`,
				`action="/conversations/` + julian + `/request-phone"`, `value="` + html.EscapeString(DefaultPhoneRequest) + `"`,
				"<title>Conversation with Julián @Julianzlc"},
			[]string{julianBSUID, julianParent, "…1864", `id="contact-phone"`}},
		{"with a phone", "/conversations/" + sari,
			[]string{`<h2 id="contact">Bu Sari</h2>`, "<title>Conversation with Bu Sari @sari.bus (…0002)", `id="contact-phone">…0002<`, `id="contact-username">@sari.bus<`},
			[]string{sariPhone, sariBSUID, `id="ask-phone"`, `id="no-phone"`}},
		{"the list", "/tenants/acme-01/inbox",
			[]string{">Julián @Julianzlc<", ">Bu Sari @sari.bus (…0002)<"},
			[]string{julianBSUID, sariPhone, sariBSUID}},
	}
	for _, tc := range cases {
		code, body := f.get(t, tc.path)
		if code != http.StatusOK {
			t.Errorf("%s: GET %s = %d", tc.name, tc.path, code)
			continue
		}
		checkBody(t, tc.name, body, tc.want, tc.not)
	}
}

// TestRepliesGoByRecipient: an operator's reply to a contact known by BSUID alone goes by
// recipient (the parent BSUID of an enrolled business), to one with a phone by phone; the request
// for a phone number goes to the BSUID-only contact only, once per request id, audited.
func TestRepliesGoByRecipient(t *testing.T) {
	t.Parallel()
	f := newFixture(t, false)
	julian, sari := addPeople(f)
	f.rebuild()
	for _, p := range []string{julian, sari} {
		if rec := f.post(t, "/conversations/"+p+"/reply", url.Values{RequestIDField: {newRequestID()}, "text": {"On it"}}); rec.Code != http.StatusSeeOther {
			t.Fatalf("reply = %d:\n%s", rec.Code, rec.Body.String())
		}
	}
	ask := newRequestID()
	for range 2 {
		if rec := f.post(t, "/conversations/"+julian+"/request-phone", url.Values{RequestIDField: {ask}, "text": {"  "}}); rec.Code != http.StatusSeeOther ||
			rec.Header().Get("Location") != "/conversations/"+julian+"?req="+ask {
			t.Fatalf("request phone = %d to %q", rec.Code, rec.Header().Get("Location"))
		}
	}
	if rec := f.post(t, "/conversations/"+sari+"/request-phone", url.Values{RequestIDField: {newRequestID()}}); rec.Code != http.StatusBadRequest ||
		!strings.Contains(rec.Body.String(), "known already") {
		t.Errorf("request the phone of a contact with one = %d", rec.Code)
	}
	if rec := f.post(t, "/conversations/"+julian+"/request-phone",
		url.Values{RequestIDField: {newRequestID()}, "text": {strings.Repeat("x", MaxPhoneRequestRunes+1)}}); rec.Code != http.StatusBadRequest {
		t.Errorf("a text too long = %d", rec.Code)
	}
	f.replier.mu.Lock()
	calls := slices.Clone(f.replier.calls)
	f.replier.mu.Unlock()
	var got []ReplyRequest
	for _, c := range calls {
		c.IdempotencyKey, c.Operator = "", ""
		got = append(got, c)
	}
	want := []ReplyRequest{
		{TenantID: "acme-01", PhoneNumberID: peopleNumber, ConversationID: julian, Recipient: julianParent, Text: "On it"},
		{TenantID: "acme-01", PhoneNumberID: peopleNumber, ConversationID: sari, To: sariPhone, Text: "On it"},
		{TenantID: "acme-01", PhoneNumberID: peopleNumber, ConversationID: julian, Recipient: julianParent, Text: DefaultPhoneRequest,
			RequestContactInfo: true},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("sends (-want, +got):\n%s", diff)
	}
	if e := f.audit.entries[ask]; e.Action != "request_phone" || e.State != store.AuditDone || e.Target != julian ||
		strings.Contains(e.Result+e.Target, julianBSUID) {
		t.Errorf("audit entry %+v", e)
	}
	_, body := f.get(t, "/conversations/"+julian+"?req="+ask)
	if !strings.Contains(body, "request_phone: done — phone number request msg_") {
		t.Errorf("the outcome is not shown:\n%s", body)
	}
}

// TestTenantPageSaysWhoIsKnownByPhoneOnly: a member the tenant file lists by phone, with no BSUID
// known for that phone yet, is marked: should they write by BSUID alone they are a stranger, and
// the page says how to ask for their number. A member whose BSUID is known, or listed by user id,
// is not.
func TestTenantPageSaysWhoIsKnownByPhoneOnly(t *testing.T) {
	t.Parallel()
	withMembers := func(f *fixture) {
		f.tenants.recs[0].Tenant.Members = []tenant.Member{
			{WaID: "6281234567890", Role: tenant.RoleOwner, Name: "Pak Agus"}, // ct_agus: phone only
			{WaID: sariPhone, Role: tenant.RoleAdmin, Name: "Bu Sari"},        // her BSUID is known
			{UserID: julianBSUID, Role: tenant.RoleMember, Name: "Julián"},    // listed by user id
			{WaID: "6289999990001", Role: tenant.RoleMember, Name: "Nobody"},  // never wrote
		}
		addPeople(f)
	}
	runPages(t, []pageCase{
		{name: "marked", path: "/tenants/acme-01", code: http.StatusOK, setup: withMembers,
			want: []string{`Pak Agus (…7890) — owner <span class="tag tag-warn no-user-id"`, `Nobody (…0001) — member <span class="tag tag-warn no-user-id"`,
				`<div class="file-member">Bu Sari (…0002) — admin</div>`, `<div class="file-member">Julián (CO…9864) — member</div>`,
				`id="phone-only-note"`, "REQUEST_CONTACT_INFO", "<code>user_id</code>"},
			not: []string{julianBSUID, sariPhone, "6281234567890"}},
		{name: "none to mark", path: "/tenants/acme-01", code: http.StatusOK,
			setup: func(f *fixture) {
				withMembers(f)
				f.tenants.recs[0].Tenant.Members = f.tenants.recs[0].Tenant.Members[1:3]
			},
			not: []string{`id="phone-only-note"`, "no-user-id"}},
		{name: "contacts unreadable", path: "/tenants/acme-01", code: http.StatusOK,
			setup: func(f *fixture) { f.contacts.err = errBoom }, want: []string{"Pak Agus (…7890)"}, not: []string{`id="phone-only-note"`}},
	})
}

// fakeWorker answers every media request with a PNG.
type fakeWorker struct{}

func (fakeWorker) CopyMedia(context.Context, string, string) (workerclient.Media, error) {
	return workerclient.Media{ContentType: "image/png", ContentLength: -1, Body: io.NopCloser(strings.NewReader("\x89PNG"))}, nil
}

// urlAttr finds the URLs a page names: links, forms, images, scripts and htmx requests.
var urlAttr = regexp.MustCompile(`\b(?:href|action|src|formaction|hx-get|hx-post|hx-put|hx-delete)="([^"]*)"`)

// TestNoURLCarriesAPerson walks every page the console renders for a tenant with a contact
// known by BSUID alone and one with a phone (following each link and live-refresh URL from the
// overview, and the pages the forms answer: searches of every kind, actions' redirects), and
// checks that no URL the pages name, and no redirect, carries a phone number, a BSUID, a username
// or a wamid, and that no page shows a phone number or a BSUID in clear. Its logs name none of
// them either.
func TestNoURLCarriesAPerson(t *testing.T) {
	t.Parallel()
	f := newFixture(t, false)
	julian, sari := addPeople(f)
	f.deps.Worker = fakeWorker{}
	var logs syncBuffer
	f.deps.Logger = logging.New(&logs, logging.Options{Hasher: logging.DevHasher()})
	f.rebuild()

	// In no URL: the identifiers, in any case, and wamids.
	inURL := []string{julianBSUID, julianParent, sariBSUID, sariPhone, "6281234567890", "6289999990000", "6281230000009",
		strings.ToLower(julianUsername), sariUsername, "wamid", "hbgmq08x", "hbgnnji4"}
	// On no page: the identifiers that find a person (usernames are shown: display only).
	onPage := []string{julianBSUID, julianParent, sariBSUID, sariPhone, "6281234567890", "6289999990000", "6281230000009"}
	checkURL := func(from, u string) {
		t.Helper()
		lu := strings.ToLower(u)
		if d, err := url.QueryUnescape(lu); err == nil {
			lu += " " + d
		}
		for _, n := range inURL {
			if strings.Contains(lu, strings.ToLower(n)) {
				t.Errorf("%s names the URL %q, which carries %q", from, u, n)
			}
		}
	}
	visited := map[string]bool{}
	queue := []string{"/", "/tenants", "/failures", "/failures?all=1", "/search"}
	var links int
	page := func(from string, code int, header http.Header, body string) {
		t.Helper()
		if loc := header.Get("Location"); loc != "" {
			checkURL(from+" (redirect)", loc)
			queue = append(queue, loc)
		}
		if !strings.HasPrefix(header.Get("Content-Type"), "text/html") {
			return
		}
		for _, n := range onPage {
			if strings.Contains(body, n) {
				t.Errorf("%s (%d) shows %q", from, code, n)
			}
		}
		for _, m := range urlAttr.FindAllStringSubmatch(body, -1) {
			u := html.UnescapeString(m[1])
			links++
			checkURL(from, u)
			if strings.HasPrefix(u, "/") && !strings.HasPrefix(u, "/static/") {
				queue = append(queue, u)
			}
		}
	}
	get := func(path string) {
		t.Helper()
		req := httpGet(path)
		rec := serve(f, req)
		page("GET "+path, rec.Code, rec.Header(), rec.Body.String())
	}
	crawl := func() {
		for len(queue) > 0 && len(visited) < 400 {
			p := queue[0]
			queue = queue[1:]
			key := p
			if i := strings.Index(p, "req="); i >= 0 {
				key = p[:i] // one flash per page is enough
			}
			if visited[key] {
				continue
			}
			visited[key] = true
			get(p)
		}
	}
	crawl()
	// The pages the forms answer.
	for _, q := range []string{julianBSUID, julianParent, "@" + julianUsername, "julian", sariPhone, "+62 812-3000-0002", sariBSUID, "Bu Sari", "Hola"} {
		rec := f.post(t, "/tenants/acme-01/inbox/search", url.Values{"q": {q}})
		page("POST inbox search "+q, rec.Code, rec.Header(), rec.Body.String())
	}
	for _, q := range []string{"wamid.HBgLFOUND", deadLetterID} {
		rec := f.post(t, "/search", url.Values{"q": {q}})
		page("POST /search", rec.Code, rec.Header(), rec.Body.String())
	}
	for _, p := range []string{"/conversations/" + julian + "/request-phone", "/conversations/" + julian + "/reply",
		"/conversations/" + sari + "/reply", "/conversations/" + sari + "/assign", "/failures/" + deadLetterID + "/replay"} {
		rec := f.post(t, p, url.Values{RequestIDField: {newRequestID()}, "text": {"hello"}})
		page("POST "+p, rec.Code, rec.Header(), rec.Body.String())
	}
	crawl()
	for _, must := range []string{"/conversations/" + julian, "/conversations/" + sari, "/tenants/acme-01/inbox", "/tenants/acme-01",
		"/search?q=" + logging.DevHasher().Ref(sariWamid), "/search?q=" + actionDeadLetterID, "/media/acme-01/media-777?c=" + julian} {
		found := false
		for v := range visited {
			if v == must || strings.HasPrefix(v, must+"?") || strings.HasPrefix(v, must+"&") {
				found = true
			}
		}
		if !found {
			t.Errorf("the walk never reached %s (visited %d pages)", must, len(visited))
		}
	}
	// The failures page links Julián's action by its conversation, found through his BSUID.
	_, body := f.get(t, "/failures")
	if !strings.Contains(body, `href="/conversations/`+julian+`"`) || !strings.Contains(body, `href="/conversations/`+sari+`"`) {
		t.Errorf("the failures page does not link the conversations of the dead letters:\n%s", body)
	}
	t.Logf("visited %d pages, %d URLs", len(visited), links)
	if links < 50 {
		t.Errorf("only %d URLs checked", links)
	}
	if n := logcheck.Check(t, logs.String(), []string{sariPhone, "6281234567890"}, []string{julianBSUID, julianParent, sariBSUID,
		"@" + julianUsername, "@" + sariUsername, julianWamid, sariWamid}); n == 0 {
		t.Error("no log lines")
	}
}

func serve(f *fixture, req *http.Request) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	f.handler.ServeHTTP(rec, req)
	return rec
}

func httpGet(path string) *http.Request {
	req, _ := http.NewRequest(http.MethodGet, "http://example.com"+path, nil)
	req.RemoteAddr = testLoopback
	return req
}

// TestTheContactIsTheTruth: a conversation still naming the phone its contact had before a change
// of number shows and answers the contact as it is now (by BSUID, the old number being perhaps
// someone else's), and a conversation whose contact cannot be read shows what it recorded.
func TestTheContactIsTheTruth(t *testing.T) {
	t.Parallel()
	f := newFixture(t, false)
	const oldPhone, bsuid = "6281239990000", "ID.5551234"
	f.contacts.add(store.Contact{ID: "ct_moved", TenantID: "acme-01", Identity: contact.Identity{UserID: bsuid, Name: "Pak Moved"}})
	f.convs.convs = append(f.convs.convs, store.Conversation{ID: "conv_moved", TenantID: "acme-01", PhoneNumberID: peopleNumber,
		ContactID: "ct_moved", Contact: oldPhone, ContactName: "Pak Moved", Status: store.ConversationOpen})
	code, body := f.get(t, "/conversations/conv_moved")
	// (The list beside it shows what the conversation recorded: it reads no contact per row.)
	if code != http.StatusOK || !strings.Contains(body, `id="no-phone"`) || strings.Contains(body, `id="contact-phone"`) {
		t.Errorf("GET = %d: want the contact without a phone, not the old number's digits:\n%s", code, body)
	}
	if rec := f.post(t, "/conversations/conv_moved/reply", url.Values{RequestIDField: {newRequestID()}, "text": {"hi"}}); rec.Code != http.StatusSeeOther {
		t.Fatalf("reply = %d", rec.Code)
	}
	if got := f.replier.calls[len(f.replier.calls)-1]; got.To != "" || got.Recipient != bsuid {
		t.Errorf("the reply went to %q / %q, want the BSUID only", got.To, got.Recipient)
	}
	f.contacts.err = errBoom
	f.rebuild()
	if code, body := f.get(t, "/conversations/conv_moved"); code != http.StatusOK || !strings.Contains(body, `id="contact-phone">…0000<`) {
		t.Errorf("with the contacts unreadable GET = %d: want what the conversation recorded", code)
	}
}

// TestReplyTakesTheConversationOver: an operator's reply makes the assistant silent in the
// conversation (takeover), which the page says, with who answered and until when, beside a
// "Hand back" button; the hand-back gives it to the assistant again.
func TestReplyTakesTheConversationOver(t *testing.T) {
	t.Parallel()
	f := newFixture(t, false)
	_, sari := addPeople(f)
	f.rebuild()
	if _, body := f.get(t, "/conversations/"+sari); !strings.Contains(body, `id="held-by-assistant"`) || strings.Contains(body, `id="hand-back"`) {
		t.Fatalf("before any reply the page does not say the assistant answers")
	}
	if rec := f.post(t, "/conversations/"+sari+"/reply", url.Values{RequestIDField: {newRequestID()}, "text": {"On it"}}); rec.Code != http.StatusSeeOther {
		t.Fatalf("reply = %d:\n%s", rec.Code, rec.Body.String())
	}
	_, body := f.get(t, "/conversations/"+sari)
	if !strings.Contains(body, `id="held-by"`) || !strings.Contains(body, "answered by "+OperatorDev) || !strings.Contains(body, `id="hand-back"`) {
		t.Fatalf("after the reply the page does not show the takeover:\n%s", body)
	}
	if rec := f.post(t, "/conversations/"+sari+"/handback", url.Values{RequestIDField: {newRequestID()}}); rec.Code != http.StatusSeeOther {
		t.Fatalf("hand back = %d:\n%s", rec.Code, rec.Body.String())
	}
	if _, body := f.get(t, "/conversations/"+sari); !strings.Contains(body, `id="held-by-assistant"`) {
		t.Errorf("after the hand-back the page does not say the assistant answers")
	}
}
