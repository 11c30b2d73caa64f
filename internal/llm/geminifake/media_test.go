package geminifake_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/wapipe/wapipe/internal/llm"
	"github.com/wapipe/wapipe/internal/llm/geminifake"
)

func hexSHA(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// TestInlineDataReachesTheFake sends an image with its caption through llm.Client (the genai
// client) and reads back what the fake received: one user content with the description, the
// inlineData part whose bytes hash to the file's, and the caption.
func TestInlineDataReachesTheFake(t *testing.T) {
	t.Parallel()
	f, srv := start(t)
	photo := bytes.Repeat([]byte{0xff, 0xd8, 0xff, 0xe0, 1, 2, 3}, 1000)
	req := request("Bus 03 AC mati")
	req.Media = &llm.Media{MIMEType: "image/jpeg", Data: photo, Label: "photo"}
	if _, err := llmClient(t, srv, 0).Extract(context.Background(), req); err != nil {
		t.Fatalf("Extract: %v", err)
	}
	rs := f.Requests()
	if len(rs) != 1 {
		t.Fatalf("requests = %d, want 1", len(rs))
	}
	got := rs[0]
	want := []geminifake.Media{{MIMEType: "image/jpeg", SHA256: hexSHA(photo), Size: len(photo), Valid: true}}
	if diff := cmp.Diff(want, got.Media); diff != "" {
		t.Errorf("media (-want +got):\n%s", diff)
	}
	if !strings.Contains(got.Text, "Bus 03 AC mati") || !strings.Contains(got.Text, "photo (image/jpeg)") {
		t.Errorf("text parts = %q, want the description and the caption", got.Text)
	}
	if !strings.Contains(got.SystemInstruction, "## Attachments") {
		t.Errorf("system instruction does not explain the attachment")
	}
	// The fake answered report_issue from the caption, like a text.
	if got.Rule != geminifake.IntentReportIssue && got.Rule != "default" {
		t.Errorf("rule = %q", got.Rule)
	}
}

// TestTranscriptAnswersAVoiceNote scripts what the fake hears in a voice note: the default
// booking rule then answers it as it would the same text.
func TestTranscriptAnswersAVoiceNote(t *testing.T) {
	t.Parallel()
	f, srv := start(t, geminifake.WithRules(geminifake.DefaultRules()...))
	voice := []byte("OggS\x00\x02voice-note-bytes")
	f.SetTranscript(hexSHA(voice), "book bus 01 for Pak Agus on 1 March, 15 million")
	req := request("")
	req.Media = &llm.Media{MIMEType: "audio/ogg", Data: voice, Label: "voice note"}
	res, err := llmClient(t, srv, 0).Extract(context.Background(), req)
	if err != nil {
		t.Fatalf("Extract: %v", err)
	}
	if res.Intent != geminifake.IntentCreateBooking || res.Data["bus"] != "01" || res.Data["client"] != "Pak Agus" {
		t.Errorf("result = %+v, want create_booking for bus 01 and Pak Agus", res)
	}
	if rs := f.Requests(); len(rs) != 1 || strings.Contains(rs[0].Text, "Pak Agus") {
		t.Errorf("recorded text holds the transcript: %+v", rs)
	}
}

func TestRulesMatchOnMedia(t *testing.T) {
	t.Parallel()
	f, srv := start(t)
	pdf := []byte("%PDF-1.4 booking form")
	for _, r := range []geminifake.Rule{
		{Name: "by-hash", SHA256: hexSHA(pdf), Response: &geminifake.Answer{Intent: "general_query", Confidence: 1, Reply: "pdf"}},
		{Name: "any-audio", MIMEType: "audio/", Response: &geminifake.Answer{Intent: "general_query", Confidence: 1, Reply: "audio"}},
	} {
		if err := f.AddRule(r); err != nil {
			t.Fatal(err)
		}
	}
	c := llmClient(t, srv, 0)
	for _, tc := range []struct {
		name  string
		media *llm.Media
		want  string
	}{
		{"pdf by hash", &llm.Media{MIMEType: "application/pdf", Data: pdf}, "pdf"},
		{"audio by prefix", &llm.Media{MIMEType: "audio/mpeg", Data: []byte("ID3")}, "audio"},
		{"other image", &llm.Media{MIMEType: "image/png", Data: []byte("png")}, "Hello! How can I help you?"},
		{"text only", nil, "Hello! How can I help you?"},
	} {
		req := request("see attached")
		req.Media = tc.media
		res, err := c.Extract(context.Background(), req)
		if err != nil {
			t.Fatalf("%s: Extract: %v", tc.name, err)
		}
		if res.Reply != tc.want {
			t.Errorf("%s: reply = %q, want %q", tc.name, res.Reply, tc.want)
		}
	}
}

func TestTranscriptsOverHTTP(t *testing.T) {
	t.Parallel()
	_, srv := start(t, geminifake.WithRules(geminifake.DefaultRules()...))
	voice := []byte("voice")
	for _, tc := range []struct {
		body string
		want int
	}{
		{`{"transcripts":[{"sha256":"` + hexSHA(voice) + `","text":"jadwal besok"}]}`, http.StatusOK},
		{`{"transcripts":[{"sha256":"zz","text":"x"}]}`, http.StatusBadRequest},
		{`{"transcripts":[]}`, http.StatusBadRequest},
		{`{"transcript":[]}`, http.StatusBadRequest},
	} {
		resp, err := srv.Client().Post(srv.URL+"/_fake/transcripts", "application/json", strings.NewReader(tc.body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("POST %s: status %d, want %d", tc.body, resp.StatusCode, tc.want)
		}
	}
	req := request("")
	req.Media = &llm.Media{MIMEType: "audio/ogg", Data: voice}
	res, err := llmClient(t, srv, 0).Extract(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if res.Intent != geminifake.IntentCheckSchedule {
		t.Errorf("intent = %q, want check_schedule", res.Intent)
	}
}
