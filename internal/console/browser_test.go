package console_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/firestore"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/wapipe/wapipe/internal/console"
	"github.com/wapipe/wapipe/internal/contact"
	"github.com/wapipe/wapipe/internal/devstack"
	"github.com/wapipe/wapipe/internal/operator"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/taskqueue"
	"github.com/wapipe/wapipe/internal/testenv"
	"github.com/wapipe/wapipe/internal/turnstate"
	"github.com/wapipe/wapipe/internal/whatsapp"
	"github.com/wapipe/wapipe/tasks"
)

func TestMain(m *testing.M) { os.Exit(testenv.RunWithFirestore(m)) }

// chromiumPath finds the browser: CHROMIUM_PATH, else the Debian package's binary or another
// Chromium or Chrome on PATH.
func chromiumPath() string {
	if p := os.Getenv("CHROMIUM_PATH"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// newBrowser starts a headless Chromium for the test, closed when it ends. Without Chromium the
// test skips, and fails under CI=true (.ci/run installs the chromium package).
func newBrowser(t *testing.T) context.Context {
	t.Helper()
	if testing.Short() {
		t.Skip("browser test: skipped under -short")
	}
	path := chromiumPath()
	if path == "" {
		msg := "no Chromium: install the Debian package chromium (apt-get install -y chromium) or set CHROMIUM_PATH"
		if testenv.InCI() {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox,
		chromedp.Headless, chromedp.DisableGPU, chromedp.Flag("disable-dev-shm-usage", true), chromedp.WindowSize(1400, 1000))
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(allocCtx)
	if err := chromedp.Run(ctx); err != nil {
		cancel()
		cancelAlloc()
		t.Fatalf("start Chromium (%s): %v", path, err)
	}
	t.Cleanup(func() { cancel(); cancelAlloc() })
	return ctx
}

// newTab opens a tab for a subtest, with a time limit; on failure it saves a screenshot of the
// page under the test's temporary directory and logs its path.
func newTab(t *testing.T, browser context.Context) context.Context {
	t.Helper()
	dir := t.TempDir()
	tab, cancelTab := chromedp.NewContext(browser)
	// Generous: a loaded 2-core CI machine runs several stacks and browsers at once.
	ctx, cancel := context.WithTimeout(tab, 3*time.Minute)
	t.Cleanup(func() {
		defer cancelTab()
		defer cancel()
		if !t.Failed() {
			return
		}
		var png []byte
		shotCtx, cancelShot := context.WithTimeout(tab, 10*time.Second)
		defer cancelShot()
		if err := chromedp.Run(shotCtx, chromedp.CaptureScreenshot(&png)); err != nil {
			t.Logf("screenshot: %v", err)
			return
		}
		p := filepath.Join(dir, "screenshot.png")
		if err := os.WriteFile(p, png, 0o644); err != nil {
			t.Logf("screenshot: %v", err)
			return
		}
		t.Logf("screenshot of the failing page: %s", p)
	})
	return ctx
}

// artifactsDir is where the browser tests save their screenshots: $WAPIPE_ARTIFACTS/console
// (.ci/run sets it and keeps the folder), else a temporary directory of the test.
func artifactsDir(t *testing.T) string {
	t.Helper()
	if d := os.Getenv("WAPIPE_ARTIFACTS"); d != "" {
		dir := filepath.Join(d, "console")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatalf("artifacts folder: %v", err)
		}
		return dir
	}
	return t.TempDir()
}

// screenshot saves what the tab shows as name.png in the artifacts folder.
func screenshot(t *testing.T, tab context.Context, name string) {
	t.Helper()
	var png []byte
	if err := chromedp.Run(tab, chromedp.CaptureScreenshot(&png)); err != nil {
		t.Errorf("screenshot %s: %v", name, err)
		return
	}
	p := filepath.Join(artifactsDir(t), name+".png")
	if err := os.WriteFile(p, png, 0o644); err != nil {
		t.Errorf("screenshot %s: %v", name, err)
		return
	}
	t.Logf("screenshot: %s", p)
}

// countingReplier is the Replier the browser tests give the console: it records each reply,
// after its gate.
type countingReplier struct {
	g     *gate
	mu    sync.Mutex
	calls []console.ReplyRequest
}

func (r *countingReplier) Reply(ctx context.Context, req console.ReplyRequest) (console.ReplyResult, error) {
	r.g.wait(ctx)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, req)
	return console.ReplyResult{ID: fmt.Sprintf("msg_%d", len(r.calls)), Status: "queued"}, nil
}

func (r *countingReplier) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.calls)
}

