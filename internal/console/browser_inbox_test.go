package console_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/wapipe/wapipe/internal/assistant"
	"github.com/wapipe/wapipe/internal/contact"
	"github.com/wapipe/wapipe/internal/devstack"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/turnstate"
	"github.com/wapipe/wapipe/internal/whatsapp"
	"github.com/wapipe/wapipe/tasks"
)

// browserEnv is the stack TestBrowser runs and what the inbox subtests need of it.
type browserEnv struct {
	browser  context.Context
	st       *devstack.Stack
	db       *store.DB
	replier  *countingReplier
	tenantID string
}

// liveDeadline bounds what a page must show by itself (htmx polls every 3 s): generous, for a
// loaded CI machine.
const liveDeadline = 45 * time.Second

// inboxNumber is the sample tenant's first number, the one the inbox conversations are on.
const inboxNumber = "106540352242922"

// seeded is a conversation stored as the worker stores one: created by Acquire with the
// contact's touch, its inbound messages by AddInbound, their turns by CommitTurn.
type seeded struct {
	t     *testing.T
	convs *store.ConversationStore
	id    string
	lease store.Lease
}

func seedConversation(t *testing.T, env browserEnv, phone, name string) *seeded {
	t.Helper()
	return seedPerson(t, env, contact.Identity{WaID: phone, Name: name})
}

// seedPerson is seedConversation for any person: the tenant's contact of who (made as the worker
// makes it), and its conversation on inboxNumber, under the keyed id the worker derives.
func seedPerson(t *testing.T, env browserEnv, who contact.Identity) *seeded {
	t.Helper()
	ctx := context.Background()
	res, err := store.NewContacts(env.db, store.Options{}).Resolve(ctx, env.tenantID, who)
	if err != nil {
		t.Fatalf("resolve the contact: %v", err)
	}
	convs := store.NewConversationStore(env.db, store.Options{})
	id := store.ConversationID(env.db.Keyer(), env.tenantID, inboxNumber, res.Contact.ID)
	conv, ok, err := convs.Acquire(ctx, id, "browser-inbox", time.Minute, &store.Touch{TenantID: env.tenantID, PhoneNumberID: inboxNumber,
		ContactID: res.Contact.ID, Contact: who.WaID, UserID: who.UserID, Username: who.Username, ContactName: who.Name, InboundAt: time.Now()})
	if err != nil || !ok {
		t.Fatalf("acquire %s: %v, %v", id, ok, err)
	}
	return &seeded{t: t, convs: convs, id: id, lease: conv.Lease}
}

// in stores an inbound message of Meta time ts, received by the webhook at received; with
// commit its turn is committed with event and replies.
func (s *seeded) in(text string, ts, received time.Time, commit *store.TurnCommit) string {
	s.t.Helper()
	ctx := context.Background()
	id := whatsapp.NewMessageID()
	if _, _, err := s.convs.AddInbound(ctx, s.id, store.Message{MessageID: id, Type: "text", Text: text, Timestamp: ts.Unix(),
		ReceivedAt: received}); err != nil {
		s.t.Fatal(err)
	}
	if commit != nil {
		if _, err := s.convs.CommitTurn(ctx, s.id, s.lease, id, *commit, time.Minute); err != nil {
			s.t.Fatal(err)
		}
	}
	return id
}

func (s *seeded) out(m store.Message) {
	s.t.Helper()
	if err := s.convs.AddOutbound(context.Background(), s.id, m); err != nil {
		s.t.Fatal(err)
	}
}

func (s *seeded) release() {
	s.t.Helper()
	if err := s.convs.Release(context.Background(), s.id, s.lease); err != nil {
		s.t.Fatal(err)
	}
}

// bubbles returns the conversation's bubbles as the page shows them: author kind and text.
func bubbles(t *testing.T, tab context.Context) []string {
	t.Helper()
	var got []string
	err := chromedp.Run(tab, chromedp.Evaluate(`[...document.querySelectorAll('#messages li.msg')].map(li =>
		li.dataset.author + '|' + [...li.querySelectorAll('.text')].map(e => e.innerText).join('/'))`, &got))
	if err != nil {
		t.Fatalf("read the bubbles: %v", err)
	}
	return got
}

// listed returns the conversations the list shows, in order.
func listed(t *testing.T, tab context.Context) []string {
	t.Helper()
	var ids []string
	if err := chromedp.Run(tab, chromedp.Evaluate(`[...document.querySelectorAll('#inbox li[data-conversation]')].map(e => e.dataset.conversation)`, &ids)); err != nil {
		t.Fatalf("read the list: %v", err)
	}
	return ids
}

