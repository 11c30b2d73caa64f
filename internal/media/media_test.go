package media_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/wapipe/wapipe/internal/assistant"
	"github.com/wapipe/wapipe/internal/graph"
	"github.com/wapipe/wapipe/internal/graph/graphfake"
	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/internal/logging/logcheck"
	"github.com/wapipe/wapipe/internal/media"
	"github.com/wapipe/wapipe/internal/media/mediasample"
	"github.com/wapipe/wapipe/internal/whatsapp"
)

const token = "tenant-token"

// stack is a fake Graph over HTTP and a Fetcher talking to it through graph's client.
type stack struct {
	fake *graphfake.Fake
	srv  *httptest.Server
	f    *media.Fetcher
}

func newStack(t testing.TB, cfg media.Config) *stack {
	t.Helper()
	fake := graphfake.New(graphfake.WithToken(token))
	srv := fake.NewTestServer()
	t.Cleanup(srv.Close)
	g, err := graph.NewClient(srv.URL+"/"+graph.Version, "", srv.Client())
	if err != nil {
		t.Fatal(err)
	}
	cfg.AllowInsecureURL = true // the fake serves http
	f, err := media.New(g, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &stack{fake: fake, srv: srv, f: f}
}

// msg is the normalised webhook message for file mf.
func msg(typ string, mf graphfake.MediaFile, caption, filename string) whatsapp.Message {
	return whatsapp.Message{ID: "wamid.test", From: "6281234567890", Type: typ, Text: caption,
		Media: &whatsapp.Media{ID: mf.ID, MimeType: mf.MIMEType, SHA256: mf.SHA256, Filename: filename}}
}

func hexSHA(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func TestFetch(t *testing.T) {
	t.Parallel()
	s := newStack(t, media.Config{})
	voice := mediasample.VoiceNote()
	mf := s.fake.AddMedia(voice.Data, voice.MIMEType)
	m := msg("audio", mf, "", "")
	m.Media.Voice = true
	att, err := s.f.Fetch(context.Background(), token, m, nil)
	if err != nil {
		t.Fatalf("Fetch: %v", err)
	}
	if !bytes.Equal(att.Data, voice.Data) || att.MIMEType != "audio/ogg" || att.Size != int64(len(voice.Data)) ||
		att.SHA256 != hexSHA(voice.Data) || !att.Voice || att.Kind != "audio" {
		t.Errorf("attachment = %+v (%d bytes)", att, len(att.Data))
	}
	rs := s.fake.Requests()
	if len(rs) != 2 || rs[0].Kind != graphfake.KindMedia || rs[1].Kind != graphfake.KindDownload {
		t.Fatalf("requests = %+v; want a lookup then a download", rs)
	}
	for _, r := range rs {
		if r.Token != token || r.MediaID != mf.ID || r.Status != 200 {
			t.Errorf("request %s %s: token %q, media id %q, status %d", r.Kind, r.Path, r.Token, r.MediaID, r.Status)
		}
	}
}

func TestFetchKeepsCaptionAndFilename(t *testing.T) {
	t.Parallel()
	s := newStack(t, media.Config{})
	pdf := mediasample.BookingForm()
	mf := s.fake.AddMedia(pdf.Data, pdf.MIMEType)
	att, err := s.f.Loader(token, nil).LoadMedia(context.Background(), msg("document", mf, "the form", "form.pdf"))
	if err != nil {
		t.Fatalf("LoadMedia: %v", err)
	}
	if att.Caption != "the form" || att.Filename != "form.pdf" || att.MIMEType != "application/pdf" {
		t.Errorf("attachment = %+v", att)
	}
}

// TestFetchFailures: each failure has its kind, and what could not be used is not downloaded.
func TestFetchFailures(t *testing.T) {
	t.Parallel()
	photo := mediasample.Photo()
	other := sha256.Sum256([]byte("other"))
	tests := []struct {
		name  string
		setup func(s *stack) whatsapp.Message
		token string
		want  error
		// wantKinds are the kinds of the requests the fake saw.
		wantKinds []string
	}{
		{name: "wrong token", token: "stolen",
			setup: func(s *stack) whatsapp.Message {
				return msg("image", s.fake.AddMedia(photo.Data, "image/jpeg"), "", "")
			},
			want: media.ErrAuth, wantKinds: []string{graphfake.KindMedia}},
		{name: "expired id",
			setup: func(s *stack) whatsapp.Message {
				mf := s.fake.AddMedia(photo.Data, "image/jpeg")
				s.fake.ExpireMedia(mf.ID)
				return msg("image", mf, "", "")
			},
			want: media.ErrGone, wantKinds: []string{graphfake.KindMedia}},
		{name: "download 404",
			setup: func(s *stack) whatsapp.Message {
				s.fake.FailWith(1, graphfake.Failure{Kind: graphfake.KindDownload, HTTPStatus: 404, Code: 100})
				return msg("image", s.fake.AddMedia(photo.Data, "image/jpeg"), "", "")
			},
			want: media.ErrGone, wantKinds: []string{graphfake.KindMedia, graphfake.KindDownload}},
		{name: "lookup 5xx",
			setup: func(s *stack) whatsapp.Message {
				s.fake.FailWith(1, graphfake.Failure{Kind: graphfake.KindMedia, Code: 131016})
				return msg("image", s.fake.AddMedia(photo.Data, "image/jpeg"), "", "")
			},
			want: media.ErrRetryable, wantKinds: []string{graphfake.KindMedia}},
		{name: "download 5xx",
			setup: func(s *stack) whatsapp.Message {
				s.fake.FailWith(1, graphfake.Failure{Kind: graphfake.KindDownload, HTTPStatus: 502, Code: 1})
				return msg("image", s.fake.AddMedia(photo.Data, "image/jpeg"), "", "")
			},
			want: media.ErrRetryable, wantKinds: []string{graphfake.KindMedia, graphfake.KindDownload}},
		{name: "sha256 of the webhook does not match",
			setup: func(s *stack) whatsapp.Message {
				m := msg("image", s.fake.AddMedia(photo.Data, "image/jpeg"), "", "")
				m.Media.SHA256 = base64.StdEncoding.EncodeToString(other[:])
				return m
			},
			want: media.ErrMismatch, wantKinds: []string{graphfake.KindMedia, graphfake.KindDownload}},
		{name: "sha256 of the lookup does not match",
			setup: func(s *stack) whatsapp.Message {
				m := msg("image", s.fake.AddMedia(photo.Data, "image/jpeg", graphfake.WithLookupSHA256(hex.EncodeToString(other[:]))), "", "")
				m.Media.SHA256 = ""
				return m
			},
			want: media.ErrMismatch, wantKinds: []string{graphfake.KindMedia, graphfake.KindDownload}},
		{name: "a sha256 that is not one",
			setup: func(s *stack) whatsapp.Message {
				m := msg("image", s.fake.AddMedia(photo.Data, "image/jpeg"), "", "")
				m.Media.SHA256 = "not-a-digest"
				return m
			},
			want: media.ErrMismatch, wantKinds: []string{graphfake.KindMedia}},
		{name: "announced over the cap: not downloaded",
			setup: func(s *stack) whatsapp.Message {
				return msg("video", s.fake.AddMedia(bytes.Repeat([]byte{1}, 1<<20+1), "video/mp4"), "", "")
			},
			want: media.ErrTooLarge, wantKinds: []string{graphfake.KindMedia}},
		{name: "unsupported type named by the webhook: no call",
			setup: func(s *stack) whatsapp.Message {
				return msg("image", s.fake.AddMedia([]byte("GIF89a"), "image/gif"), "", "")
			},
			want: media.ErrUnsupported},
		{name: "unsupported type named by the lookup: not downloaded",
			setup: func(s *stack) whatsapp.Message {
				m := msg("document", s.fake.AddMedia([]byte("PK\x03\x04"), "application/zip"), "", "x.zip")
				m.Media.MimeType = ""
				return m
			},
			want: media.ErrUnsupported, wantKinds: []string{graphfake.KindMedia}},
		{name: "a sticker is not fetched",
			setup: func(s *stack) whatsapp.Message {
				return msg("sticker", s.fake.AddMedia([]byte("RIFF"), "image/webp"), "", "")
			},
			want: media.ErrUnsupported},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newStack(t, media.Config{MaxBytes: 1 << 20})
			m := tc.setup(s)
			tok := token
			if tc.token != "" {
				tok = tc.token
			}
			_, err := s.f.Fetch(context.Background(), tok, m, nil)
			var me *media.Error
			if !errors.Is(err, tc.want) || !errors.As(err, &me) {
				t.Fatalf("Fetch: %v; want a *media.Error of kind %v", err, tc.want)
			}
			var kinds []string
			for _, r := range s.fake.Requests() {
				kinds = append(kinds, r.Kind)
			}
			if strings.Join(kinds, ",") != strings.Join(tc.wantKinds, ",") {
				t.Errorf("requests %v; want %v", kinds, tc.wantKinds)
			}
		})
	}
}

