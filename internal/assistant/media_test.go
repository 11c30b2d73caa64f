package assistant_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wapipe/wapipe/internal/assistant"
	"github.com/wapipe/wapipe/internal/assistant/assistanttest"
	"github.com/wapipe/wapipe/internal/graph"
	"github.com/wapipe/wapipe/internal/i18n"
	"github.com/wapipe/wapipe/internal/llm"
	"github.com/wapipe/wapipe/internal/llm/geminifake"
	"github.com/wapipe/wapipe/internal/tenant"
	"github.com/wapipe/wapipe/internal/turnstate"
	"github.com/wapipe/wapipe/internal/whatsapp"
)

// loader is a MediaLoader that answers att or err and counts its calls.
type loader struct {
	att assistant.Attachment
	err error

	mu    sync.Mutex
	calls int
}

func (l *loader) LoadMedia(_ context.Context, m whatsapp.Message) (assistant.Attachment, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls++
	if l.err != nil {
		return assistant.Attachment{}, l.err
	}
	a := l.att
	a.Kind, a.Caption = m.Type, m.Text
	return a, nil
}

func (l *loader) Calls() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.calls
}

var photoBytes = []byte("\xff\xd8\xff\xe0 a photo of bus 03")

func photoMsg(id, caption string) whatsapp.Message {
	return whatsapp.Message{ID: id, From: ownerID, PhoneNumberID: "106540352242922", Type: "image", Text: caption,
		Media: &whatsapp.Media{ID: "media-1", MimeType: "image/jpeg", SHA256: "x"}}
}

func photoLoader() *loader {
	return &loader{att: assistant.Attachment{MIMEType: "image/jpeg", Data: photoBytes, Size: int64(len(photoBytes))}}
}

// TestMediaReachesTheModel: the file goes to the model inline beside its caption, and the
// history keeps what it was, never its bytes.
func TestMediaReachesTheModel(t *testing.T) {
	t.Parallel()
	x := assistanttest.NewExtractor(ok(generalResult("Baik, saya laporkan.")))
	g := assistanttest.NewGuard()
	e := assistant.New(x, g)
	l := photoLoader()
	in := input(newTenant(t), photoMsg("m-1", "Bus 03 AC mati"), t0, turnstate.State{})
	in.Media = l
	out := run(t, e, in)
	if out.Event != assistant.EventGeneralQuery || l.Calls() != 1 || x.Calls() != 1 {
		t.Fatalf("event %q, loads %d, LLM calls %d; want general_query, 1, 1", out.Event, l.Calls(), x.Calls())
	}
	req := x.Requests()[0]
	if req.Media == nil || req.Media.MIMEType != "image/jpeg" || string(req.Media.Data) != string(photoBytes) || req.Media.Label != "photo" {
		t.Errorf("request media = %+v", req.Media)
	}
	if req.Text != "Bus 03 AC mati" {
		t.Errorf("request text = %q, want the caption", req.Text)
	}
	if m := out.Media; m == nil || m.Data != nil || m.MIMEType != "image/jpeg" || m.Size != int64(len(photoBytes)) {
		t.Errorf("outcome media = %+v; want its description without the bytes", m)
	}
	if got := out.State.Turns[len(out.State.Turns)-1].User; got != "[photo] Bus 03 AC mati" {
		t.Errorf("history keeps %q", got)
	}
}