// inView reports whether the element sel is entirely inside the window.
func inView(t *testing.T, tab context.Context, sel string) bool {
	t.Helper()
	var ok bool
	js := fmt.Sprintf(`(() => { const r = document.querySelector(%q).getBoundingClientRect();
		return r.top >= 0 && r.left >= 0 && r.bottom <= window.innerHeight && r.right <= window.innerWidth && r.height > 0 })()`, sel)
	if err := chromedp.Run(tab, chromedp.Evaluate(js, &ok)); err != nil {
		t.Fatalf("measure %s: %v", sel, err)
	}
	return ok
}

// displayed reports whether sel is laid out (not display: none).
func displayed(t *testing.T, tab context.Context, sel string) bool {
	t.Helper()
	var ok bool
	if err := chromedp.Run(tab, chromedp.Evaluate(fmt.Sprintf(`getComputedStyle(document.querySelector(%q)).display !== 'none'`, sel), &ok)); err != nil {
		t.Fatalf("style of %s: %v", sel, err)
	}
	return ok
}

// overflowsX reports whether the page is wider than the window (a sideways scroll).
func overflowsX(t *testing.T, tab context.Context) bool {
	t.Helper()
	var wide bool
	if err := chromedp.Run(tab, chromedp.Evaluate(`document.documentElement.scrollWidth > window.innerWidth`, &wide)); err != nil {
		t.Fatal(err)
	}
	return wide
}

// openPage opens path of the console in a new tab and waits until wait is visible.
func openPage(t *testing.T, env browserEnv, path, wait string) context.Context {
	t.Helper()
	tab := newTab(t, env.browser)
	if err := chromedp.Run(tab, chromedp.Navigate(env.st.ConsoleURL+path), chromedp.WaitVisible(wait, chromedp.ByQuery)); err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	return tab
}