// gate holds the first call of an action in the console until the test opens it, so that the
// operator's second click lands while the first request is still being served, as it does when
// a send is slow.
type gate struct {
	once sync.Once
	open chan struct{}
}

func newGate() *gate { return &gate{open: make(chan struct{})} }

func (g *gate) wait(ctx context.Context) {
	select {
	case <-g.open:
	case <-ctx.Done():
	}
}

func (g *gate) release() { g.once.Do(func() { close(g.open) }) }

// gatedReplayer holds each replay at its gate.
type gatedReplayer struct {
	console.Replayer
	g *gate
}

func (r gatedReplayer) Replay(ctx context.Context, d store.DeadLetter, dryRun bool) (operator.ReplayResult, error) {
	r.g.wait(ctx)
	return r.Replayer.Replay(ctx, d, dryRun)
}

// clickTwice clicks the button sel twice, as an impatient operator does on a slow action: the
// second click comes half a second after the first, while the console still holds the first
// request at g (the page has not changed yet). Once both POSTs are sent, the console may answer.
// The clicks run in the page: chromedp waits for a pending navigation before it acts.
func clickTwice(t *testing.T, tab context.Context, sel string, posts func() int, g *gate) {
	t.Helper()
	js := fmt.Sprintf(`(() => { const b = document.querySelector(%q); b.click(); setTimeout(() => b.click(), 500); return true })()`, sel)
	if err := chromedp.Run(tab, chromedp.Evaluate(js, nil)); err != nil {
		t.Fatalf("click: %v", err)
	}
	testenv.Eventually(t, 10*time.Second, func() bool { return posts() >= 2 }, "the browser sent %d POSTs, want one per click", posts())
	g.release()
}

// postCounter counts the POSTs the tab sends to paths ending with suffix.
func postCounter(ctx context.Context, suffix string) func() int {
	var mu sync.Mutex
	n := 0
	chromedp.ListenTarget(ctx, func(ev any) {
		if e, ok := ev.(*network.EventRequestWillBeSent); ok && e.Request.Method == http.MethodPost && strings.HasSuffix(e.Request.URL, suffix) {
			mu.Lock()
			n++
			mu.Unlock()
		}
	})
	return func() int { mu.Lock(); defer mu.Unlock(); return n }
}

// dialogLinks makes connect links to the stand-in dialog, as the api's connect-link would make
// signed links to its connect route.
type dialogLinks struct{ url string }

func (d dialogLinks) ConnectLink(_ context.Context, tenantID string) (string, error) {
	return d.url + "?state=signed-" + tenantID, nil
}

