package worker_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wapipe/wapipe/internal/actioncall/actionfake"
	"github.com/wapipe/wapipe/internal/assistant"
	"github.com/wapipe/wapipe/internal/graph/graphfake"
	"github.com/wapipe/wapipe/internal/i18n"
	"github.com/wapipe/wapipe/internal/llm/geminifake"
	"github.com/wapipe/wapipe/internal/media"
	"github.com/wapipe/wapipe/internal/media/mediasample"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/testenv"
	"github.com/wapipe/wapipe/internal/whatsapp"
)

// The end-to-end media tests: media messages through the webhook and the real worker, the files
// held by the fake Graph API, read by the fake Gemini (which records the hash of the bytes it
// received, and hears the sample files as the words of their transcripts).

const (
	photoCaption = "Bus 03 AC mati"
	formFilename = "booking-form.pdf"
)

// holdMedia gives data to the fake Graph API as a customer's file and returns how a webhook
// names it.
func (s *stack) holdMedia(data []byte, mimeType string, voice bool, opts ...graphfake.MediaOption) whatsapp.SampleMediaFile {
	f := s.Graph.AddMedia(data, mimeType, opts...)
	return whatsapp.SampleMediaFile{ID: f.ID, MIMEType: mimeType, SHA256: f.SHA256, Voice: voice}
}

// sendMedia delivers a media message of typ naming f from `from` to number, and returns its id.
func (s *stack) sendMedia(number, from, typ string, f whatsapp.SampleMediaFile) string {
	s.t.Helper()
	payload := whatsapp.SampleMedia(whatsapp.SampleOptions{PhoneNumberID: number, From: from, ContactName: "Marie"}, typ, f)
	s.deliver(payload)
	return messageIDs(s.t, payload)[0]
}

// mediaCalls are the fake Graph API's media lookups and downloads of media id.
func (s *stack) mediaCalls(id string) (lookups, downloads []graphfake.Request) {
	for _, r := range s.Graph.Requests() {
		switch {
		case r.MediaID == id && r.Kind == graphfake.KindMedia:
			lookups = append(lookups, r)
		case r.MediaID == id && r.Kind == graphfake.KindDownload:
			downloads = append(downloads, r)
		}
	}
	return lookups, downloads
}

// storedMessage waits until the stored inbound message id of from's conversation on number
// satisfies ok, and returns it.
func (s *stack) storedMessage(tenantID, number, from, id string, ok func(store.Message) bool) store.Message {
	s.t.Helper()
	convs := store.NewConversationStore(store.NewDB(s.fs), store.Options{})
	var m store.Message
	testenv.Eventually(s.t, 30*time.Second, func() bool {
		conv, known := s.conversationOf(tenantID, number, from)
		if !known {
			return false
		}
		got, err := convs.GetMessage(context.Background(), conv, id)
		m = got
		return err == nil && ok(got)
	}, "the stored message never got there")
	return m
}

// confirmYes taps Yes on the confirmation prompt and waits for the action call it makes.
func (s *stack) confirmYes(number, from string, prompt graphfake.Request) []actionfake.Call {
	s.t.Helper()
	s.tap(number, from, assistant.ButtonYes, prompt.MessageID)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	calls, err := s.Action.WaitForCalls(ctx, 1)
	if err != nil {
		s.t.Fatal(err)
	}
	return calls
}

// noMediaInLogs checks that no log line carries a caption, a file name or a file's bytes.
func (s *stack) noMediaInLogs(files ...[]byte) {
	s.t.Helper()
	logs := s.logs.String()
	for _, text := range []string{photoCaption, formFilename} {
		if strings.Contains(logs, text) {
			s.t.Errorf("a log line carries message content %q", text)
		}
	}
	for _, data := range files {
		// Any 24-byte run, as the logs could carry it: raw, base64 or hex.
		chunk := data[len(data)/2 : len(data)/2+24]
		for _, enc := range []string{string(chunk), base64.StdEncoding.EncodeToString(chunk)[:28], hex.EncodeToString(chunk)} {
			if strings.Contains(logs, enc) {
				s.t.Errorf("a log line carries media bytes (%d-byte file)", len(data))
			}
		}
	}
}