// browseInbox drives the inbox an operator works in: the order of a conversation and who wrote
// what, the split view with its list, filters and search, the live update, the keyboard send, the
// failures page and the 420 px layout. Screenshots go to the artifacts folder.
func browseInbox(t *testing.T, env browserEnv) {
	ctx := context.Background()
	url := env.st.ConsoleURL
	now := time.Now()

	// A booking confirmed with "yes", whose action's "Done" was stored in the same second, then
	// an operator's reply.
	booked := seedConversation(t, env, "6281230000101", "Pak Budi")
	sec := now.Add(-10 * time.Second).Truncate(time.Second)
	booked.in("book bus 3 for Friday", sec.Add(-5*time.Second), sec.Add(-5*time.Second), &store.TurnCommit{
		Event: assistant.EventPending, Replies: []store.Reply{{IdempotencyKey: "browser-ask-3", Body: "Book bus 3 for Friday. Correct?"}},
		State: turnstate.State{Pending: &turnstate.PendingAction{ActionID: "act_b3", Intent: "create_booking", ExpiresAt: now.Add(time.Hour)}}})
	booked.in("yes", sec, sec.Add(300*time.Millisecond), &store.TurnCommit{Event: assistant.EventConfirmed, ActionID: "act_b3",
		Action: `{"action_id":"act_b3","intent":"create_booking"}`})
	booked.out(store.Message{MessageID: tasks.ActionReplyKey(env.db.Keyer(), "act_b3"), Type: "text", Text: "Done: bus 3 booked", Timestamp: sec.Unix(),
		ActionID: "act_b3", Event: "action_done"})
	booked.out(store.Message{MessageID: "console-browser-op", Type: "text", Text: "Our driver will call you", Timestamp: sec.Unix() + 1,
		Event: "operator_reply", Operator: "ana@example.com"})
	booked.release()

	// A contact waiting for an answer, with a long history (the thread scrolls, the reply box
	// stays in view), and one the assistant answered.
	waiting := seedConversation(t, env, "6281230000102", "Bu Sari")
	for i := range 24 {
		at := now.Add(-time.Duration(30-i) * time.Minute)
		waiting.in(fmt.Sprintf("message %d of a long day", i+1), at, at, &store.TurnCommit{Event: assistant.EventAck,
			Replies: []store.Reply{{IdempotencyKey: fmt.Sprintf("browser-ack-%d", i), Body: "Thanks, we got your message."}}})
	}
	waiting.in("Where is my bus?\n\nIt is late.", now.Add(-time.Minute), now.Add(-time.Minute), nil)
	waiting.release()
	answered := seedConversation(t, env, "6281230000103", "Pak Dedi")
	answered.in("hello", now.Add(-2*time.Minute), now.Add(-2*time.Minute), &store.TurnCommit{Event: assistant.EventAck,
		Replies: []store.Reply{{IdempotencyKey: "browser-ack-dedi", Body: "Thanks, we got your message."}}})
	answered.release()

	t.Run("a conversation reads in order and marks the operator's reply", func(t *testing.T) {
		tab := openPage(t, env, "/conversations/"+booked.id, `#messages`)
		var event string
		err := chromedp.Run(tab,
			chromedp.Text(`#messages li.msg:first-child .event`, &event, chromedp.ByQuery),
		)
		if err != nil {
			t.Fatalf("browse: %v", err)
		}
		want := []string{"contact|book bus 3 for Friday", "assistant|Book bus 3 for Friday. Correct?", "contact|yes",
			"action|Done: bus 3 booked", "operator|Our driver will call you"}
		got := bubbles(t, tab)
		if !slices.Equal(want, got) {
			t.Errorf("bubbles:\n got %q\nwant %q", got, want)
		}
		if !strings.Contains(event, "confirmed") || strings.Contains(event, "pending") {
			t.Errorf("the confirmed booking's request says %q", event)
		}
		var author string
		if err := chromedp.Run(tab, chromedp.Text(`li.msg[data-author=operator] .author`, &author, chromedp.ByQuery)); err != nil {
			t.Fatal(err)
		}
		if author != "Operator ana@example.com" {
			t.Errorf("operator bubble's author = %q", author)
		}
		screenshot(t, tab, "conversation-order-operator")
	})

	t.Run("split view: list with preview, unread and status beside the open conversation", func(t *testing.T) {
		tab := newTab(t, env.browser)
		var preview, badge, tags string
		row := fmt.Sprintf(`li[data-conversation=%q]`, waiting.id)
		err := chromedp.Run(tab,
			chromedp.Navigate(url+"/tenants/"+env.tenantID+"/inbox"),
			chromedp.WaitVisible(row, chromedp.ByQuery),
			chromedp.Text(row+` .preview`, &preview, chromedp.ByQuery),
			chromedp.Text(row+` .badge`, &badge, chromedp.ByQuery),
			chromedp.Text(row+` .conv-tags`, &tags, chromedp.ByQuery),
		)
		if err != nil {
			t.Fatalf("browse: %v", err)
		}
		if preview != "Where is my bus?" || badge != "1" || !strings.Contains(tags, "open") || !strings.Contains(tags, "needs reply") {
			t.Errorf("row: preview %q, unread %q, tags %q", preview, badge, tags)
		}
		screenshot(t, tab, "inbox-list")
		var bubble string
		err = chromedp.Run(tab,
			chromedp.Click(row+` a`, chromedp.ByQuery),
			chromedp.WaitVisible(`#thread`, chromedp.ByQuery),
			chromedp.WaitVisible(row+`.selected`, chromedp.ByQuery),
			chromedp.Text(`#messages li.msg:last-child .text`, &bubble, chromedp.ByQuery),
		)
		if err != nil {
			t.Fatalf("open the conversation: %v", err)
		}
		if !displayed(t, tab, `.list-pane`) || !displayed(t, tab, `.conv-pane`) {
			t.Error("the split view does not show the list and the conversation side by side")
		}
		// No blank line inside a bubble: the text is the message, trimmed, nothing around it.
		if bubble != "Where is my bus?\n\nIt is late." {
			t.Errorf("last bubble = %q", bubble)
		}
		if !inView(t, tab, `#reply-form`) {
			t.Error("the reply box is out of view under a long conversation")
		}
		var pageScrolls bool
		if err := chromedp.Run(tab, chromedp.Evaluate(`document.documentElement.scrollHeight > window.innerHeight + 1`, &pageScrolls)); err != nil {
			t.Fatal(err)
		}
		if pageScrolls {
			t.Error("the page scrolls: only the thread should")
		}
		screenshot(t, tab, "inbox-split-view")
	})

	t.Run("filters: assigned to me, needs reply", func(t *testing.T) {
		tab := openPage(t, env, "/conversations/"+answered.id, `#assign`)
		err := chromedp.Run(tab,
			chromedp.Click(`#assign`, chromedp.ByQuery),
			chromedp.WaitVisible(`#flash`, chromedp.ByQuery),
			chromedp.WaitVisible(`#assignee`, chromedp.ByQuery),
			chromedp.Click(`a[data-filter="mine"]`, chromedp.ByQuery),
			chromedp.WaitVisible(`a[data-filter="mine"].current`, chromedp.ByQuery),
		)
		if err != nil {
			t.Fatalf("assign and filter: %v", err)
		}
		mine := listed(t, tab)
		if !slices.Contains(mine, answered.id) || slices.Contains(mine, waiting.id) {
			t.Errorf("assigned to me lists %q: want %s and not %s", mine, answered.id, waiting.id)
		}
		screenshot(t, tab, "inbox-filter-mine")
		if err := chromedp.Run(tab, chromedp.Click(`a[data-filter="needs_reply"]`, chromedp.ByQuery),
			chromedp.WaitVisible(`a[data-filter="needs_reply"].current`, chromedp.ByQuery)); err != nil {
			t.Fatal(err)
		}
		needs := listed(t, tab)
		if !slices.Contains(needs, waiting.id) || slices.Contains(needs, answered.id) || slices.Contains(needs, booked.id) {
			t.Errorf("needs reply lists %q: want %s only of the three", needs, waiting.id)
		}
		screenshot(t, tab, "inbox-filter-needs-reply")
	})

	t.Run("search by phone number, as people write it", func(t *testing.T) {
		tab := newTab(t, env.browser)
		var href string
		err := chromedp.Run(tab,
			chromedp.Navigate(url+"/tenants/"+env.tenantID+"/inbox"),
			chromedp.WaitVisible(`#inbox-search input[name=q]`, chromedp.ByQuery),
			chromedp.SendKeys(`#inbox-search input[name=q]`, "+62 812-3000-0102", chromedp.ByQuery),
			chromedp.Submit(`#inbox-search input[name=q]`, chromedp.ByQuery),
			chromedp.WaitVisible(`#search-note`, chromedp.ByQuery),
			chromedp.Location(&href),
		)
		if err != nil {
			t.Fatalf("search: %v", err)
		}
		if got := listed(t, tab); !slices.Equal(got, []string{waiting.id}) {
			t.Errorf("search by number lists %q, want %s", got, waiting.id)
		}
		if strings.Contains(href, "3000") || strings.Contains(href, "812") {
			t.Errorf("the number is in the URL: %s", href)
		}
		screenshot(t, tab, "inbox-search-number")
	})

	t.Run("a contact without a phone: found by username and user id, shown by name, asked for their number", func(t *testing.T) {
		const bsuid, username = "CO.1047385771169864", "julianzlc"
		julian := seedPerson(t, env, contact.Identity{UserID: bsuid, Username: username, Name: "Julián"})
		julian.in("Hola, quiero reservar el bus 5", time.Now(), time.Now(), nil)
		julian.release()
		tab := newTab(t, env.browser)
		for _, q := range []string{"@julianz", bsuid} {
			var href string
			err := chromedp.Run(tab,
				chromedp.Navigate(url+"/tenants/"+env.tenantID+"/inbox"),
				chromedp.WaitVisible(`#inbox-search input[name=q]`, chromedp.ByQuery),
				chromedp.SendKeys(`#inbox-search input[name=q]`, q, chromedp.ByQuery),
				chromedp.Submit(`#inbox-search input[name=q]`, chromedp.ByQuery),
				chromedp.WaitVisible(`#search-note`, chromedp.ByQuery),
				chromedp.Location(&href),
			)
			if err != nil {
				t.Fatalf("search %s: %v", q, err)
			}
			if got := listed(t, tab); !slices.Equal(got, []string{julian.id}) {
				t.Errorf("search %s lists %q, want %s", q, got, julian.id)
			}
			if strings.Contains(strings.ToLower(href), "julian") || strings.Contains(href, "1047385771169864") {
				t.Errorf("the search is in the URL: %s", href)
			}
		}
		screenshot(t, tab, "inbox-search-user-id")
		before := env.replier.count()
		var who, page, flash string
		err := chromedp.Run(tab,
			chromedp.Click(fmt.Sprintf(`li[data-conversation=%q] a`, julian.id), chromedp.ByQuery),
			chromedp.WaitVisible(`#ask-phone`, chromedp.ByQuery),
			chromedp.Text(`#contact`, &who, chromedp.ByQuery),
			chromedp.Text(`body`, &page, chromedp.ByQuery),
		)
		if err != nil {
			t.Fatalf("open the conversation: %v", err)
		}
		if who != "Julián" || strings.Contains(page, bsuid) || !displayed(t, tab, `#no-phone`) {
			t.Errorf("the contact is shown as %q (the page shows the user id: %v)", who, strings.Contains(page, bsuid))
		}
		screenshot(t, tab, "conversation-without-phone")
		err = chromedp.Run(tab,
			chromedp.Click(`#request-phone`, chromedp.ByQuery),
			chromedp.WaitVisible(`#flash`, chromedp.ByQuery),
			chromedp.Text(`#flash`, &flash, chromedp.ByQuery),
		)
		if err != nil {
			t.Fatalf("ask for the phone: %v", err)
		}
		if !strings.Contains(flash, "request_phone: done") || env.replier.count() != before+1 {
			t.Fatalf("flash %q, replies %d → %d; want one more", flash, before, env.replier.count())
		}
		env.replier.mu.Lock()
		last := env.replier.calls[len(env.replier.calls)-1]
		env.replier.mu.Unlock()
		if !last.RequestContactInfo || last.Recipient != bsuid || last.To != "" || last.ConversationID != julian.id {
			t.Errorf("the request went as %+v, want a contact info request to the user id", last)
		}
	})

	t.Run("the open conversation updates itself", func(t *testing.T) {
		tab := openPage(t, env, "/conversations/"+waiting.id, `#thread`)
		// A reload would lose this mark.
		if err := chromedp.Run(tab, chromedp.Evaluate(`window.notReloaded = true`, nil)); err != nil {
			t.Fatalf("open: %v", err)
		}
		late := seedConversation(t, env, "6281230000102", "Bu Sari")
		late.in("Are you still there?", time.Now(), time.Now(), nil)
		late.release()
		var ok bool
		// Null-safe: the thread is absent for an instant while htmx swaps it.
		err := chromedp.Run(tab, chromedp.Poll(`(document.querySelector('#messages')?.innerText ?? '').includes('Are you still there?') && window.notReloaded === true`,
			&ok, chromedp.WithPollingTimeout(liveDeadline), chromedp.WithPollingInterval(200*time.Millisecond)))
		if err != nil || !ok {
			t.Fatalf("the new message never appeared without a reload: %v", err)
		}
		// The list beside it follows too (its own refresh, every 10 s).
		preview := fmt.Sprintf(`document.querySelector('#inbox li[data-conversation=%q] .preview')?.innerText === 'Are you still there?'`, waiting.id)
		if err := chromedp.Run(tab, chromedp.Poll(preview, &ok, chromedp.WithPollingTimeout(liveDeadline), chromedp.WithPollingInterval(200*time.Millisecond))); err != nil || !ok {
			t.Errorf("the list's preview never showed the new message: %v", err)
		}
		screenshot(t, tab, "conversation-live-update")
	})

	t.Run("Ctrl+Enter sends the reply", func(t *testing.T) {
		tab := openPage(t, env, "/conversations/"+waiting.id, `#reply-form textarea`)
		before := env.replier.count()
		var flash string
		err := chromedp.Run(tab,
			chromedp.Focus(`#reply-form textarea`, chromedp.ByQuery),
			chromedp.SendKeys(`#reply-form textarea`, "Your bus is 10 minutes away", chromedp.ByQuery),
			chromedp.KeyEvent(kb.Enter, chromedp.KeyModifiers(input.ModifierCtrl)),
			chromedp.WaitVisible(`#flash`, chromedp.ByQuery),
			chromedp.Text(`#flash`, &flash, chromedp.ByQuery),
		)
		if err != nil {
			t.Fatalf("send: %v", err)
		}
		if !strings.Contains(flash, "reply: done") || env.replier.count() != before+1 {
			t.Errorf("flash %q, replies %d → %d; want one more", flash, before, env.replier.count())
		}
	})

	t.Run("failures page: id, errors, attempts, links, and Replay only where it can succeed", func(t *testing.T) {
		tab := newTab(t, env.browser)
		body, _ := json.Marshal(tasks.Action{ActionID: "act_refused", TenantID: env.tenantID, ConversationID: booked.id,
			PhoneNumberID: inboxNumber, To: "6281230000101", MessageID: "wamid.x", Request: json.RawMessage(`{"action_id":"act_refused"}`)})
		dlID, err := store.NewDeadLetters(env.db, store.Options{}).PutDeadLetter(ctx, store.DeadLetter{Queue: tasks.TenantQueueID(env.tenantID),
			TaskName: "browser-permanent", Path: tasks.ProcessActionPath, Body: string(body), Reason: "permanent",
			LastError: "business answered HTTP 400\nbus 3 is not in the fleet"})
		if err != nil {
			t.Fatal(err)
		}
		row := fmt.Sprintf(`li[data-dead-letter=%q]`, dlID)
		var errs []string
		var attempts, why, tenantHref, convHref, id string
		var replays int
		err = chromedp.Run(tab,
			chromedp.Navigate(url+"/failures"),
			chromedp.WaitVisible(row, chromedp.ByQuery),
			chromedp.Text(row+` .dl-id`, &id, chromedp.ByQuery),
			chromedp.Evaluate(fmt.Sprintf(`[...document.querySelectorAll('%s .errors li')].map(e => e.innerText)`, row), &errs),
			chromedp.Text(row+` .attempts`, &attempts, chromedp.ByQuery),
			chromedp.Text(row+` .why-not`, &why, chromedp.ByQuery),
			chromedp.AttributeValue(row+` a.tenant-link`, "href", &tenantHref, nil, chromedp.ByQuery),
			chromedp.AttributeValue(row+` a.conversation-link`, "href", &convHref, nil, chromedp.ByQuery),
			chromedp.Evaluate(fmt.Sprintf(`document.querySelectorAll('%s button.replay').length`, row), &replays),
		)
		if err != nil {
			t.Fatalf("browse: %v", err)
		}
		if id != dlID || !slices.Equal(errs, []string{"business answered HTTP 400", "bus 3 is not in the fleet"}) || attempts != "1 attempt" {
			t.Errorf("row: id %q, errors %q, attempts %q", id, errs, attempts)
		}
		if replays != 0 || !strings.Contains(why, "permanent error") {
			t.Errorf("a permanent failure offers %d Replay buttons, says %q", replays, why)
		}
		if tenantHref != "/tenants/"+env.tenantID || convHref != "/conversations/"+booked.id {
			t.Errorf("links: tenant %q, conversation %q", tenantHref, convHref)
		}
		screenshot(t, tab, "failures")
		if err := chromedp.Run(tab, chromedp.Click(row+` a.conversation-link`, chromedp.ByQuery), chromedp.WaitVisible(`#thread`, chromedp.ByQuery)); err != nil {
			t.Errorf("the conversation link: %v", err)
		}
	})

	t.Run("desktop pages for the record", func(t *testing.T) {
		tab := openPage(t, env, "/", `#tenant-queues`)
		screenshot(t, tab, "overview")
	})

	t.Run("a 420 px screen shows one pane at a time, nothing wider than the screen", func(t *testing.T) {
		tab := newTab(t, env.browser)
		if err := chromedp.Run(tab, chromedp.EmulateViewport(420, 860)); err != nil {
			t.Fatal(err)
		}
		pages := []struct {
			name, path, wait string
			shown, hidden    []string
		}{
			{"narrow-inbox", "/tenants/" + env.tenantID + "/inbox", `#inbox`, []string{`.list-pane`}, []string{`.conv-pane`}},
			{"narrow-conversation", "/conversations/" + waiting.id, `#thread`, []string{`.conv-pane`, `.back`}, []string{`.list-pane`}},
			{"narrow-overview", "/", `#live`, nil, nil},
			{"narrow-failures", "/failures", `#dead-letters`, nil, nil},
			{"narrow-tenants", "/tenants", `#tenants`, nil, nil},
		}
		for _, p := range pages {
			if err := chromedp.Run(tab, chromedp.Navigate(url+p.path), chromedp.WaitVisible(p.wait, chromedp.ByQuery)); err != nil {
				t.Fatalf("%s: %v", p.path, err)
			}
			for _, sel := range p.shown {
				if !displayed(t, tab, sel) {
					t.Errorf("%s: %s is hidden at 420 px", p.path, sel)
				}
			}
			for _, sel := range p.hidden {
				if displayed(t, tab, sel) {
					t.Errorf("%s: %s is shown at 420 px", p.path, sel)
				}
			}
			if overflowsX(t, tab) {
				t.Errorf("%s: the page is wider than 420 px", p.path)
			}
			if p.name == "narrow-conversation" && !inView(t, tab, `#reply-form`) {
				t.Error("the reply box is out of view at 420 px")
			}
			screenshot(t, tab, p.name)
		}
	})
}