// TestBrowser drives the console in a real Chromium against a local stack on the emulators: the
// same pages an operator opens, with the same clicks.
func TestBrowser(t *testing.T) {
	t.Parallel()
	host := testenv.FirestoreHost(t)
	browser := newBrowser(t)
	ctx := context.Background()
	// The Embedded Signup dialog stands in for Meta's (and for the api service's connect route):
	// it records the links opened.
	var dialogMu sync.Mutex
	var dialogHits []string
	dialog := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/dialog" {
			dialogMu.Lock()
			dialogHits = append(dialogHits, r.URL.Query().Get("state"))
			dialogMu.Unlock()
		}
		fmt.Fprint(w, `<html><body><h1 id="dialog">Connect WhatsApp</h1></body></html>`)
	}))
	t.Cleanup(dialog.Close)
	replyGate, replayGate := newGate(), newGate()
	replier := &countingReplier{g: replyGate}
	st, err := devstack.Start(ctx, devstack.Options{FirestoreHost: host, Project: testenv.ProjectID(t), Queues: testenv.FastQueues(t),
		Console: []func(*console.Deps){func(d *console.Deps) {
			d.Replier = replier
			d.Replayer = gatedReplayer{Replayer: d.Replayer, g: replayGate}
			d.LinkMaker = dialogLinks{url: dialog.URL + "/dialog"}
		}}})
	if err != nil {
		t.Fatalf("devstack.Start: %v", err)
	}
	t.Cleanup(st.Stop)
	db, err := store.OpenEmulator(ctx, st.FirestoreHost, st.Project, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	tenantID := st.Tenants[0]
	client := &http.Client{Timeout: 10 * time.Second}
	deliver := func(t *testing.T, text string) operator.Delivery {
		t.Helper()
		d, err := operator.BuildDelivery(operator.SampleSpec{Type: "text", Text: text})
		if err != nil {
			t.Fatal(err)
		}
		res, err := operator.Post(ctx, client, st.WebhookURL, st.AppSecret, d.Body)
		if err != nil || res.StatusCode != http.StatusOK {
			t.Fatalf("deliver: %+v, %v", res, err)
		}
		return d
	}

	t.Run("inbox shows a conversation and a reply clicked twice reaches the Replier once", func(t *testing.T) {
		tab := newTab(t, browser)
		convs := store.NewConversationStore(db, store.Options{})
		res, err := store.NewContacts(db, store.Options{}).Resolve(ctx, tenantID, contact.Identity{WaID: "6281230000001", Name: "Pak Agus"})
		if err != nil {
			t.Fatal(err)
		}
		convID := store.ConversationID(db.Keyer(), tenantID, "106540352242922", res.Contact.ID)
		conv, _, err := convs.Acquire(ctx, convID, "browser-test", time.Minute, &store.Touch{TenantID: tenantID,
			PhoneNumberID: "106540352242922", ContactID: res.Contact.ID, Contact: "6281230000001", ContactName: "Pak Agus", InboundAt: time.Now()})
		if err != nil {
			t.Fatal(err)
		}
		msgID := whatsapp.NewMessageID()
		if _, _, err := convs.AddInbound(ctx, convID, store.Message{MessageID: msgID, Type: "text", Text: "Book bus 7 for tomorrow",
			Timestamp: time.Now().Unix()}); err != nil {
			t.Fatal(err)
		}
		pending := &turnstate.PendingAction{ActionID: "act_browser", Intent: "create_booking", Summary: "Book bus 7 for tomorrow?",
			MessageID: msgID, CreatedAt: time.Now(), ExpiresAt: time.Now().Add(turnstate.PendingTTL)}
		if _, err := convs.CommitTurn(ctx, convID, conv.Lease, msgID, store.TurnCommit{State: turnstate.State{Pending: pending}}, time.Minute); err != nil {
			t.Fatal(err)
		}
		if err := convs.Release(ctx, convID, conv.Lease); err != nil {
			t.Fatal(err)
		}

		posts := postCounter(tab, "/reply")
		var messages, pendingText, flash string
		err = chromedp.Run(tab,
			chromedp.Navigate(st.ConsoleURL+"/tenants/"+tenantID+"/inbox"),
			chromedp.Click(fmt.Sprintf(`li[data-conversation=%q] a`, convID), chromedp.ByQuery),
			chromedp.WaitVisible(`#messages`, chromedp.ByQuery),
			chromedp.Text(`#messages`, &messages, chromedp.ByQuery),
			chromedp.Text(`#pending`, &pendingText, chromedp.ByQuery),
			chromedp.SendKeys(`#reply-form textarea`, "We are checking bus 7", chromedp.ByQuery),
		)
		if err != nil {
			t.Fatalf("browse: %v", err)
		}
		clickTwice(t, tab, `#reply`, posts, replyGate)
		if err := chromedp.Run(tab, chromedp.WaitVisible(`#flash`, chromedp.ByQuery), chromedp.Text(`#flash`, &flash, chromedp.ByQuery)); err != nil {
			t.Fatalf("after the clicks: %v", err)
		}
		if !strings.Contains(messages, "Book bus 7 for tomorrow") || !strings.Contains(pendingText, "create_booking") {
			t.Errorf("conversation page: messages %q, pending %q", messages, pendingText)
		}
		if !strings.Contains(flash, "reply:") {
			t.Errorf("flash = %q", flash)
		}
		// Both clicks' POSTs reached the console; the audit entry told the second one apart.
		if n := replier.count(); n != 1 {
			t.Errorf("the Replier was called %d times, want once", n)
		}
	})

	t.Run("failures page replay sends once", func(t *testing.T) {
		tab := newTab(t, browser)
		// A reply to a number no tenant owns (the single-tenant default) that died on its last
		// attempt.
		msgID := whatsapp.NewMessageID()
		to := "6281239999999"
		body, _ := json.Marshal(tasks.Outbound{IdempotencyKey: tasks.IdempotencyKey(db.Keyer(), msgID), CorrelationID: "browser-replay",
			InboundEventID: msgID, PhoneNumberID: "999000111222", To: to,
			Message: whatsapp.Message{ID: msgID, From: to, PhoneNumberID: "999000111222", Type: "text", Text: "hello",
				Timestamp: fmt.Sprint(time.Now().Unix())}})
		dlID, err := store.NewDeadLetters(db, store.Options{}).PutDeadLetter(ctx, store.DeadLetter{Queue: tasks.OutboundQueueID,
			TaskName: "browser-replay", Path: tasks.ProcessOutboundPath, Body: string(body), LastError: "graph 503",
			LastErrorCode: 131016, RetryCount: 4, IdempotencyKey: tasks.IdempotencyKey(db.Keyer(), msgID), InboundEventID: msgID})
		if err != nil {
			t.Fatal(err)
		}
		sendsTo := func() int {
			n := 0
			for _, r := range st.Graph.Sends() {
				if r.Body["to"] == to {
					n++
				}
			}
			return n
		}
		posts := postCounter(tab, "/replay")
		var row, flash string
		err = chromedp.Run(tab,
			chromedp.Navigate(st.ConsoleURL+"/failures"),
			chromedp.Text(fmt.Sprintf(`li[data-dead-letter=%q]`, dlID), &row, chromedp.ByQuery),
		)
		if err != nil {
			t.Fatalf("browse: %v", err)
		}
		clickTwice(t, tab, fmt.Sprintf(`li[data-dead-letter=%q] button.replay`, dlID), posts, replayGate)
		if err := chromedp.Run(tab, chromedp.WaitVisible(`#flash`, chromedp.ByQuery), chromedp.Text(`#flash`, &flash, chromedp.ByQuery)); err != nil {
			t.Fatalf("after the clicks: %v", err)
		}
		if !strings.Contains(row, "graph 503") || !strings.Contains(row, "131016") || !strings.Contains(row, dlID) || !strings.Contains(row, "5 attempts") {
			t.Errorf("dead letter row = %q, want its id, error, Meta code and attempts", row)
		}
		if !strings.Contains(flash, "replay: done") && !strings.Contains(flash, "replay: started") {
			t.Errorf("flash = %q", flash)
		}
		testenv.Eventually(t, 20*time.Second, func() bool { return sendsTo() >= 1 }, "the replayed reply never reached the fake Graph API")
		// The record is sent: whatever is still queued cannot send it again.
		testenv.Eventually(t, 10*time.Second, func() bool {
			rec, err := store.NewOutbound(db, store.Options{}).GetOutbound(ctx, tasks.IdempotencyKey(db.Keyer(), msgID))
			return err == nil && rec.State == store.OutboundSent
		}, "the outbound record is not sent")
		if n := sendsTo(); n != 1 {
			t.Errorf("the fake Graph API got %d sends to the contact, want 1", n)
		}
		var after string
		if err := chromedp.Run(tab, chromedp.Navigate(st.ConsoleURL+"/failures?all=1"),
			chromedp.Text(fmt.Sprintf(`li[data-dead-letter=%q]`, dlID), &after, chromedp.ByQuery)); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(after, "replayed") {
			t.Errorf("after the replay the row says %q, want replayed", after)
		}
	})

	t.Run("a tenant needing reauth shows Reconnect and its link opens the dialog", func(t *testing.T) {
		tab := newTab(t, browser)
		fs, err := firestore.NewClient(ctx, st.Project)
		if err != nil {
			t.Fatal(err)
		}
		defer fs.Close()
		if _, err := fs.Collection(store.TenantsCollection).Doc(tenantID).Update(ctx, []firestore.Update{
			{Path: "auth_status", Value: store.AuthNeedsReauth}, {Path: "auth_last_error", Value: "Graph code 190: token expired"}}); err != nil {
			t.Fatal(err)
		}
		defer func() {
			_, err := fs.Collection(store.TenantsCollection).Doc(tenantID).Update(ctx, []firestore.Update{
				{Path: "auth_status", Value: store.AuthOK}, {Path: "auth_last_error", Value: ""}})
			if err != nil {
				t.Error(err)
			}
		}()
		var overview, status, heading string
		err = chromedp.Run(tab,
			chromedp.Navigate(st.ConsoleURL+"/"),
			chromedp.Text(`#attention`, &overview, chromedp.ByQuery),
			chromedp.Navigate(st.ConsoleURL+"/tenants/"+tenantID),
			chromedp.Text(`#auth-status`, &status, chromedp.ByQuery),
			chromedp.Click(`#reconnect`, chromedp.ByQuery),
			chromedp.WaitVisible(`#connect-link`, chromedp.ByQuery),
			chromedp.Click(`#connect-link`, chromedp.ByQuery),
			chromedp.WaitVisible(`#dialog`, chromedp.ByQuery),
			chromedp.Text(`#dialog`, &heading, chromedp.ByQuery),
		)
		if err != nil {
			t.Fatalf("browse: %v", err)
		}
		if !strings.Contains(overview, "needs_reauth") || status != store.AuthNeedsReauth || heading != "Connect WhatsApp" {
			t.Errorf("overview %q, auth status %q, dialog %q", overview, status, heading)
		}
		dialogMu.Lock()
		defer dialogMu.Unlock()
		if len(dialogHits) != 1 || dialogHits[0] != "signed-"+tenantID {
			t.Errorf("dialog opened with %q, want once with the tenant's state", dialogHits)
		}
	})

	t.Run("search by wamid finds the message", func(t *testing.T) {
		tab := newTab(t, browser)
		d := deliver(t, "where is my bus")
		var report string
		err := chromedp.Run(tab,
			chromedp.Navigate(st.ConsoleURL+"/"),
			chromedp.SendKeys(`header form.search input[name=q]`, d.MessageIDs[0], chromedp.ByQuery),
			chromedp.Submit(`header form.search input[name=q]`, chromedp.ByQuery),
			chromedp.WaitVisible(`#report`, chromedp.ByQuery),
			chromedp.Text(`#report`, &report, chromedp.ByQuery),
		)
		if err != nil {
			t.Fatalf("browse: %v", err)
		}
		if !strings.Contains(report, "inbound_event_id: "+d.EventID) || !strings.Contains(report, "dedupe marker") {
			t.Errorf("report:\n%s", report)
		}
	})

	t.Run("overview shows a backlog after pausing a queue", func(t *testing.T) {
		tab := newTab(t, browser)
		admin, err := taskqueue.NewAdmin(ctx, st.Project, st.Location, st.TasksAddr)
		if err != nil {
			t.Fatal(err)
		}
		defer admin.Close()
		if err := admin.PauseQueue(ctx, tasks.InboundQueueID); err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := admin.ResumeQueue(ctx, tasks.InboundQueueID); err != nil {
				t.Error(err)
			}
		}()
		deliver(t, "are you there")
		row := fmt.Sprintf(`tr[data-queue=%q]`, tasks.InboundQueueID)
		var backlog, state, status string
		err = chromedp.Run(tab,
			chromedp.Navigate(st.ConsoleURL+"/"),
			chromedp.Text(row+` td.backlog`, &backlog, chromedp.ByQuery),
			chromedp.Text(row, &state, chromedp.ByQuery),
			chromedp.Text(`#health-status`, &status, chromedp.ByQuery),
		)
		if err != nil {
			t.Fatalf("browse: %v", err)
		}
		if backlog == "0" || backlog == "" || !strings.Contains(state, "paused") || status != "failing" {
			t.Errorf("inbound queue row %q (backlog %q), health %q: want a backlog, paused, failing", state, backlog, status)
		}
		// The live refresh keeps it current: wait for htmx to redraw the fragment once.
		var checked string
		if err := chromedp.Run(tab, chromedp.Evaluate(`document.querySelector('#live').dataset.seen = '1'`, nil),
			chromedp.WaitNotPresent(`#live[data-seen]`, chromedp.ByQuery),
			chromedp.Text(row+` td.backlog`, &checked, chromedp.ByQuery)); err != nil {
			t.Fatalf("live refresh: %v", err)
		}
		if checked == "0" {
			t.Errorf("after the refresh the backlog is %q", checked)
		}
	})

	browseInbox(t, browserEnv{browser: browser, st: st, db: db, replier: replier, tenantID: tenantID})

}