func TestMediaRefusals(t *testing.T) {
	t.Parallel()
	retryable := &graph.Error{HTTPStatus: 503, Kind: graph.Temporary}
	tests := []struct {
		name        string
		msg         whatsapp.Message
		err         error
		last        bool
		wantEvent   string
		wantReason  string
		wantKey     i18n.Key
		wantLoads   int
		wantRetry   bool
		wantPending bool
	}{
		{name: "a type the model cannot take is refused before the gate: nothing fetched, no quota",
			msg: func() whatsapp.Message {
				m := photoMsg("m-1", "")
				m.Type, m.Media.MimeType = "document", "application/zip"
				return m
			}(),
			wantEvent: assistant.EventMediaRefused, wantReason: assistant.ReasonMediaUnsupported, wantKey: i18n.MediaUnsupported, wantPending: true},
		{name: "unsupported after the lookup", msg: photoMsg("m-1", ""), err: fmt.Errorf("wrapped: %w", assistant.ErrMediaUnsupported),
			wantEvent: assistant.EventMediaRefused, wantReason: assistant.ReasonMediaUnsupported, wantKey: i18n.MediaUnsupported, wantLoads: 1, wantPending: true},
		{name: "too large", msg: photoMsg("m-1", ""), err: assistant.ErrMediaTooLarge,
			wantEvent: assistant.EventMediaRefused, wantReason: assistant.ReasonMediaTooLarge, wantKey: i18n.MediaUnsupported, wantLoads: 1, wantPending: true},
		{name: "gone", msg: photoMsg("m-1", ""), err: assistant.ErrMediaGone,
			wantEvent: assistant.EventMediaRefused, wantReason: assistant.ReasonMediaGone, wantKey: i18n.MediaResend, wantLoads: 1, wantPending: true},
		{name: "sha256 mismatch", msg: photoMsg("m-1", ""), err: assistant.ErrMediaMismatch,
			wantEvent: assistant.EventMediaRefused, wantReason: assistant.ReasonMediaMismatch, wantKey: i18n.MediaResend, wantLoads: 1, wantPending: true},
		{name: "a Graph 5xx redoes the turn", msg: photoMsg("m-1", ""), err: retryable, wantLoads: 1, wantRetry: true},
		{name: "a Graph 5xx on the last attempt asks to resend", msg: photoMsg("m-1", ""), err: retryable, last: true,
			wantEvent: assistant.EventMediaRefused, wantReason: assistant.ReasonMediaUnavailable, wantKey: i18n.MediaResend, wantLoads: 1, wantPending: true},
		{name: "a refused token", msg: photoMsg("m-1", ""), err: &graph.Error{HTTPStatus: 401, Code: 190, Kind: graph.Auth},
			wantEvent: assistant.EventUnavailable, wantReason: assistant.ReasonMediaAuth, wantKey: i18n.Unavailable, wantLoads: 1, wantPending: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			x := assistanttest.NewExtractor()
			x.Default = always(generalResult("?"))
			e := assistant.New(x, assistanttest.NewGuard())
			l := &loader{err: tc.err}
			in := input(newTenant(t), tc.msg, t0, turnstate.State{Pending: pendingBooking()})
			in.Media, in.LastAttempt = l, tc.last
			out, err := e.Turn(context.Background(), in)
			if tc.wantRetry {
				if !errors.Is(err, assistant.ErrRetry) {
					t.Fatalf("Turn: %v, want ErrRetry", err)
				}
			} else if err != nil {
				t.Fatalf("Turn: %v", err)
			}
			if x.Calls() != 0 || l.Calls() != tc.wantLoads {
				t.Errorf("LLM calls %d, loads %d; want 0, %d", x.Calls(), l.Calls(), tc.wantLoads)
			}
			if tc.wantRetry {
				return
			}
			if out.Event != tc.wantEvent || out.Reason != tc.wantReason {
				t.Errorf("event %q reason %q; want %q %q", out.Event, out.Reason, tc.wantEvent, tc.wantReason)
			}
			if len(out.Replies) != 1 || out.Replies[0].Text != i18n.Text("id", tc.wantKey) {
				t.Errorf("replies %+v; want %s", views(out.Replies), tc.wantKey)
			}
			if (out.State.Pending != nil) != tc.wantPending || out.Corrected {
				t.Errorf("pending %v corrected %v: a file the model never saw corrects nothing", out.State.Pending, out.Corrected)
			}
		})
	}
}

