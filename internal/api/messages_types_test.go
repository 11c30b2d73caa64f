package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wapipe/wapipe/internal/graph/graphfake"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/testenv"
	"github.com/wapipe/wapipe/tasks"
)

// TestEveryMessageTypeReachesGraphAsMetaDocumentsIt posts Meta's own example body of each message
// type (testdata/send, from Meta's Cloud API reference) to /v1/messages on the local stack (api →
// Cloud Tasks emulator → worker → fake Graph API), and finds at the fake exactly that body: the
// only field wapipe adds is biz_opaque_callback_data. Along the way: a media body replayed with
// its Idempotency-Key keeps its id and is sent once; bodies Meta would refuse are refused with
// 400 invalid_request and nothing is sent; no log line carries the messages' content.
func TestEveryMessageTypeReachesGraphAsMetaDocumentsIt(t *testing.T) {
	t.Parallel()
	s := newStack(t, "")
	s.openWindow(contact, time.Now().Add(-time.Hour))
	s.Graph.AddTemplate("order_delivery_update") // the template of testdata/send/template_components.json

	refused := []struct{ name, body, field string }{
		{"caption on audio", `{"to":"` + contact + `","type":"audio","audio":{"id":"1013859600285441","caption":"hi"}}`, "audio.caption"},
		{"http link", `{"to":"` + contact + `","type":"image","image":{"link":"http://example.com/a.png"}}`, "image.link"},
		{"id and link", `{"to":"` + contact + `","type":"document","document":{"id":"1","link":"https://example.com/a.pdf"}}`, "document"},
		{"latitude 91", `{"to":"` + contact + `","type":"location","location":{"latitude":91,"longitude":0}}`, "location.latitude"},
		{"unknown contact field", `{"to":"` + contact + `","type":"contacts","contacts":[{"name":{"formatted_name":"A"},"nickname":"B"}]}`, "nickname"},
		{"two emoji", `{"to":"` + contact + `","type":"reaction","reaction":{"message_id":"wamid.X","emoji":"👍👍"}}`, "reaction.emoji"},
		{"payload on a url button", `{"to":"` + contact + `","type":"template","template":{"name":"t","language":{"code":"en"},"components":[{"type":"button","sub_type":"url","index":"0","parameters":[{"type":"payload","payload":"x"}]}]}}`, "parameters[0].type"},
	}
	for _, c := range refused {
		a := s.post(s.key, "", c.body)
		msg, _ := a.Body["error"].(map[string]any)["message"].(string)
		if a.Status != http.StatusBadRequest || a.errorCode() != "invalid_request" || !strings.Contains(msg, c.field) {
			t.Errorf("%s: %d %v, want 400 invalid_request naming %s", c.name, a.Status, a.Body, c.field)
		}
	}

	files, err := filepath.Glob("testdata/send/*.json")
	if err != nil || len(files) < 11 {
		t.Fatalf("testdata/send: %v %v", files, err)
	}
	bodies := map[string][]byte{} // by message id
	names := map[string]string{}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".json")
		body, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		a := s.post(s.key, "meta-example-"+name, string(body))
		id, _ := a.Body["id"].(string)
		if a.Status != http.StatusAccepted || id == "" {
			t.Fatalf("%s: POST answered %d %v", name, a.Status, a.Body)
		}
		bodies[id], names[id] = body, name
	}
	// Waiting on the fake, not on GET /v1/messages: polling the api would meet its rate limit.
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if _, err := s.Graph.WaitForSends(ctx, len(bodies)); err != nil {
		t.Fatalf("waiting for %d sends: %v (got %d)", len(bodies), err, len(s.Graph.Sends()))
	}
	for id, body := range bodies {
		got := s.sendsWithKey(tasks.SendKey(id))
		if len(got) != 1 {
			t.Errorf("%s: %d Graph sends, want 1", names[id], len(got))
			continue
		}
		if diff := cmp.Diff(jsonOf(t, body), graphBody(t, got[0])); diff != "" {
			t.Errorf("%s: the body Graph got differs from Meta's (-want, +got):\n%s", names[id], diff)
		}
	}

	// A media body replayed with its key once it was sent: the same id, no second send.
	sends := store.NewSends(s.db, store.Options{})
	image, _ := os.ReadFile("testdata/send/image_id.json")
	var imageID string
	for id, name := range names {
		if name == "image_id" {
			imageID = id
		}
	}
	testenv.Eventually(t, 60*time.Second, func() bool {
		rec, err := sends.GetSend(ctx, tasks.SendKey(imageID))
		return err == nil && rec.State == store.OutboundSent
	}, "the image's record never sent")
	again := s.post(s.key, "meta-example-image_id", string(image))
	if again.Status != http.StatusAccepted || again.Body["id"] != imageID || again.Body["status"] != "sent" {
		t.Errorf("replay of the image: %d %v, want 202 with id %s, sent", again.Status, again.Body, imageID)
	}
	if n := len(s.sendsWithKey(tasks.SendKey(imageID))); n != 1 {
		t.Errorf("replay of the image: %d Graph sends, want 1", n)
	}
	if n := len(s.Graph.Sends()); n != len(bodies) {
		t.Errorf("the fake Graph API took %d sends, want %d (one per accepted body, none for the refused ones)", n, len(bodies))
	}
	// Captions, filenames, places and contact cards are message content: never in a log line.
	for _, private := range []string{contact, "The best succulent ever?", "lucky-shrub-invoice.pdf", "Lucky Shrub Invoice",
		"Philz Coffee", "101 Forest Ave", "Barbara", "bjohnson@luckyshrub.com", "+19175559999", "You're welcome", "TRACK-4417"} {
		if strings.Contains(s.logs.String(), private) {
			t.Errorf("a log line carries %q", private)
		}
	}
}

// TestMediaOutsideTheWindowIsRefused: every free-form type, media and reactions included, needs
// the contact's 24-hour window like text.
func TestMediaOutsideTheWindowIsRefused(t *testing.T) {
	t.Parallel()
	s := newStack(t, "")
	s.openWindow(contact, time.Now().Add(-25*time.Hour))
	for _, name := range []string{"image_id", "document_filename", "location", "contacts", "reaction", "sticker"} {
		body, err := os.ReadFile(filepath.Join("testdata/send", name+".json"))
		if err != nil {
			t.Fatal(err)
		}
		if a := s.post(s.key, "", string(body)); a.Status != http.StatusUnprocessableEntity || a.errorCode() != "outside_customer_service_window" {
			t.Errorf("%s outside the window: %d %v, want 422 outside_customer_service_window", name, a.Status, a.Body)
		}
	}
	if n := len(s.Graph.Sends()); n != 0 {
		t.Errorf("%d Graph sends, want none", n)
	}
}

func jsonOf(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// graphBody is the body the fake received, without the callback data wapipe adds to every send.
func graphBody(t *testing.T, r graphfake.Request) map[string]any {
	m := jsonOf(t, r.RawBody)
	delete(m, "biz_opaque_callback_data")
	return m
}