// TestMediaVoiceNoteBooks: a voice note asking to book a bus reaches the model as audio, gets
// the confirmation with Yes / No, and "yes" runs exactly one action; the stored message keeps
// the file's type, checked hash and size.
func TestMediaVoiceNoteBooks(t *testing.T) {
	t.Parallel()
	s, _ := assistantStack(t)
	tid := s.assistantTenant("acme-voice", numberA, "")
	v := mediasample.VoiceNote()
	vf := s.holdMedia(v.Data, v.MIMEType, true)
	id := s.sendMedia(numberA, contact, "audio", vf)
	prompt := s.waitSendsTo(contact, 1)[0]
	if got := buttons(prompt); !slices.Equal(got, []string{assistant.ButtonYes, assistant.ButtonNo}) {
		t.Fatalf("the voice note got %q with buttons %v, want a confirmation", body(prompt), got)
	}
	reqs := s.Gemini.Requests()
	if len(reqs) == 0 || len(reqs[0].Media) != 1 {
		t.Fatalf("LLM calls %+v, want the voice note's", reqs)
	}
	if got := reqs[0].Media[0]; got.SHA256 != v.SHA256Hex() || got.MIMEType != "audio/ogg" || !got.Valid {
		t.Errorf("the model received %+v, want the voice note's bytes (sha256 %s) as audio/ogg", got, v.SHA256Hex())
	}
	calls := s.confirmYes(numberA, contact, prompt)
	if c := calls[0]; c.Intent != "create_booking" || c.Request.Data["bus"] != "01" || c.Request.Data["client"] != "Pak Agus" {
		t.Errorf("action %s %v, want create_booking of bus 01 for Pak Agus", c.Intent, c.Request.Data)
	}
	s.settled(tid)
	if n := len(s.Action.Calls()); n != 1 {
		t.Errorf("%d action calls, want 1", n)
	}
	m := s.storedMessage(tid, numberA, contact, id, func(m store.Message) bool { return m.Media != nil && m.Media.Size > 0 })
	want := store.Media{ID: vf.ID, MIMEType: "audio/ogg", SHA256: v.SHA256Hex(), Size: int64(len(v.Data))}
	if m.Type != "audio" || *m.Media != want {
		t.Errorf("stored %s message with media %+v, want audio with %+v", m.Type, *m.Media, want)
	}
	s.noMediaInLogs(v.Data)
}

