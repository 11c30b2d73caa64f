package console_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/wapipe/wapipe/internal/contact"
	"github.com/wapipe/wapipe/internal/devstack"
	"github.com/wapipe/wapipe/internal/graph/graphfake"
	"github.com/wapipe/wapipe/internal/media/mediasample"
	"github.com/wapipe/wapipe/internal/operator"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/testenv"
	"github.com/wapipe/wapipe/internal/whatsapp"
)

// TestBrowserMessageImage: on the whole local stack, a photo a contact sent shows in its
// conversation as the image itself, fetched from the fake Graph API through the console's
// authenticated route and the worker (never stored); a photo Meta no longer has gives way to the
// message's media line. The route is no open proxy: a media id that is not an image of the named
// conversation of the tenant is refused before the worker is asked.
func TestBrowserMessageImage(t *testing.T) {
	t.Parallel()
	host := testenv.FirestoreHost(t)
	browser := newBrowser(t)
	ctx := context.Background()
	const number, sender = "106540352242955", "16505559876"
	tenantFile := fmt.Sprintf("id: console-media\nname: Console Media\nlanguage: en\naudience: public\nphone_numbers:\n"+
		"  - {phone_number_id: %q, waba_id: \"102290129340399\"}\n", number)
	st, err := devstack.Start(ctx, devstack.Options{FirestoreHost: host, Project: testenv.ProjectID(t), Queues: testenv.FastQueues(t),
		Tenants: [][]byte{[]byte(tenantFile)}})
	if err != nil {
		t.Fatalf("devstack.Start: %v", err)
	}
	t.Cleanup(st.Stop)
	tenantID := st.Tenants[0]
	// The sender's conversation: its id is keyed, found through the contact the pipeline makes.
	var convID string

	photo := mediasample.Photo()
	shown := st.Graph.AddMedia(photo.Data, photo.MIMEType)
	gone := st.Graph.AddMedia(append([]byte{0xff, 0xd8}, bytes.Repeat([]byte{1}, 100)...), "image/jpeg")
	stray := st.Graph.AddMedia(photo.Data, photo.MIMEType) // never sent in a message
	// Announced as a JPEG in the webhook, but Graph serves it as a page: never passed on.
	disguised := st.Graph.AddMedia([]byte("<script>alert(1)</script>"), "text/html")
	// An SVG, which may carry script, with its type in capitals (types are case-insensitive).
	svg := st.Graph.AddMedia([]byte(`<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>`), "image/SVG+xml")
	client := &http.Client{Timeout: 30 * time.Second}
	for _, f := range []graphfake.MediaFile{shown, gone, disguised, svg} {
		body := whatsapp.SampleMedia(whatsapp.SampleOptions{PhoneNumberID: number, From: sender},
			"image", whatsapp.SampleMediaFile{ID: f.ID, MIMEType: "image/jpeg", SHA256: f.SHA256, Caption: "photo " + f.ID})
		res, err := operator.Post(ctx, client, st.WebhookURL, st.AppSecret, body)
		if err != nil || res.StatusCode != http.StatusOK {
			t.Fatalf("deliver: %+v, %v", res, err)
		}
	}
	db, err := store.OpenEmulator(ctx, st.FirestoreHost, st.Project, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	convs := store.NewConversationStore(db, store.Options{})
	testenv.Eventually(t, 60*time.Second, func() bool {
		id, ok, err := convs.ConversationOf(ctx, tenantID, number, contact.Identity{WaID: sender})
		if err != nil || !ok {
			return false
		}
		convID = id
		msgs, err := convs.Messages(ctx, convID, 100)
		n := 0
		for _, m := range msgs {
			if err == nil && m.Media != nil && (m.Media.ID == shown.ID || m.Media.ID == gone.ID || m.Media.ID == disguised.ID || m.Media.ID == svg.ID) {
				n++
			}
		}
		// A message is stored before its conversation is created (AddInbound, then Acquire):
		// the console shows both only once the conversation exists.
		c, cerr := convs.Get(ctx, convID)
		return n == 4 && cerr == nil && c.TenantID == tenantID
	}, "the four photos were not stored with their media ids in the tenant's conversation")
	st.Graph.ExpireMedia(gone.ID)

	get := func(path string) (*http.Response, []byte) {
		t.Helper()
		resp, err := client.Get(st.ConsoleURL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, b
	}
	resp, b := get("/media/" + tenantID + "/" + shown.ID + "?c=" + convID)
	if resp.StatusCode != http.StatusOK || !bytes.Equal(b, photo.Data) {
		t.Errorf("the message's image: status %d, %d bytes; want 200 and the photo's %d", resp.StatusCode, len(b), len(photo.Data))
	}
	for h, want := range map[string]string{"Content-Type": "image/jpeg", "X-Content-Type-Options": "nosniff",
		"Content-Security-Policy": "sandbox", "Cache-Control": "private, no-store"} {
		if got := resp.Header.Get(h); got != want {
			t.Errorf("image header %s: %q, want %q", h, got, want)
		}
	}
	for _, path := range []string{
		"/media/" + tenantID + "/" + stray.ID + "?c=" + convID,     // not in the conversation
		"/media/another-tenant/" + shown.ID + "?c=" + convID,       // not the conversation's tenant
		"/media/" + tenantID + "/" + shown.ID,                      // no conversation named
		"/media/" + tenantID + "/" + disguised.ID + "?c=" + convID, // Graph serves it as text/html
		"/media/" + tenantID + "/" + svg.ID + "?c=" + convID,       // Graph serves it as image/SVG+xml
	} {
		if resp, _ := get(path); resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s: status %d, want 404", path, resp.StatusCode)
		}
	}
	for _, r := range st.Graph.Requests() {
		if r.MediaID == stray.ID {
			t.Errorf("Graph was asked for the stray media id (%s)", r.Kind)
		}
	}

	tab := newTab(t, browser)
	// In front: a background tab's document is hidden, and Chromium loads no lazy image there.
	if err := chromedp.Run(tab, chromedp.EmulateViewport(1400, 1000), page.BringToFront(),
		chromedp.Navigate(st.ConsoleURL+"/conversations/"+convID),
		chromedp.WaitVisible(`#messages`, chromedp.ByQuery)); err != nil {
		t.Fatalf("browse: %v", err)
	}
	img := func(id string) string { return fmt.Sprintf(`document.querySelector('img.media-img[src*="/%s?"]')`, id) }
	// The images are lazy: scrolled into view, each loads or fails.
	var loaded, hidden bool
	testenv.Eventually(t, 60*time.Second, func() bool {
		err := chromedp.Run(tab, chromedp.Evaluate(fmt.Sprintf(`(function(){var i=%s; if(!i) return false; i.scrollIntoView(); return i.complete && i.naturalWidth > 0})()`, img(shown.ID)), &loaded))
		return err == nil && loaded
	}, "the photo never showed as an image with a natural width")
	testenv.Eventually(t, 60*time.Second, func() bool {
		err := chromedp.Run(tab, chromedp.Evaluate(fmt.Sprintf(`(function(){var i=%s; if(!i) return false; i.scrollIntoView(); return i.hidden && getComputedStyle(i).display === "none"})()`, img(gone.ID)), &hidden))
		return err == nil && hidden
	}, "the photo Meta no longer has was not replaced by its media line")
	var mediaLines int
	if err := chromedp.Run(tab, chromedp.Evaluate(`document.querySelectorAll('#messages .media-info').length`, &mediaLines)); err != nil || mediaLines != 4 {
		t.Errorf("%d media lines (%v), want 4: the placeholder stays beside every image", mediaLines, err)
	}
	if err := chromedp.Run(tab, chromedp.Evaluate(img(shown.ID)+`.scrollIntoView()`, nil)); err != nil {
		t.Fatal(err)
	}
	screenshot(t, tab, "conversation-image")
}