func TestDownloadURLMustBeHTTPSOutsideDev(t *testing.T) {
	t.Parallel()
	s := newStack(t, media.Config{})
	g, err := graph.NewClient(s.srv.URL, "", s.srv.Client())
	if err != nil {
		t.Fatal(err)
	}
	strict, err := media.New(g, media.Config{})
	if err != nil {
		t.Fatal(err)
	}
	photo := mediasample.Photo()
	_, err = strict.Fetch(context.Background(), token, msg("image", s.fake.AddMedia(photo.Data, photo.MIMEType), "", ""), nil)
	if !errors.Is(err, media.ErrGone) {
		t.Fatalf("Fetch: %v; want a refusal", err)
	}
	for _, r := range s.fake.Requests() {
		if r.Kind == graphfake.KindDownload {
			t.Errorf("an http download URL was fetched outside dev")
		}
	}
}

func TestAuthErrorIsClassifiedAuth(t *testing.T) {
	t.Parallel()
	s := newStack(t, media.Config{})
	_, err := s.f.Fetch(context.Background(), "wrong", msg("image", s.fake.AddMedia([]byte("x"), "image/png"), "", ""), nil)
	if graph.Classify(err) != graph.Auth {
		t.Errorf("Classify(%v) = %v, want auth", err, graph.Classify(err))
	}
	if _, _, ok := assistant.MediaRefusal(err); ok {
		t.Errorf("an auth error is not a refusal the user is told about")
	}
}

