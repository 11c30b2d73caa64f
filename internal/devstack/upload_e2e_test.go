package devstack_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"strings"
	"testing"
	"time"

	"github.com/wapipe/wapipe/internal/apikey"
	"github.com/wapipe/wapipe/internal/contact"
	"github.com/wapipe/wapipe/internal/devstack"
	"github.com/wapipe/wapipe/internal/graph"
	"github.com/wapipe/wapipe/internal/graph/graphfake"
	"github.com/wapipe/wapipe/internal/media/mediasample"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/testenv"
	"github.com/wapipe/wapipe/internal/whatsapp"
	"github.com/wapipe/wapipe/internal/workerclient"
)

const (
	uploadNumber  = "310000000000001"
	uploadNumberA = "310000000000002"
	uploadNumberB = "310000000000003"
)

// uploadStack is a local stack with two tenants, "up-one" with one number and "up-two" with
// two, and an API key for each.
type uploadStack struct {
	*devstack.Stack
	keyOne, keyTwo string
}

func startUploadStack(t testing.TB) uploadStack {
	t.Helper()
	ctx := context.Background()
	host := testenv.FirestoreHost(t)
	_, project := testenv.Firestore(t)
	two := []byte("id: up-two\nname: up-two\nlanguage: en\naudience: public\nphone_numbers:\n" +
		"  - {phone_number_id: \"" + uploadNumberA + "\", waba_id: \"410000000000001\"}\n" +
		"  - {phone_number_id: \"" + uploadNumberB + "\", waba_id: \"410000000000001\"}\n")
	st, err := devstack.Start(ctx, devstack.Options{
		FirestoreHost: host, Project: project, Queues: testenv.FastQueues(t),
		Tenants: [][]byte{isoTenant("up-one", uploadNumber), two},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Stop)
	db, err := store.OpenEmulator(ctx, st.FirestoreHost, st.Project, "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	us := uploadStack{Stack: st}
	for tenant, key := range map[string]*string{"up-one": &us.keyOne, "up-two": &us.keyTwo} {
		raw, id, hash, _ := apikey.New()
		if err := store.NewAPIKeys(db, store.Options{}).CreateAPIKey(ctx, store.APIKeyRecord{ID: id, TenantID: tenant, Hash: hash}); err != nil {
			t.Fatal(err)
		}
		*key = raw
	}
	return us
}

// formPart is one part of an upload form: a field, or the file when fileName is set.
type formPart struct {
	name, value        string
	fileName, fileType string
	data               []byte
}

func fileOf(name, fileType string, data []byte) formPart {
	return formPart{name: "file", fileName: name, fileType: fileType, data: data}
}

// postMedia posts parts to POST /v1/media with key and returns the status and decoded body.
func postMedia(t testing.TB, apiURL, key string, parts ...formPart) (int, map[string]any) {
	t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	for _, p := range parts {
		if p.fileName == "" {
			if err := mw.WriteField(p.name, p.value); err != nil {
				t.Fatal(err)
			}
			continue
		}
		h := textproto.MIMEHeader{}
		h.Set("Content-Disposition", fmt.Sprintf(`form-data; name=%q; filename=%q`, p.name, p.fileName))
		h.Set("Content-Type", p.fileType)
		w, err := mw.CreatePart(h)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = w.Write(p.data)
	}
	_ = mw.Close()
	req, _ := http.NewRequest(http.MethodPost, apiURL+"/v1/media", &body)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("POST /v1/media: status %d, body not JSON: %v", resp.StatusCode, err)
	}
	return resp.StatusCode, out
}

func errorCode(out map[string]any) string {
	e, _ := out["error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}

// uploads are the fake's upload calls whose file was named fileName.
func uploads(g *graphfake.Fake, fileName string) []graphfake.Request {
	var got []graphfake.Request
	for _, r := range g.Requests() {
		if r.Kind == graphfake.KindUpload && r.Body["filename"] == fileName {
			got = append(got, r)
		}
	}
	return got
}

// TestMediaUploadEndToEnd: a JPEG posted to the api's POST /v1/media goes through the real worker
// to the fake Graph API's upload, byte for byte, with the tenant's token and on its number; the
// answer's id, size and hex sha256 are the file's; the id then serves the same bytes through the
// worker's media route (a lookup and download with Meta's id) and sends an image through
// /v1/messages. Refusals come with the contract's codes and reach no upload.
func TestMediaUploadEndToEnd(t *testing.T) {
	t.Parallel()
	st := startUploadStack(t)
	photo := mediasample.Photo().Data
	sum := sha256.Sum256(photo)

	status, out := postMedia(t, st.APIURL, st.keyOne, fileOf("photo.jpg", "image/jpeg", photo))
	if status != http.StatusCreated {
		t.Fatalf("upload: status %d %v, want 201", status, out)
	}
	id, _ := out["id"].(string)
	if out["mime_type"] != "image/jpeg" || out["file_size"] != float64(len(photo)) || out["sha256"] != hex.EncodeToString(sum[:]) || id == "" {
		t.Errorf("upload answer %v, want the id, image/jpeg, %d bytes and the hex sha256 %x", out, len(photo), sum)
	}
	got, ok := st.Graph.MediaData(id)
	if !ok || !bytes.Equal(got, photo) {
		t.Errorf("the fake holds %d bytes under id %q (found %v), want the %d bytes sent", len(got), id, ok, len(photo))
	}
	calls := uploads(st.Graph, "photo.jpg")
	if len(calls) != 1 {
		t.Fatalf("%d upload calls for photo.jpg, want 1", len(calls))
	}
	c := calls[0]
	if c.Token != devstack.DevAccessToken || c.PhoneNumberID != uploadNumber || c.Body["type"] != "image/jpeg" ||
		c.Body["messaging_product"] != "whatsapp" || c.Body["file_type"] != "image/jpeg" || c.Status != http.StatusOK {
		t.Errorf("upload call: token ok %v, number %s, fields %v, status %d; want the tenant's token, %s, whatsapp image/jpeg, 200",
			c.Token == devstack.DevAccessToken, c.PhoneNumberID, c.Body, c.Status, uploadNumber)
	}
	// The id is Meta's: the console's route fetches the same bytes with it.
	wc := workerclient.NewWithHTTPClient(st.WorkerURL, st.InternalToken, http.DefaultClient)
	file, err := wc.CopyMedia(context.Background(), "up-one", id)
	if err != nil {
		t.Errorf("media route for the uploaded id: %v; want 200 and the photo", err)
	} else {
		back, _ := io.ReadAll(file.Body)
		file.Body.Close()
		if !bytes.Equal(back, photo) {
			t.Errorf("media route for the uploaded id: %d bytes; want 200 and the photo", len(back))
		}
	}
	// The uploaded id sends: the contact writes (the 24 h window opens), then /v1/messages
	// sends an image by the id, which Graph receives as Meta's image body.
	post(t, st.Stack, whatsapp.SampleText(whatsapp.SampleOptions{PhoneNumberID: uploadNumber, From: customerPhone}, "send me the photo"))
	ctx := context.Background()
	db, err := store.OpenEmulator(ctx, st.FirestoreHost, st.Project, "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	convs := store.NewConversationStore(db, store.Options{})
	conv := conversationOf(t, db, "up-one", uploadNumber, contact.Identity{WaID: customerPhone})
	testenv.Eventually(t, 60*time.Second, func() bool {
		c, err := convs.Get(ctx, conv)
		return err == nil && !c.LastInboundAt.IsZero()
	}, "the contact's message never opened the window")
	sendBody := `{"to":"` + customerPhone + `","type":"image","image":{"id":"` + id + `","caption":"your bus"}}`
	req, _ := http.NewRequest(http.MethodPost, st.APIURL+"/v1/messages", strings.NewReader(sendBody))
	req.Header.Set("Authorization", "Bearer "+st.keyOne)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("POST /v1/messages with the uploaded id: status %d, want 202", resp.StatusCode)
	}
	var sent graphfake.Request
	testenv.Eventually(t, 60*time.Second, func() bool {
		for _, r := range st.Graph.Sends() {
			if r.PhoneNumberID == uploadNumber && r.Body["type"] == "image" {
				sent = r
				return true
			}
		}
		return false
	}, "the image send never reached Graph")
	if img, _ := sent.Body["image"].(map[string]any); img["id"] != id || img["caption"] != "your bus" || sent.Body["to"] != customerPhone {
		t.Errorf("Graph received %v, want an image with the uploaded id %s and its caption, to the contact", sent.Body, id)
	}

	big := make([]byte, 5*graph.MB+1)
	copy(big, photo)
	cases := []struct {
		name       string
		key        string
		parts      []formPart
		wantStatus int
		wantCode   string
		// fileName is the file whose upload must not have reached Graph.
		fileName string
	}{
		{"image over 5 MB", st.keyOne, []formPart{fileOf("big.jpg", "image/jpeg", big)}, http.StatusRequestEntityTooLarge, "media_too_large", "big.jpg"},
		{"type WhatsApp refuses", st.keyOne, []formPart{fileOf("setup.exe", "application/x-msdownload", []byte("MZ"))}, http.StatusUnsupportedMediaType, "unsupported_media_type", "setup.exe"},
		{"no type given", st.keyOne, []formPart{fileOf("blob.bin", "application/octet-stream", photo)}, http.StatusUnsupportedMediaType, "unsupported_media_type", "blob.bin"},
		{"no API key", "", []formPart{fileOf("nokey.jpg", "image/jpeg", photo)}, http.StatusUnauthorized, "unauthenticated", "nokey.jpg"},
		{"two numbers, none named", st.keyTwo, []formPart{fileOf("which.jpg", "image/jpeg", photo)}, http.StatusBadRequest, "invalid_request", "which.jpg"},
		{"a number of another tenant", st.keyTwo, []formPart{{name: "phone_number_id", value: uploadNumber}, fileOf("other.jpg", "image/jpeg", photo)}, http.StatusBadRequest, "invalid_request", "other.jpg"},
		{"phone_number_id after the file", st.keyTwo, []formPart{fileOf("late.jpg", "image/jpeg", photo), {name: "phone_number_id", value: uploadNumberB}}, http.StatusBadRequest, "invalid_request", "late.jpg"},
		{"no file", st.keyOne, []formPart{{name: "phone_number_id", value: uploadNumber}}, http.StatusBadRequest, "invalid_request", ""},
		{"unknown field", st.keyOne, []formPart{{name: "caption", value: "hi"}, fileOf("caption.jpg", "image/jpeg", photo)}, http.StatusBadRequest, "invalid_request", "caption.jpg"},
	}
	for _, tc := range cases {
		status, out := postMedia(t, st.APIURL, tc.key, tc.parts...)
		if status != tc.wantStatus || errorCode(out) != tc.wantCode {
			t.Errorf("%s: status %d %v, want %d %s", tc.name, status, out, tc.wantStatus, tc.wantCode)
		}
		for _, c := range uploads(st.Graph, tc.fileName) {
			if c.Status == http.StatusOK {
				t.Errorf("%s: Graph took the upload (id %s)", tc.name, c.MediaID)
			}
		}
	}

	// The tenant with two numbers names one.
	status, out = postMedia(t, st.APIURL, st.keyTwo, formPart{name: "phone_number_id", value: uploadNumberB}, fileOf("second.jpg", "image/jpeg", photo))
	if calls := uploads(st.Graph, "second.jpg"); status != http.StatusCreated || len(calls) != 1 || calls[0].PhoneNumberID != uploadNumberB {
		t.Errorf("upload on the second number: status %d %v, calls %v; want 201 on %s", status, out, calls, uploadNumberB)
	}

	// Graph's refusals, as the worker meets them, reach the caller as the api's codes.
	graphCases := []struct {
		name       string
		failure    graphfake.Failure
		wantStatus int
		wantCode   string
	}{
		{"Meta refuses the file", graphfake.Failure{Kind: graphfake.KindUpload, Code: 131053, Message: "(#131053) Media upload error"}, http.StatusUnprocessableEntity, "media_refused"},
		{"Meta is down", graphfake.Failure{Kind: graphfake.KindUpload, HTTPStatus: http.StatusInternalServerError, Code: 1}, http.StatusServiceUnavailable, "unavailable"},
		{"Meta refuses the token", graphfake.Failure{Kind: graphfake.KindUpload, HTTPStatus: http.StatusUnauthorized, Code: 190}, http.StatusConflict, "WHATSAPP_REAUTH_REQUIRED"},
	}
	for _, tc := range graphCases {
		st.Graph.FailWith(1, tc.failure)
		status, out := postMedia(t, st.APIURL, st.keyOne, fileOf("refused.jpg", "image/jpeg", photo))
		if status != tc.wantStatus || errorCode(out) != tc.wantCode {
			t.Errorf("%s: status %d %v, want %d %s", tc.name, status, out, tc.wantStatus, tc.wantCode)
		}
	}
}

// TestMediaUploadLimits: each kind's limit, in bytes with MB = 1,000,000, through the real api
// and worker: a file of exactly the limit is taken, one byte more is refused with 413
// media_too_large and Graph keeps nothing.
func TestMediaUploadLimits(t *testing.T) {
	t.Parallel()
	st := startUploadStack(t)
	cases := []struct {
		mimeType string
		limit    int64
		atLimit  bool // also upload a file of exactly the limit
	}{
		{"image/jpeg", 5_000_000, true},
		{"image/png", 5_000_000, false},
		{"image/webp", 500_000, true}, // a sticker
		{"audio/ogg; codecs=opus", 16_000_000, false},
		{"video/mp4", 16_000_000, false},
		{"application/pdf", 30 << 20, false},
	}
	for i, tc := range cases {
		sizes := []int64{tc.limit + 1}
		if tc.atLimit {
			sizes = append(sizes, tc.limit)
		}
		for _, size := range sizes {
			name := fmt.Sprintf("file-%d-%d", i, size)
			status, out := postMedia(t, st.APIURL, st.keyOne, fileOf(name, tc.mimeType, make([]byte, size)))
			took := 0
			for _, c := range uploads(st.Graph, name) {
				if c.Status == http.StatusOK {
					took++
				}
			}
			switch {
			case size > tc.limit && (status != http.StatusRequestEntityTooLarge || errorCode(out) != "media_too_large" || took != 0):
				t.Errorf("%s of %d bytes: status %d %v, %d uploads taken; want 413 media_too_large and none", tc.mimeType, size, status, out, took)
			case size <= tc.limit && (status != http.StatusCreated || out["file_size"] != float64(size) || took != 1):
				t.Errorf("%s of %d bytes: status %d %v, %d uploads taken; want 201 and one", tc.mimeType, size, status, out, took)
			}
		}
	}
}
