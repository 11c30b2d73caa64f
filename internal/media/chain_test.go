package media_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/wapipe/wapipe/internal/assistant"
	"github.com/wapipe/wapipe/internal/assistant/assistanttest"
	"github.com/wapipe/wapipe/internal/graph/graphfake"
	"github.com/wapipe/wapipe/internal/llm"
	"github.com/wapipe/wapipe/internal/llm/geminifake"
	"github.com/wapipe/wapipe/internal/media"
	"github.com/wapipe/wapipe/internal/media/mediasample"
	"github.com/wapipe/wapipe/internal/tenant"
	"github.com/wapipe/wapipe/internal/whatsapp"
	"github.com/wapipe/wapipe/tenants"
)

// TestChain runs the parts below the worker together, each over HTTP: the fake Graph serves the
// sample files, the Fetcher fetches them with the tenant's token, the engine sends them through
// the llm client to the fake Gemini, which reports what it received. Each case compares the
// hash of the bytes Gemini got with the file's, and reads the text parts beside them.
func TestChain(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)
	s := newStack(t, media.Config{})
	gem := geminifake.New(geminifake.WithRules(geminifake.DefaultRules()...), geminifake.WithTranscripts(mediasample.Transcripts()),
		geminifake.WithClock(func() time.Time { return now }))
	gsrv := gem.NewTestServer()
	t.Cleanup(gsrv.Close)
	client, err := llm.New(context.Background(), llm.Config{Project: "wapipe-dev", BaseURL: gsrv.URL})
	if err != nil {
		t.Fatal(err)
	}
	tn, err := tenant.Parse(tenants.Sample())
	if err != nil {
		t.Fatal(err)
	}
	owner := tn.Members[0]
	e := assistant.New(client, assistanttest.NewGuard())

	file := func(f mediasample.File) graphfake.MediaFile { return s.fake.AddMedia(f.Data, f.MIMEType) }
	voice, photo, pdf := mediasample.VoiceNote(), mediasample.Photo(), mediasample.BookingForm()
	voiceMsg := msg("audio", file(voice), "", "")
	voiceMsg.Media.Voice = true
	tests := []struct {
		name      string
		msg       whatsapp.Message
		wantHash  string // "" for no attachment
		wantMIME  string
		wantText  []string
		wantEvent string
	}{
		{"voice note books", voiceMsg, voice.SHA256Hex(), "audio/ogg", []string{"voice note (audio/ogg)"}, assistant.EventPending},
		{"photo with a caption", msg("image", file(photo), "Bus 03 AC mati", ""), photo.SHA256Hex(), "image/jpeg",
			[]string{"photo (image/jpeg)", "Bus 03 AC mati"}, ""},
		{"pdf with its file name", msg("document", file(pdf), "", "booking-form.pdf"), pdf.SHA256Hex(), "application/pdf",
			[]string{"document (application/pdf)", "(file name: booking-form.pdf)"}, ""},
		{"location", whatsapp.Message{Type: "location", Location: &whatsapp.Location{Latitude: -8.65, Longitude: 115.2167, Name: "Pool Denpasar", Address: "Jl. Gatot Subroto"}},
			"", "", []string{"[shared location] name: Pool Denpasar; address: Jl. Gatot Subroto; latitude: -8.65; longitude: 115.2167"}, ""},
		{"list reply", whatsapp.Message{Type: "interactive", Reply: &whatsapp.Reply{Kind: "list_reply", ID: "bus_03", Title: "Bus 03"}},
			"", "", []string{"[chose from a list] Bus 03 (row id: bus_03)"}, ""},
	}
	for i, tc := range tests {
		m := tc.msg
		m.ID, m.From, m.PhoneNumberID = "m-"+tc.name, owner.WaID, tn.PhoneNumbers[0].PhoneNumberID
		in := assistant.Input{Tenant: tn, Member: owner, IsMember: true, ConversationID: "conv-" + tc.name, Message: m, Now: now,
			Media: s.f.Loader(token, nil)}
		out, err := e.Turn(context.Background(), in)
		if err != nil {
			t.Fatalf("%s: Turn: %v", tc.name, err)
		}
		if tc.wantEvent != "" && out.Event != tc.wantEvent {
			t.Errorf("%s: event %q, want %q (replies %+v)", tc.name, out.Event, tc.wantEvent, out.Replies)
		}
		rs := gem.Requests()
		if len(rs) != i+1 {
			t.Fatalf("%s: %d Gemini calls in all, want %d (event %q)", tc.name, len(rs), i+1, out.Event)
		}
		got := rs[i]
		switch {
		case tc.wantHash == "" && len(got.Media) != 0:
			t.Errorf("%s: Gemini got media %+v", tc.name, got.Media)
		case tc.wantHash != "" && (len(got.Media) != 1 || got.Media[0].SHA256 != tc.wantHash || got.Media[0].MIMEType != tc.wantMIME):
			t.Errorf("%s: Gemini got media %+v; want one %s of hash %s", tc.name, got.Media, tc.wantMIME, tc.wantHash)
		}
		for _, w := range tc.wantText {
			if !strings.Contains(got.Text, w) {
				t.Errorf("%s: the text parts %q lack %q", tc.name, got.Text, w)
			}
		}
	}
}