// TestMediaReachesTheModel: a photo with its caption, a PDF with its file name, a location and a
// list reply each reach the model as the contract says: the file's own bytes inline (their hash
// compared) beside its text, the others as text; the stored photo and PDF keep their type,
// MIME type, hash, size, caption and file name.
func TestMediaReachesTheModel(t *testing.T) {
	t.Parallel()
	s, _ := assistantStack(t)
	tid := s.assistantTenant("acme-media", numberA, "")
	photo, form := mediasample.Photo(), mediasample.BookingForm()
	photoFile := s.holdMedia(photo.Data, photo.MIMEType, false)
	photoFile.Caption = photoCaption
	formFile := s.holdMedia(form.Data, form.MIMEType, false)
	formFile.Filename = formFilename
	tests := []struct {
		name      string
		send      func(from string) []byte
		file      *mediasample.File
		wantMIME  string
		wantText  []string
		wantStore *store.Media
	}{
		{"photo with a caption", func(from string) []byte {
			return whatsapp.SampleMedia(whatsapp.SampleOptions{PhoneNumberID: numberA, From: from}, "image", photoFile)
		}, &photo, "image/jpeg", []string{photoCaption},
			&store.Media{ID: photoFile.ID, MIMEType: "image/jpeg", SHA256: photo.SHA256Hex(), Size: int64(len(photo.Data)), Caption: photoCaption}},
		{"PDF", func(from string) []byte {
			return whatsapp.SampleMedia(whatsapp.SampleOptions{PhoneNumberID: numberA, From: from}, "document", formFile)
		}, &form, "application/pdf", []string{formFilename},
			&store.Media{ID: formFile.ID, MIMEType: "application/pdf", SHA256: form.SHA256Hex(), Size: int64(len(form.Data)), Filename: formFilename}},
		{"location", func(from string) []byte {
			return whatsapp.SampleLocation(whatsapp.SampleOptions{PhoneNumberID: numberA, From: from}, -6.2, 106.8166, "Pool Bus", "Jl. Sudirman 1")
		}, nil, "", []string{"Pool Bus", "Jl. Sudirman 1", "latitude: -6.2", "longitude: 106.8166"}, nil},
		{"list reply", func(from string) []byte {
			return whatsapp.SampleListReply(whatsapp.SampleOptions{PhoneNumberID: numberA, From: from}, "route_bdg", "Bandung", "via Cipularang")
		}, nil, "", []string{"Bandung", "(row id: route_bdg)"}, nil},
	}
	for i, tc := range tests {
		// One after the other on one stack, each from its own contact; the case's call is the
		// one with its first text.
		from := fmt.Sprintf("3362000%04d", i)
		payload := tc.send(from)
		s.deliver(payload)
		s.waitSendsTo(from, 1)
		k := slices.IndexFunc(s.Gemini.Requests(), func(r geminifake.Request) bool { return strings.Contains(r.Text, tc.wantText[0]) })
		if k < 0 {
			t.Fatalf("%s: no LLM call with %q", tc.name, tc.wantText[0])
		}
		req := s.Gemini.Requests()[k]
		for _, w := range tc.wantText {
			if !strings.Contains(req.Text, w) {
				t.Errorf("%s: the model's text %q lacks %q", tc.name, req.Text, w)
			}
		}
		if tc.file == nil {
			if len(req.Media) != 0 {
				t.Errorf("%s: the model received files %+v, want text only", tc.name, req.Media)
			}
			continue
		}
		if len(req.Media) != 1 || req.Media[0].SHA256 != tc.file.SHA256Hex() || req.Media[0].MIMEType != tc.wantMIME ||
			req.Media[0].Size != len(tc.file.Data) {
			t.Errorf("%s: the model received %+v, want %s's %d bytes (sha256 %s) as %s", tc.name, req.Media, tc.file.Name,
				len(tc.file.Data), tc.file.SHA256Hex(), tc.wantMIME)
		}
		id := messageIDs(t, payload)[0]
		m := s.storedMessage(tid, numberA, from, id, func(m store.Message) bool { return m.Media != nil && m.Media.Size > 0 })
		if m.Type != tc.file.Type || *m.Media != *tc.wantStore {
			t.Errorf("%s: stored %s message with media %+v, want %s with %+v", tc.name, m.Type, *m.Media, tc.file.Type, *tc.wantStore)
		}
	}
	s.settled(tid)
	s.noMediaInLogs(photo.Data, form.Data)
}