// TestGuardrailsComeBeforeTheDownload: a limited or over-quota media message fetches nothing.
func TestGuardrailsComeBeforeTheDownload(t *testing.T) {
	t.Parallel()
	t.Run("rate limit", func(t *testing.T) {
		t.Parallel()
		x := assistanttest.NewExtractor()
		x.Default = always(generalResult("ok"))
		e := assistant.New(x, assistanttest.NewGuard())
		l := photoLoader()
		c := &conversation{t: t, e: e, tn: newTenant(t), id: convID}
		for i := range 5 {
			c.send(textMsg(fmt.Sprintf("m-%d", i), ownerID, "halo"), t0.Add(time.Duration(i)*time.Second))
		}
		in := input(c.tn, photoMsg("m-photo", "x"), t0.Add(6*time.Second), c.state)
		in.Media = l
		out := run(t, e, in)
		if out.Event != assistant.EventRateLimited || l.Calls() != 0 {
			t.Errorf("event %q, loads %d; want rate_limited and no download", out.Event, l.Calls())
		}
	})
	t.Run("quota", func(t *testing.T) {
		t.Parallel()
		x := assistanttest.NewExtractor()
		x.Default = always(generalResult("ok"))
		g := assistanttest.NewGuard()
		e := assistant.New(x, g)
		tn := newTenant(t, quota(10))
		g.SetUsage(tenantID, turnstate.Period(t0), 10)
		l := photoLoader()
		in := input(tn, photoMsg("m-photo", "x"), t0, turnstate.State{})
		in.Media = l
		out := run(t, e, in)
		if out.Event != assistant.EventQuotaBlocked || l.Calls() != 0 || x.Calls() != 0 {
			t.Errorf("event %q, loads %d, calls %d; want quota_blocked and no download", out.Event, l.Calls(), x.Calls())
		}
	})
	t.Run("ack mode", func(t *testing.T) {
		t.Parallel()
		e := assistant.New(assistanttest.NewExtractor(), assistanttest.NewGuard())
		l := photoLoader()
		in := input(newTenant(t, ackMode("Thanks!")), photoMsg("m-photo", "x"), t0, turnstate.State{})
		in.Media = l
		out := run(t, e, in)
		if out.Event != assistant.EventAck || l.Calls() != 0 || len(out.Replies) != 1 || out.Replies[0].Text != "Thanks!" {
			t.Errorf("event %q, loads %d, replies %+v; want the ack and no download", out.Event, l.Calls(), views(out.Replies))
		}
	})
}