// TestOversizeIsCutWhileStreaming: a lookup that understates the size and a download without a
// Content-Length: reading stops at the cap, long before the end of the file.
func TestOversizeIsCutWhileStreaming(t *testing.T) {
	t.Parallel()
	const limit = 256 << 10
	const size = 48 << 20
	s := newStack(t, media.Config{MaxBytes: limit})
	big := make([]byte, size)
	mf := s.fake.AddMedia(big, "video/mp4", graphfake.WithoutContentLength(), graphfake.WithLookupFileSize(1000))
	_, err := s.f.Fetch(context.Background(), token, msg("video", mf, "", ""), nil)
	if !errors.Is(err, media.ErrTooLarge) {
		t.Fatalf("Fetch: %v; want ErrTooLarge", err)
	}
	// The fake records the download once its handler ends, when the client has gone.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	d, err := s.fake.WaitForRequest(ctx, func(r graphfake.Request) bool { return r.Kind == graphfake.KindDownload && r.Ended })
	if err != nil {
		t.Fatalf("the download did not end: %v", err)
	}
	if d.BytesSent >= size/2 {
		t.Errorf("the download sent %d of %d bytes; want it cut near the cap", d.BytesSent, size)
	}
}

// TestErrorsMapToReplies: the refusals carry the assistant's kinds, so the engine answers them.
func TestErrorsMapToReplies(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err    error
		reason string
	}{
		{&media.Error{Kind: media.ErrUnsupported}, assistant.ReasonMediaUnsupported},
		{&media.Error{Kind: media.ErrTooLarge}, assistant.ReasonMediaTooLarge},
		{&media.Error{Kind: media.ErrGone}, assistant.ReasonMediaGone},
		{&media.Error{Kind: media.ErrMismatch}, assistant.ReasonMediaMismatch},
		{&media.Error{Kind: media.ErrRetryable}, ""},
	} {
		reason, _, ok := assistant.MediaRefusal(tc.err)
		if reason != tc.reason || ok != (tc.reason != "") {
			t.Errorf("MediaRefusal(%v) = %q, %v; want %q", tc.err, reason, ok, tc.reason)
		}
	}
}