// TestMediaRefusals: a file whose bytes do not match the webhook's sha256 or that Meta no longer
// has gets "please send it again"; a file over MEDIA_MAX_BYTES or of a type the model cannot
// read gets "I can't read this kind of file", with no LLM call and no download beyond the cap.
// A Graph 5xx is retried, then the file answered.
func TestMediaRefusals(t *testing.T) {
	t.Parallel()
	s, _ := assistantStack(t)
	tid := s.assistantTenant("acme-refusals", numberA, "")
	photo := mediasample.Photo()
	resend, unsupported := i18n.Text("en", i18n.MediaResend), i18n.Text("en", i18n.MediaUnsupported)

	mismatch := s.holdMedia(photo.Data, photo.MIMEType, false)
	other := sha256.Sum256([]byte("another file"))
	mismatch.SHA256 = base64.StdEncoding.EncodeToString(other[:])
	gone := s.holdMedia(photo.Data, photo.MIMEType, false)
	s.Graph.ExpireMedia(gone.ID)
	big := bytes.Repeat([]byte{0xff}, media.DefaultMaxBytes+1)
	oversize := s.holdMedia(big, "image/jpeg", false)
	// A lookup that understates the size and a download without a length: the cap holds while
	// reading.
	const hugeSize = 3 * media.DefaultMaxBytes
	lying := s.holdMedia(bytes.Repeat([]byte{0xfe}, hugeSize), "image/jpeg", false, graphfake.WithLookupFileSize(1000),
		graphfake.WithoutContentLength())
	zip := s.holdMedia([]byte("PK\x03\x04 not a file the model reads"), "application/zip", false)
	zip.Filename = formFilename

	tests := []struct {
		name         string
		typ          string
		file         whatsapp.SampleMediaFile
		want         string
		wantLookups  bool
		wantDownload bool
	}{
		{"sha256 mismatch", "image", mismatch, resend, true, true},
		{"expired media id", "image", gone, resend, true, false},
		{"over the cap (announced)", "image", oversize, unsupported, true, false},
		{"over the cap (read)", "image", lying, unsupported, true, true},
		{"unsupported type", "document", zip, unsupported, false, false},
	}
	for i, tc := range tests {
		from := fmt.Sprintf("3363000%04d", i)
		s.sendMedia(numberA, from, tc.typ, tc.file)
		if got := body(s.waitSendsTo(from, 1)[0]); got != tc.want {
			t.Errorf("%s: answered %q, want %q", tc.name, got, tc.want)
		}
		lookups, downloads := s.mediaCalls(tc.file.ID)
		if tc.wantDownload {
			// A download's record is complete once the fake stopped writing.
			testenv.Eventually(t, 30*time.Second, func() bool {
				lookups, downloads = s.mediaCalls(tc.file.ID)
				return len(downloads) > 0 && downloads[0].Ended
			}, "%s: the download never ended", tc.name)
		}
		if (len(lookups) > 0) != tc.wantLookups || (len(downloads) > 0) != tc.wantDownload {
			t.Errorf("%s: %d lookups, %d downloads; want lookups %v, a download %v", tc.name, len(lookups), len(downloads),
				tc.wantLookups, tc.wantDownload)
		}
		for _, d := range downloads {
			// The worker reads at most the cap and hangs up; what left the fake adds the
			// connection's buffers (a few MiB each way), far under the file's 45 MiB.
			if d.BytesSent >= hugeSize {
				t.Errorf("%s: the download sent the whole file (%d bytes), want it cut near the cap %d", tc.name, d.BytesSent, media.DefaultMaxBytes)
			}
		}
	}
	s.settled(tid)
	if n := len(s.Gemini.Requests()); n != 0 {
		t.Errorf("%d LLM calls for refused files, want 0", n)
	}

	// Graph answers the lookup 500 twice: the turn is retried, then the photo reaches the model.
	s.Graph.FailWith(2, graphfake.Failure{HTTPStatus: 500, Code: 2, Kind: graphfake.KindMedia})
	ok := s.holdMedia(photo.Data, photo.MIMEType, false)
	const from = "33630009999"
	s.sendMedia(numberA, from, "image", ok)
	if got := body(s.waitSendsTo(from, 1)[0]); got == resend || got == unsupported {
		t.Errorf("after Graph's 5xx the photo was answered %q, want the model's answer", got)
	}
	lookups, downloads := s.mediaCalls(ok.ID)
	if len(lookups) < 3 || len(downloads) < 1 || lookups[0].Status != 500 || lookups[1].Status != 500 {
		t.Errorf("%d lookups, %d downloads; want two 500s, then the file", len(lookups), len(downloads))
	}
	if reqs := s.Gemini.Requests(); len(reqs) == 0 || len(reqs[0].Media) != 1 || reqs[0].Media[0].SHA256 != photo.SHA256Hex() {
		t.Errorf("LLM calls %+v, want the photo's", reqs)
	}
	s.settled(tid)
	s.noMediaInLogs(photo.Data, big)
}

