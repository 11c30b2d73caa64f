package assistant_test

import (
	"context"
	"testing"

	"github.com/wapipe/wapipe/internal/assistant"
	"github.com/wapipe/wapipe/internal/assistant/assistanttest"
	"github.com/wapipe/wapipe/internal/i18n"
	"github.com/wapipe/wapipe/internal/medialen/medialentest"
	"github.com/wapipe/wapipe/internal/tenant"
	"github.com/wapipe/wapipe/internal/turnstate"
	"github.com/wapipe/wapipe/internal/whatsapp"
)

// TestMediaLimits: a file over the tenant's media limits (a voice note over ten minutes, a video
// over two, a PDF over 50 pages, an image over 5 MiB; or the tenant's own, tighter limits) is
// answered "too long" in the conversation's language and never reaches the model; one within
// them does.
func TestMediaLimits(t *testing.T) {
	t.Parallel()
	tight := func(tn *tenant.Tenant) { tn.Assistant.MediaLimits = tenant.MediaLimits{AudioSeconds: 60} }
	tests := []struct {
		name, typ, mime string
		data            []byte
		edit            []func(*tenant.Tenant)
		tooLong         bool
	}{
		{"a voice note of 30 s", "audio", "audio/ogg", medialentest.OggOpus(30, 0), nil, false},
		{"a voice note of 11 minutes", "audio", "audio/ogg", medialentest.OggOpus(660, 0), nil, true},
		{"a voice note of 90 s, the tenant reads 60", "audio", "audio/ogg", medialentest.OggOpus(90, 0), []func(*tenant.Tenant){tight}, true},
		{"a video of 95 s", "video", "video/mp4", medialentest.MP4(95), nil, false},
		{"a video of 3 minutes", "video", "video/mp4", medialentest.MP4(180), nil, true},
		{"a PDF of 12 pages", "document", "application/pdf", medialentest.PDF(12), nil, false},
		{"a PDF of 80 pages", "document", "application/pdf", medialentest.PDF(80), nil, true},
		{"an image of 6 MiB", "image", "image/jpeg", make([]byte, 6<<20), nil, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			x := assistanttest.NewExtractor()
			x.Default = always(generalResult("ok"))
			e := assistant.New(x, assistanttest.NewGuard())
			l := &loader{att: assistant.Attachment{MIMEType: tc.mime, Data: tc.data, Size: int64(len(tc.data))}}
			m := whatsapp.Message{ID: "m-1", From: ownerID, PhoneNumberID: "106540352242922", Type: tc.typ,
				Media: &whatsapp.Media{ID: "media-1", MimeType: tc.mime, SHA256: "x"}}
			in := input(newTenant(t, tc.edit...), m, t0, turnstate.State{})
			in.Media = l
			out, err := e.Turn(context.Background(), in)
			if err != nil {
				t.Fatal(err)
			}
			if !tc.tooLong {
				if x.Calls() != 1 || out.Reason == assistant.ReasonMediaTooLong {
					t.Errorf("%d calls, reason %q: want the file read", x.Calls(), out.Reason)
				}
				return
			}
			if x.Calls() != 0 || out.Event != assistant.EventMediaRefused || out.Reason != assistant.ReasonMediaTooLong {
				t.Errorf("%d calls, event %q reason %q: want it refused as too long before the call", x.Calls(), out.Event, out.Reason)
			}
			if len(out.Replies) != 1 || out.Replies[0].Text != i18n.Text("id", i18n.MediaTooLong) {
				t.Errorf("replies %+v, want the localized too-long notice", views(out.Replies))
			}
		})
	}
}
