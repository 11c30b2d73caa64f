package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// fakeAPI stands in for the api service: POST /v1/media as the contract pins it (201
// {"id","mime_type","file_size","sha256"}) and POST /v1/messages (202 {"id","status"}). It
// records what it was sent. Once the upload route exists on the api, TestSendThroughTheStack
// covers the real one for templates; this one keeps the upload path's test independent of it.
type fakeAPI struct {
	mu       sync.Mutex
	uploads  []fakeUpload
	messages []map[string]any
	idems    []string
	// mediaStatus, when set, is the upload's answer instead of 201.
	mediaStatus int
}

type fakeUpload struct {
	name, ctype, number string
	data                []byte
}

func (f *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if r.Header.Get("Authorization") != "Bearer wpk_test" {
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, `{"error":{"code":"unauthenticated","message":"a valid API key is required"}}`)
		return
	}
	switch r.URL.Path {
	case "/v1/media":
		if f.mediaStatus != 0 {
			w.WriteHeader(f.mediaStatus)
			io.WriteString(w, `{"error":{"code":"media_too_large","message":"file: an image is at most 5000000 bytes"}}`)
			return
		}
		mr, err := r.MultipartReader()
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var up fakeUpload
		for {
			p, err := mr.NextPart()
			if err == io.EOF {
				break
			}
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			b, _ := io.ReadAll(p)
			switch p.FormName() {
			case "file":
				up.name, up.ctype, up.data = p.FileName(), p.Header.Get("Content-Type"), b
			case "phone_number_id":
				up.number = string(b)
			}
		}
		f.uploads = append(f.uploads, up)
		sum := sha256.Sum256(up.data)
		w.WriteHeader(http.StatusCreated)
		json.NewEncoder(w).Encode(map[string]any{"id": "media-1", "mime_type": up.ctype, "file_size": len(up.data), "sha256": hex.EncodeToString(sum[:])})
	case "/v1/messages":
		var m map[string]any
		if err := json.NewDecoder(r.Body).Decode(&m); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		f.messages = append(f.messages, m)
		f.idems = append(f.idems, r.Header.Get("Idempotency-Key"))
		w.WriteHeader(http.StatusAccepted)
		io.WriteString(w, `{"id":"msg_0123456789abcdef0123456789abcdef","status":"queued"}`)
	default:
		http.NotFound(w, r)
	}
}