// TestNoMediaContentInLogs: neither the bytes, nor the caption, nor the file name reach a log
// line, on success or failure.
func TestNoMediaContentInLogs(t *testing.T) {
	t.Parallel()
	s := newStack(t, media.Config{})
	var buf bytes.Buffer // Fetch logs on the test's goroutine
	ctx := logging.WithLogger(context.Background(), logging.New(&buf, logging.Options{Hasher: logging.DevHasher()}))
	pdf := mediasample.BookingForm()
	const caption, filename = "Secret caption Bus 03", "secret-booking-form.pdf"
	mf := s.fake.AddMedia(pdf.Data, pdf.MIMEType)
	if _, err := s.f.Fetch(ctx, token, msg("document", mf, caption, filename), nil); err != nil {
		t.Fatal(err)
	}
	bad := msg("document", mf, caption, filename)
	bad.Media.SHA256 = base64.StdEncoding.EncodeToString(make([]byte, 32))
	if _, err := s.f.Fetch(ctx, token, bad, nil); !errors.Is(err, media.ErrMismatch) {
		t.Fatalf("Fetch: %v", err)
	}
	s.fake.ExpireMedia(mf.ID)
	if _, err := s.f.Fetch(ctx, token, msg("document", mf, caption, filename), nil); !errors.Is(err, media.ErrGone) {
		t.Fatalf("Fetch: %v", err)
	}
	logs := buf.String()
	secrets := []string{caption, filename, "Booking form", base64.StdEncoding.EncodeToString(pdf.Data)[:40], string(pdf.Data[:20]), token}
	if n := logcheck.Check(t, logs, []string{"6281234567890"}, secrets); n != 3 {
		t.Errorf("log lines = %d, want 3:\n%s", n, logs)
	}
	for _, want := range []string{`"event":"media_fetched"`, `"reason":"sha256_mismatch"`, `"reason":"gone"`} {
		if !strings.Contains(logs, want) {
			t.Errorf("logs lack %s:\n%s", want, logs)
		}
	}
}

func TestDescribe(t *testing.T) {
	t.Parallel()
	sum := sha256.Sum256([]byte("file"))
	m := whatsapp.Message{Type: "audio", Text: "cap", Media: &whatsapp.Media{ID: "1", MimeType: "audio/ogg; codecs=opus",
		SHA256: base64.StdEncoding.EncodeToString(sum[:]), Filename: "a.ogg"}}
	d := media.Describe(m, nil)
	if d.MIMEType != "audio/ogg" || d.SHA256 != hex.EncodeToString(sum[:]) || d.Size != 0 || d.Caption != "cap" || d.Filename != "a.ogg" {
		t.Errorf("Describe(msg) = %+v", d)
	}
	d = media.Describe(m, &assistant.Attachment{MIMEType: "audio/ogg", SHA256: "abc", Size: 4})
	if d.Size != 4 || d.SHA256 != "abc" {
		t.Errorf("Describe(msg, att) = %+v", d)
	}
	if media.Describe(whatsapp.Message{Type: "text"}, nil) != nil {
		t.Errorf("Describe of a text is not nil")
	}
}

func TestNewRejectsABadCap(t *testing.T) {
	t.Parallel()
	g, _ := graph.NewClient("http://127.0.0.1:1", "", nil)
	for _, n := range []int64{-1, media.MaxAllowedBytes + 1} {
		if _, err := media.New(g, media.Config{MaxBytes: n}); err == nil || !strings.Contains(err.Error(), "MEDIA_MAX_BYTES") {
			t.Errorf("New accepted a cap of %d (%v)", n, err)
		}
	}
	f, err := media.New(g, media.Config{})
	if err != nil || f.MaxBytes() != media.DefaultMaxBytes {
		t.Errorf("default cap = %v, %v", f, err)
	}
}