// TestMediaNotFetchedOverTheGuardrails: a voice note from a contact over its rate limit, or to
// a tenant over its quota, downloads nothing: the fake Graph API sees no media call.
func TestMediaNotFetchedOverTheGuardrails(t *testing.T) {
	t.Parallel()
	s, _ := assistantStack(t)
	limited := s.assistantTenant("acme-media-limit", numberA, "limits:\n  conversation: {max: 1, per: 10m}\n")
	quota := s.assistantTenant("acme-media-quota", numberB, "quota: {llm_calls_per_month: 1}\n")
	v := mediasample.VoiceNote()
	for _, tc := range []struct {
		name, tenant, number, from, want string
	}{
		{"rate limited", limited, numberA, "33640000001", i18n.Text("en", i18n.RateLimited)},
		{"over quota", quota, numberB, "33640000002", i18n.Text("en", i18n.QuotaExceeded)},
	} {
		base := time.Now()
		s.text(tc.number, tc.from, "hello", base)
		s.waitSendsTo(tc.from, 1)
		f := s.holdMedia(v.Data, v.MIMEType, true)
		payload := whatsapp.SampleMedia(whatsapp.SampleOptions{PhoneNumberID: tc.number, From: tc.from, Timestamp: base.Add(time.Second)}, "audio", f)
		s.deliver(payload)
		if got := body(s.waitSendsTo(tc.from, 2)[1]); got != tc.want {
			t.Errorf("%s: the voice note was answered %q, want %q", tc.name, got, tc.want)
		}
		s.settled(tc.tenant)
		if lookups, downloads := s.mediaCalls(f.ID); len(lookups)+len(downloads) != 0 {
			t.Errorf("%s: %d lookups, %d downloads; want none", tc.name, len(lookups), len(downloads))
		}
	}
	for _, r := range s.Gemini.Requests() {
		if len(r.Media) != 0 {
			t.Errorf("the model received a file %+v, want the texts only", r.Media)
		}
	}
}

// TestMediaTokenRefused: Graph refuses the tenant's token on the media lookup: the model is not
// called, and the tenant is marked needs_reauth (the turn's "unavailable" reply meets the same
// refusal and is parked).
func TestMediaTokenRefused(t *testing.T) {
	t.Parallel()
	s, _ := assistantStack(t)
	tid := s.assistantTenant("acme-media-auth", numberA, "")
	v := mediasample.VoiceNote()
	f := s.holdMedia(v.Data, v.MIMEType, true)
	s.Graph.RevokeToken("token-" + "acme-media-auth")
	s.sendMedia(numberA, contact, "audio", f)
	tenants := store.NewTenants(store.NewDB(s.fs), store.Options{})
	testenv.Eventually(t, 30*time.Second, func() bool {
		rec, err := tenants.Get(context.Background(), tid)
		return err == nil && rec.AuthStatus == store.AuthNeedsReauth
	}, "the tenant was never marked needs_reauth")
	s.settled(tid)
	if lookups, _ := s.mediaCalls(f.ID); len(lookups) == 0 || lookups[0].Status != 401 {
		t.Errorf("lookups %+v, want the refused one", lookups)
	}
	if n := len(s.Gemini.Requests()); n != 0 {
		t.Errorf("%d LLM calls, want 0", n)
	}
	if !strings.Contains(s.logs.String(), `"reason":"media_auth"`) {
		t.Error("no log line with reason media_auth")
	}
}
