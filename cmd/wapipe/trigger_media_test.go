package main

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/wapipe/wapipe/internal/graph"
	"github.com/wapipe/wapipe/internal/graph/graphfake"
	"github.com/wapipe/wapipe/internal/whatsapp"
)

// TestTriggerMediaFile: --file gives the file to the fake Graph API, and the posted message
// names it by the id and sha256 the worker will fetch and check it with.
func TestTriggerMediaFile(t *testing.T) {
	t.Parallel()
	fake := graphfake.New(graphfake.WithToken("tok"))
	gsrv := fake.NewTestServer()
	t.Cleanup(gsrv.Close)
	var mu sync.Mutex
	var bodies [][]byte
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, b)
		mu.Unlock()
		w.Write([]byte(`{"status":"accepted"}`))
	}))
	t.Cleanup(hook.Close)
	graphURL := gsrv.URL + "/" + graph.Version
	tests := []struct {
		args     []string
		typ      string
		mime     string
		voice    bool
		caption  string
		filename string
	}{
		{[]string{"--type", "audio", "--file", "../../internal/media/mediasample/voice-note.ogg"}, "audio", "audio/ogg; codecs=opus", true, "", ""},
		{[]string{"--type", "image", "--file", "../../internal/media/mediasample/photo.jpg", "--caption", "Bus 03 AC mati"}, "image", "image/jpeg", false, "Bus 03 AC mati", ""},
		{[]string{"--type", "document", "--file", "../../internal/media/mediasample/booking-form.pdf"}, "document", "application/pdf", false, "", "booking-form.pdf"},
	}
	c, err := graph.NewClient(graphURL, "tok", nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, tc := range tests {
		out := mustCLI(t, append([]string{"trigger", "--url", hook.URL, "--secret", "s", "--graph-url", graphURL}, tc.args...)...)
		if !strings.Contains(out, "media id ") {
			t.Fatalf("%s: output names no media id:\n%s", tc.typ, out)
		}
		mu.Lock()
		body := bodies[i]
		mu.Unlock()
		p, err := whatsapp.Parse(body)
		if err != nil {
			t.Fatal(err)
		}
		msgs, _ := whatsapp.Normalize(p)
		m := msgs[0]
		if m.Type != tc.typ || m.Media == nil || m.Media.MimeType != tc.mime || m.Media.Voice != tc.voice || m.Text != tc.caption || m.Media.Filename != tc.filename {
			t.Fatalf("%s: message %+v media %+v", tc.typ, m, m.Media)
		}
		info, err := c.MediaInfo(context.Background(), m.Media.ID)
		if err != nil {
			t.Fatalf("%s: the fake does not hold the file: %v", tc.typ, err)
		}
		var digest []byte
		if err := json.Unmarshal([]byte(`"`+m.Media.SHA256+`"`), &digest); err != nil || hex.EncodeToString(digest) != info.SHA256 {
			t.Errorf("%s: sha256 %q: %v", tc.typ, m.Media.SHA256, err)
		}
	}
	if _, _, err := cli(t, "trigger", "--url", hook.URL, "--secret", "s", "--type", "text", "--file", "x"); exitCode(err) != 2 {
		t.Errorf("--file with --type text: %v, want a usage error", err)
	}
}