// TestTextForms: a location, contact cards and a list choice reach the model as text; stickers
// and reactions get nothing.
func TestTextForms(t *testing.T) {
	t.Parallel()
	base := whatsapp.Message{From: ownerID, PhoneNumberID: "106540352242922"}
	with := func(id string, f func(*whatsapp.Message)) whatsapp.Message {
		m := base
		m.ID = id
		f(&m)
		return m
	}
	tests := []struct {
		name string
		msg  whatsapp.Message
		want string // the request's text; "" for no LLM call
	}{
		{"location", with("m-loc", func(m *whatsapp.Message) {
			m.Type = "location"
			m.Location = &whatsapp.Location{Latitude: -6.2, Longitude: 106.816666, Name: "Pool Bus", Address: "Jl. Sudirman 1, Jakarta"}
		}), "[shared location] name: Pool Bus; address: Jl. Sudirman 1, Jakarta; latitude: -6.2; longitude: 106.816666"},
		{"location without a name", with("m-loc2", func(m *whatsapp.Message) {
			m.Type = "location"
			m.Location = &whatsapp.Location{Latitude: 1.5, Longitude: -2}
		}), "[shared location] latitude: 1.5; longitude: -2"},
		{"contacts", with("m-con", func(m *whatsapp.Message) {
			m.Type = "contacts"
			m.Contacts = []whatsapp.ContactCard{
				{Name: "Budi Santoso", Org: "PT Maju", Phones: []string{"+62 812-3456-7890"}},
				{Name: "Sari", Phones: []string{"+62 811 111", "6281100000"}, Emails: []string{"sari@example.com"}},
			}
		}), "[shared contact] name: Budi Santoso; organisation: PT Maju; phone: +62 812-3456-7890 | name: Sari; phone: +62 811 111, 6281100000; e-mail: sari@example.com"},
		{"list reply", with("m-list", func(m *whatsapp.Message) {
			m.Type = "interactive"
			m.Reply = &whatsapp.Reply{Kind: "list_reply", ID: "bus_03", Title: "Bus 03", Description: "45 seats"}
		}), "[chose from a list] Bus 03 — 45 seats (row id: bus_03)"},
		{"a button keeps its title", with("m-btn", func(m *whatsapp.Message) {
			m.Type = "interactive"
			m.Reply = &whatsapp.Reply{Kind: "button_reply", ID: "more", Title: "Tell me more"}
		}), "Tell me more"},
		{"sticker", with("m-st", func(m *whatsapp.Message) {
			m.Type = "sticker"
			m.Media = &whatsapp.Media{ID: "st-1", MimeType: "image/webp"}
		}), ""},
		{"reaction", with("m-re", func(m *whatsapp.Message) {
			m.Type = "reaction"
			m.Reaction = &whatsapp.Reaction{MessageID: "x", Emoji: "👍"}
		}), ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			x := assistanttest.NewExtractor()
			x.Default = always(generalResult("ok"))
			e := assistant.New(x, assistanttest.NewGuard())
			in := input(newTenant(t), tc.msg, t0, turnstate.State{})
			in.Media = photoLoader()
			out := run(t, e, in)
			if tc.want == "" {
				if out.Event != assistant.EventIgnored || len(out.Replies) != 0 || x.Calls() != 0 {
					t.Errorf("event %q replies %d calls %d; want ignored", out.Event, len(out.Replies), x.Calls())
				}
				return
			}
			if x.Calls() != 1 {
				t.Fatalf("LLM calls %d, want 1 (event %q)", x.Calls(), out.Event)
			}
			if got := x.Requests()[0].Text; got != tc.want {
				t.Errorf("request text\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

// TestVoiceNoteBooksThroughTheRealClient: a voice note becomes the booking with its confirm
// buttons, through the llm client and the fake Gemini, which "hears" the scripted transcript in
// the bytes it received; "ya" then confirms it.
func TestVoiceNoteBooksThroughTheRealClient(t *testing.T) {
	t.Parallel()
	fake := geminifake.New(geminifake.WithRules(geminifake.DefaultRules()...), geminifake.WithClock(func() time.Time { return t0 }))
	srv := fake.NewTestServer()
	t.Cleanup(srv.Close)
	voice := []byte("OggS\x00\x02 a voice note")
	sum := sha256.Sum256(voice)
	fake.SetTranscript(hex.EncodeToString(sum[:]), "pesan bus 01 untuk Pak Agus tanggal 1 Maret, 15 juta")
	client, err := llm.New(context.Background(), llm.Config{Project: "wapipe-dev", BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	c := &conversation{t: t, e: assistant.New(client, assistanttest.NewGuard()), tn: newTenant(t), id: convID}
	msg := whatsapp.Message{ID: "m-voice", From: ownerID, PhoneNumberID: "106540352242922", Type: "audio",
		Media: &whatsapp.Media{ID: "voice-1", MimeType: "audio/ogg; codecs=opus", Voice: true}}
	in := input(c.tn, msg, t0, c.state)
	in.Media = &loader{att: assistant.Attachment{MIMEType: "audio/ogg", Data: voice, Voice: true, Size: int64(len(voice))}}
	out := run(t, c.e, in)
	c.state = out.State
	if out.Event != assistant.EventPending || len(out.Replies) != 1 || !strings.Contains(out.Replies[0].Body(), "client: Pak Agus") {
		t.Fatalf("voice note: event %q replies %+v; want the booking to confirm", out.Event, views(out.Replies))
	}
	rs := fake.Requests()
	if len(rs) != 1 || len(rs[0].Media) != 1 || rs[0].Media[0].SHA256 != hex.EncodeToString(sum[:]) || rs[0].Media[0].MIMEType != "audio/ogg" {
		t.Fatalf("the fake received %+v; want the voice note's bytes as audio/ogg", rs)
	}
	if !strings.Contains(rs[0].Text, "voice note (audio/ogg)") {
		t.Errorf("the prompt does not say what the attachment is: %q", rs[0].Text)
	}
	out = c.send(textMsg("m-yes", ownerID, "ya"), t0.Add(time.Minute))
	if out.Event != assistant.EventConfirmed || out.Action == nil || out.Action.Data["bus"] != "01" {
		t.Errorf("ya: event %q action %+v; want the booking's action", out.Event, out.Action)
	}
}

func TestMediaWithoutALoaderIsUnsupported(t *testing.T) {
	t.Parallel()
	x := assistanttest.NewExtractor()
	e := assistant.New(x, assistanttest.NewGuard())
	out := run(t, e, input(newTenant(t, func(*tenant.Tenant) {}), photoMsg("m-1", "x"), t0, turnstate.State{}))
	if out.Event != assistant.EventUnsupported || x.Calls() != 0 {
		t.Errorf("event %q calls %d", out.Event, x.Calls())
	}
}