// TestSendBuildsMetaBodies runs wapipe send for each kind of message against a stand-in api and
// finds Meta's body at /v1/messages, the file's bytes and type at /v1/media first for media,
// and the message id alone on the last line.
func TestSendBuildsMetaBodies(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	png := filepath.Join(dir, "bus.png")
	pdf := filepath.Join(dir, "invoice-0042.pdf")
	noExt := filepath.Join(dir, "ticket")
	pngBytes := append([]byte("\x89PNG\r\n\x1a\n"), make([]byte, 3000)...)
	for path, b := range map[string][]byte{png: pngBytes, pdf: []byte("%PDF-1.4 invoice"), noExt: []byte("%PDF-1.7 ticket")} {
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	const to = "6281234567890"
	cases := []struct {
		name   string
		args   []string
		upload *fakeUpload
		want   string
	}{
		{"text", []string{"--text", "Your bus leaves at 9"},
			nil, `{"to":"` + to + `","type":"text","text":{"body":"Your bus leaves at 9"}}`},
		{"image with caption", []string{"--image", png, "--caption", "Bus 01", "--phone-number-id", "106540352242922"},
			&fakeUpload{name: "bus.png", ctype: "image/png", number: "106540352242922", data: pngBytes},
			`{"to":"` + to + `","phone_number_id":"106540352242922","type":"image","image":{"id":"media-1","caption":"Bus 01"}}`},
		{"document named after the file", []string{"--document", pdf},
			&fakeUpload{name: "invoice-0042.pdf", ctype: "application/pdf", data: []byte("%PDF-1.4 invoice")},
			`{"to":"` + to + `","type":"document","document":{"id":"media-1","filename":"invoice-0042.pdf"}}`},
		{"document typed by its bytes, renamed", []string{"--document", noExt, "--filename", "ticket.pdf", "--caption", "Your ticket"},
			&fakeUpload{name: "ticket", ctype: "application/pdf", data: []byte("%PDF-1.7 ticket")},
			`{"to":"` + to + `","type":"document","document":{"id":"media-1","filename":"ticket.pdf","caption":"Your ticket"}}`},
		{"location", []string{"--location", "-8.65,115.2167", "--name", "Pickup", "--address", "Jl. Legian 1"},
			nil, `{"to":"` + to + `","type":"location","location":{"latitude":-8.65,"longitude":115.2167,"name":"Pickup","address":"Jl. Legian 1"}}`},
		{"template with parameters", []string{"--template", "booking_confirmed", "--language", "en_US", "--param", "Budi", "--param", "Friday 7pm"},
			nil, `{"to":"` + to + `","type":"template","template":{"name":"booking_confirmed","language":{"code":"en_US"},"components":[{"type":"body","parameters":[{"type":"text","text":"Budi"},{"type":"text","text":"Friday 7pm"}]}]}}`},
		{"template without parameters", []string{"--template", "hello_world", "--language", "en_US"},
			nil, `{"to":"` + to + `","type":"template","template":{"name":"hello_world","language":{"code":"en_US"}}}`},
		{"quoted reply", []string{"--text", "Yes", "--reply-to", "wamid.X"},
			nil, `{"to":"` + to + `","type":"text","context":{"message_id":"wamid.X"},"text":{"body":"Yes"}}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			api := &fakeAPI{}
			srv := httptest.NewServer(api)
			defer srv.Close()
			args := append([]string{"send", "--tenant", "sunrise-bus", "--to", to, "--api-url", srv.URL, "--api-key", "wpk_test", "--idempotency-key", "k-1"}, c.args...)
			out := mustCLI(t, args...)
			if got := lastLine(out); got != "msg_0123456789abcdef0123456789abcdef" {
				t.Errorf("last line %q, want the message id", got)
			}
			api.mu.Lock()
			defer api.mu.Unlock()
			if len(api.messages) != 1 || api.idems[0] != "k-1" {
				t.Fatalf("%d messages (keys %v), want 1 with the key", len(api.messages), api.idems)
			}
			var want map[string]any
			if err := json.Unmarshal([]byte(c.want), &want); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, api.messages[0]); diff != "" {
				t.Errorf("message body (-want, +got):\n%s", diff)
			}
			var wantUploads []fakeUpload
			if c.upload != nil {
				wantUploads = []fakeUpload{*c.upload}
			}
			if diff := cmp.Diff(wantUploads, api.uploads, cmp.AllowUnexported(fakeUpload{})); diff != "" {
				t.Errorf("uploads (-want, +got):\n%s", diff)
			}
		})
	}
}

// TestSendRefusals: a refused upload sends no message and says the api's code; a refused key
// says unauthenticated; a command line that asks for no message, two messages, or flags of
// another kind is a usage error (exit 2) before any call.
func TestSendRefusals(t *testing.T) {
	t.Parallel()
	api := &fakeAPI{mediaStatus: http.StatusRequestEntityTooLarge}
	srv := httptest.NewServer(api)
	defer srv.Close()
	img := filepath.Join(t.TempDir(), "big.jpg")
	if err := os.WriteFile(img, []byte("\xff\xd8\xff"), 0o600); err != nil {
		t.Fatal(err)
	}
	base := []string{"send", "--tenant", "sunrise-bus", "--to", "6281234567890", "--api-url", srv.URL, "--api-key", "wpk_test"}
	cases := []struct {
		name  string
		args  []string
		usage bool
		want  string
	}{
		{"upload too large", []string{"--image", img}, false, "413 media_too_large"},
		{"wrong key", []string{"--text", "hi", "--api-key", "wpk_other"}, false, "401 unauthenticated"},
		{"no message", nil, true, "give one of --text"},
		{"two messages", []string{"--text", "a", "--location", "1,2"}, true, "got 2"},
		{"caption on text", []string{"--text", "a", "--caption", "c"}, true, "--caption goes with --image or --document only"},
		{"filename on an image", []string{"--image", img, "--filename", "x.jpg"}, true, "--filename goes with --document only"},
		{"param without template", []string{"--text", "a", "--param", "p"}, true, "--param goes with --template only"},
		{"template without language", []string{"--template", "hello_world"}, true, "--template needs --language"},
		{"bad location", []string{"--location", "north"}, true, "--location: want LAT,LNG"},
		{"missing file", []string{"--document", "/no/such/file.pdf"}, true, "not a readable file"},
		{"no tenant", []string{"--tenant", "", "--text", "a"}, true, "--tenant is required"},
		{"bad api url", []string{"--text", "a", "--api-url", "localhost:8083"}, true, "--api-url"},
	}
	for _, c := range cases {
		_, errOut, err := cli(t, append(append([]string{}, base...), c.args...)...)
		if err == nil || !strings.Contains(err.Error(), c.want) || (exitCode(err) == 2) != c.usage {
			t.Errorf("%s: %v (exit %d, stderr %q), want an error with %q, usage error %v", c.name, err, exitCode(err), errOut, c.want, c.usage)
		}
	}
	api.mu.Lock()
	defer api.mu.Unlock()
	if len(api.messages) != 0 {
		t.Errorf("%d messages sent, want none", len(api.messages))
	}
}

// TestSendThroughTheStack runs wapipe send beside a local stack with no key: it creates one for
// the tenant (expiring), sends a template with parameters through the real api, and the fake
// Graph API receives Meta's body from the tenant's number.
func TestSendThroughTheStack(t *testing.T) {
	t.Parallel()
	s := newStack(t, nil)
	// send takes the Firestore flags only: its --location is a message's.
	out, errOut, err := cli(t, "send", "--project", s.Project, "--firestore-emulator", s.FirestoreHost,
		"--tenant", "sunrise-bus", "--to", "6281234567890", "--phone-number-id", "106540352242922",
		"--api-url", s.APIURL, "--api-key", "", "--template", "hello_world", "--language", "en_US", "--param", "Budi")
	if err != nil {
		t.Fatalf("wapipe send: %v\nstderr:\n%s", err, errOut)
	}
	if !regexp.MustCompile(`created an API key for sunrise-bus that expires in 1h \(wpk_[0-9a-f]{16}\)`).MatchString(errOut) {
		t.Errorf("stderr %q, want the prefix of the key it created", errOut)
	}
	id := lastLine(out)
	if !strings.HasPrefix(id, "msg_") {
		t.Fatalf("last line %q, want the message id", id)
	}
	sends := s.waitSends(t, 1)
	var got map[string]any
	if err := json.Unmarshal(sends[0].RawBody, &got); err != nil {
		t.Fatal(err)
	}
	delete(got, "biz_opaque_callback_data")
	want := map[string]any{"messaging_product": "whatsapp", "to": "6281234567890", "type": "template", "template": map[string]any{
		"name": "hello_world", "language": map[string]any{"code": "en_US"},
		"components": []any{map[string]any{"type": "body", "parameters": []any{map[string]any{"type": "text", "text": "Budi"}}}},
	}}
	if diff := cmp.Diff(want, got); diff != "" || sends[0].PhoneNumberID != "106540352242922" {
		t.Errorf("Graph got from %s (-want, +got):\n%s", sends[0].PhoneNumberID, diff)
	}
}

// TestSendByRecipient: --recipient sends to a business-scoped user id, with no "to", as the api
// takes it; neither --to nor --recipient is a usage error.
func TestSendByRecipient(t *testing.T) {
	t.Parallel()
	api := &fakeAPI{}
	srv := httptest.NewServer(api)
	defer srv.Close()
	const user = "US.13491208655302741918"
	mustCLI(t, "send", "--tenant", "sunrise-bus", "--recipient", user, "--api-url", srv.URL, "--api-key", "wpk_test", "--text", "hello")
	api.mu.Lock()
	defer api.mu.Unlock()
	want := map[string]any{"recipient": user, "type": "text", "text": map[string]any{"body": "hello"}}
	if len(api.messages) != 1 {
		t.Fatalf("%d messages, want 1", len(api.messages))
	}
	if diff := cmp.Diff(want, api.messages[0]); diff != "" {
		t.Errorf("message body (-want, +got):\n%s", diff)
	}
	if _, _, err := cli(t, "send", "--tenant", "sunrise-bus", "--api-url", srv.URL, "--api-key", "wpk_test", "--text", "hi"); exitCode(err) != 2 ||
		!strings.Contains(err.Error(), "--to or --recipient") {
		t.Errorf("send with neither: %v, want a usage error naming both", err)
	}
}
