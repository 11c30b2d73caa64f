package console_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/wapipe/wapipe/internal/console"
	"github.com/wapipe/wapipe/internal/contact"
	"github.com/wapipe/wapipe/internal/devstack"
	"github.com/wapipe/wapipe/internal/operator"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/taskqueue"
	"github.com/wapipe/wapipe/internal/testenv"
	"github.com/wapipe/wapipe/tasks"
)

// TestBrowserWholeStack drives the console against the whole local stack, nothing stood in: a
// conversation the pipeline made from `wapipe trigger`-style deliveries, with the assistant's
// pending action and then the action it ran; an operator's reply, clicked twice, that reaches the
// fake Graph API once through the send path of /v1/messages; and Reconnect, whose link goes
// through the api's Embedded Signup and the fake Meta dialog back to a connected tenant.
func TestBrowserWholeStack(t *testing.T) {
	t.Parallel()
	host := testenv.FirestoreHost(t)
	browser := newBrowser(t)
	ctx := context.Background()

	// The tenant's action URL must be known before the stack applies it.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	actionAddr := l.Addr().String()
	l.Close()
	const number, sender = "106540352242922", "16505551234"
	tenantFile := fmt.Sprintf(`id: console-e2e
name: Console E2E Bus
language: en
audience: public
phone_numbers:
  - {phone_number_id: %q, waba_id: "102290129340398"}
members:
  - {wa_id: %q, role: owner, name: Sheena Nelson}
assistant:
  mode: llm
  model: gemini-2.5-flash
  instructions: You book buses.
  min_confidence: 0.7
  action_url: http://%s/wapipe/actions
  intents:
    - name: create_booking
      description: a new booking of a bus for a client on a date
      fields: {client: string, date: date, bus: string, price: integer}
      required: [client, date, bus]
      confirm: true
`, number, sender, actionAddr)
	st, err := devstack.Start(ctx, devstack.Options{FirestoreHost: host, Project: testenv.ProjectID(t), Queues: testenv.FastQueues(t),
		ActionAddr: actionAddr, Tenants: [][]byte{[]byte(tenantFile)}})
	if err != nil {
		t.Fatalf("devstack.Start: %v", err)
	}
	t.Cleanup(st.Stop)
	tenantID := st.Tenants[0]
	sdb, err := store.OpenEmulator(ctx, st.FirestoreHost, st.Project, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sdb.Close() })
	// convID is the sender's conversation, once the pipeline made it (its id is keyed: the
	// contact the pipeline made for the sender's phone finds it).
	var convID string
	findConv := func(t *testing.T) {
		t.Helper()
		testenv.Eventually(t, 30*time.Second, func() bool {
			id, ok, err := store.NewConversationStore(sdb, store.Options{}).ConversationOf(ctx, tenantID, number, contact.Identity{WaID: sender})
			convID = id
			return err == nil && ok
		}, "no contact for the sender")
	}
	client := &http.Client{Timeout: 10 * time.Second}
	deliver := func(t *testing.T, text string) {
		t.Helper()
		d, err := operator.BuildDelivery(operator.SampleSpec{Type: "text", Text: text})
		if err != nil {
			t.Fatal(err)
		}
		res, err := operator.Post(ctx, client, st.WebhookURL, st.AppSecret, d.Body)
		if err != nil || res.StatusCode != http.StatusOK {
			t.Fatalf("deliver: %+v, %v", res, err)
		}
	}
	admin, err := taskqueue.NewAdmin(ctx, st.Project, st.Location, st.TasksAddr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close() })
	// idle waits until the tenant's queue has no task left: every send has run.
	idle := func(t *testing.T) {
		t.Helper()
		testenv.Eventually(t, 30*time.Second, func() bool {
			q, err := admin.QueueStats(ctx, tasks.TenantQueueID(tenantID))
			return err == nil && q.Tasks == 0
		}, "the tenant's queue never emptied")
	}
	sendsWith := func(text string) int {
		n := 0
		for _, r := range st.Graph.Sends() {
			if strings.Contains(string(r.RawBody), text) {
				n++
			}
		}
		return n
	}

	t.Run("the inbox shows the pipeline's conversation, its pending action, then the action run", func(t *testing.T) {
		tab := newTab(t, browser)
		deliver(t, "book bus 01 for Pak Agus on 1 March")
		testenv.Eventually(t, 30*time.Second, func() bool { return sendsWith("Correct?") == 1 }, "no confirmation prompt was sent")
		findConv(t)
		var messages, pending string
		err := chromedp.Run(tab,
			chromedp.Navigate(st.ConsoleURL+"/tenants/"+tenantID+"/inbox"),
			chromedp.Click(fmt.Sprintf(`li[data-conversation=%q] a`, convID), chromedp.ByQuery),
			chromedp.WaitVisible(`#messages`, chromedp.ByQuery),
			chromedp.Text(`#messages`, &messages, chromedp.ByQuery),
			chromedp.Text(`#pending`, &pending, chromedp.ByQuery),
		)
		if err != nil {
			t.Fatalf("browse: %v", err)
		}
		if !strings.Contains(messages, "book bus 01 for Pak Agus") || !strings.Contains(messages, "Correct?") ||
			!strings.Contains(pending, "create_booking") {
			t.Errorf("conversation page before the confirmation: messages %q, pending %q", messages, pending)
		}

		deliver(t, "yes")
		// The result is stored in the conversation just after it is sent.
		db, err := store.OpenEmulator(ctx, st.FirestoreHost, st.Project, "")
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		convs := store.NewConversationStore(db, store.Options{})
		testenv.Eventually(t, 30*time.Second, func() bool {
			msgs, err := convs.Messages(ctx, convID, 100)
			for _, m := range msgs {
				if err == nil && m.Text == "Done: create_booking recorded" {
					return true
				}
			}
			return false
		}, "the action's result was never sent and stored")
		if n := sendsWith("Done: create_booking recorded"); n != 1 {
			t.Errorf("the action's result was sent %d times, want once", n)
		}
		var actions string
		err = chromedp.Run(tab,
			chromedp.Navigate(st.ConsoleURL+"/conversations/"+convID),
			chromedp.WaitVisible(`#messages`, chromedp.ByQuery),
			chromedp.Text(`li.action`, &actions, chromedp.ByQuery),
			chromedp.Text(`#messages`, &messages, chromedp.ByQuery),
		)
		if err != nil {
			t.Fatalf("browse after the confirmation: %v", err)
		}
		if !strings.Contains(actions, "create_booking") || !strings.Contains(actions, "done") || !strings.Contains(actions, "Done: create_booking recorded") {
			t.Errorf("actions run: %q, want create_booking done with the business's reply", actions)
		}
		if !strings.Contains(messages, "Done: create_booking recorded") {
			t.Errorf("messages %q lack the action's result", messages)
		}
		// The pipeline's own order: the request, its prompt, the "yes", then the result (which
		// may fall in the yes's second), and the request no longer reads as pending.
		got := bubbles(t, tab)
		var order []string
		for _, b := range got {
			for _, w := range []string{"contact|book bus 01", "assistant|I'll record", "contact|yes", "action|Done: create_booking recorded"} {
				if strings.HasPrefix(b, w) {
					order = append(order, w)
				}
			}
		}
		if want := []string{"contact|book bus 01", "assistant|I'll record", "contact|yes", "action|Done: create_booking recorded"}; !slices.Equal(order, want) {
			t.Errorf("bubbles %q: order %q, want %q", got, order, want)
		}
		var event string
		if err := chromedp.Run(tab, chromedp.Text(`#messages li.msg:first-child .event`, &event, chromedp.ByQuery)); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(event, "confirmed") || strings.Contains(event, "pending") {
			t.Errorf("the confirmed request's label = %q", event)
		}
		screenshot(t, tab, "e2e-confirmed-booking")
	})

	t.Run("an operator reply clicked twice reaches the Graph API once", func(t *testing.T) {
		tab := newTab(t, browser)
		const text = "Our dispatcher will call you about bus 01"
		posts := postCounter(tab, "/reply")
		err := chromedp.Run(tab,
			chromedp.Navigate(st.ConsoleURL+"/conversations/"+convID),
			chromedp.WaitVisible(`#reply-form textarea`, chromedp.ByQuery),
			chromedp.SendKeys(`#reply-form textarea`, text, chromedp.ByQuery),
			chromedp.Evaluate(`(() => { const b = document.querySelector('#reply'); b.click(); b.click(); return true })()`, nil),
		)
		if err != nil {
			t.Fatalf("browse: %v", err)
		}
		testenv.Eventually(t, 30*time.Second, func() bool { return sendsWith(text) >= 1 }, "the reply never reached the Graph API")
		testenv.Eventually(t, 10*time.Second, func() bool { return posts() >= 1 }, "no POST seen")
		idle(t)
		if n := sendsWith(text); n != 1 {
			t.Errorf("the reply reached the Graph API %d times, want once (%d POSTs)", n, posts())
		}
		// The conversation shows it as the operator's, not the assistant's.
		var author string
		err = chromedp.Run(tab,
			chromedp.Navigate(st.ConsoleURL+"/conversations/"+convID),
			chromedp.WaitVisible(`li.msg[data-author=operator]`, chromedp.ByQuery),
			chromedp.Text(`li.msg[data-author=operator] .author`, &author, chromedp.ByQuery),
		)
		if err != nil {
			t.Fatalf("the operator's reply in the conversation: %v", err)
		}
		if author != "Operator "+console.OperatorDev {
			t.Errorf("operator bubble's author = %q", author)
		}
		screenshot(t, tab, "e2e-operator-reply")
	})

	t.Run("Reconnect's link goes through Embedded Signup and reconnects the tenant", func(t *testing.T) {
		tab := newTab(t, browser)
		db, err := store.OpenEmulator(ctx, st.FirestoreHost, st.Project, "")
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		tenants := store.NewTenants(db, store.Options{})
		rec, err := tenants.Get(ctx, tenantID)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := store.NewSends(db, store.Options{}).Park(ctx, store.ParkRequest{
			Seed: store.OutboundRecord{IdempotencyKey: "reply-00000000000000000000000000000e2e", TenantID: tenantID, PhoneNumberID: number,
				To: sender, Message: `{"type":"text","text":{"body":"a reply parked while the token was dead"}}`, MessageType: "text"},
			AuthError: "Graph code 190: token expired", TokenSetAt: rec.TokenSetAt,
		}); err != nil {
			t.Fatal(err)
		}
		// The admin's Meta login shares the tenant's account (the api refuses one that does not).
		st.Graph.SetSignupAccount("102290129340398", number)
		var status, title string
		err = chromedp.Run(tab,
			chromedp.Navigate(st.ConsoleURL+"/tenants/"+tenantID),
			chromedp.Text(`#auth-status`, &status, chromedp.ByQuery),
			chromedp.Click(`#reconnect`, chromedp.ByQuery),
			chromedp.WaitVisible(`#connect-link`, chromedp.ByQuery),
			chromedp.Click(`#connect-link`, chromedp.ByQuery),
			// The connect page names the tenant; its button starts Meta's dialog.
			chromedp.WaitVisible(`form[method="post"] button`, chromedp.ByQuery),
			chromedp.Click(`form[method="post"] button`, chromedp.ByQuery),
			chromedp.WaitNotPresent(`form[method="post"]`, chromedp.ByQuery),
			chromedp.WaitVisible(`h1`, chromedp.ByQuery),
			chromedp.Title(&title),
		)
		if err != nil {
			t.Fatalf("browse: %v", err)
		}
		if status != store.AuthNeedsReauth || title != "Connected" {
			t.Errorf("auth status before %q, signup page %q; want needs_reauth, then Connected", status, title)
		}
		testenv.Eventually(t, 30*time.Second, func() bool { return sendsWith("a reply parked while the token was dead") >= 1 },
			"the parked reply was never released")
		idle(t)
		if n := sendsWith("a reply parked while the token was dead"); n != 1 {
			t.Errorf("the parked reply was sent %d times, want once", n)
		}
		after, err := tenants.Get(ctx, tenantID)
		if err != nil || after.AuthStatus != store.AuthOK || !after.TokenSetAt.After(rec.TokenSetAt) {
			t.Errorf("tenant after Embedded Signup: %s, token set %v (%v); want ok with a new token", after.AuthStatus, after.TokenSetAt, err)
		}
	})
}
