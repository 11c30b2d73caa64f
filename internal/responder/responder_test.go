package responder_test

import (
	"context"
	"strings"
	"testing"

	"github.com/wapipe/wapipe/internal/responder"
	"github.com/wapipe/wapipe/internal/whatsapp"
)

func TestAck(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		msg      whatsapp.Message
		wantText string // substring; "" means no reply
		quote    bool
	}{
		{"text", whatsapp.Message{Type: "text", Text: "hi"}, "custom ack", true},
		{"image", whatsapp.Message{Type: "image"}, "photo", true},
		{"voice", whatsapp.Message{Type: "audio"}, "voice message", true},
		{"location", whatsapp.Message{Type: "location"}, "location", true},
		{"reaction", whatsapp.Message{Type: "reaction", Reaction: &whatsapp.Reaction{MessageID: "m", Emoji: "👍"}}, "reaction", false},
		{"reaction removed", whatsapp.Message{Type: "reaction", Reaction: &whatsapp.Reaction{MessageID: "m"}}, "", false},
		{"button reply", whatsapp.Message{Type: "interactive", Reply: &whatsapp.Reply{Kind: "button_reply", ID: "b1", Title: "Friday"}}, "You chose: Friday", true},
		{"unsupported", whatsapp.Message{Type: "unsupported"}, "can't read", true},
		{"a type Meta adds later", whatsapp.Message{Type: "hologram"}, "can't read", true},
		{"system notice", whatsapp.Message{Type: "system"}, "", false},
		{"order", whatsapp.Message{Type: "order", Order: &whatsapp.OrderInfo{CatalogID: "c"}}, "order", true},
		{"revoke", whatsapp.Message{Type: "revoke", OriginalID: "m"}, "", false},
		{"edit", whatsapp.Message{Type: "edit", OriginalID: "m", Text: "new"}, "", false},
		{"call permission", whatsapp.Message{Type: "interactive", Reply: &whatsapp.Reply{Kind: "call_permission_reply", ID: "accept"}}, "", false},
		{"flow answer", whatsapp.Message{Type: "interactive", Reply: &whatsapp.Reply{Kind: "nfm_reply", ID: "flow", Title: "Sent"}}, "", false},
		{"first contact", whatsapp.Message{Type: "request_welcome"}, "Hello", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r, err := responder.Ack{Text: "custom ack"}.Respond(context.Background(), tc.msg)
			if err != nil {
				t.Fatal(err)
			}
			if tc.wantText == "" {
				if !r.IsZero() {
					t.Errorf("reply %+v, want none", r)
				}
				return
			}
			if !strings.Contains(r.Text, tc.wantText) || r.Quote != tc.quote {
				t.Errorf("reply %+v, want text containing %q, quote %v", r, tc.wantText, tc.quote)
			}
		})
	}
	if r, _ := (responder.Ack{}).Respond(context.Background(), whatsapp.Message{Type: "text"}); r.Text != responder.DefaultAckText {
		t.Errorf("default text %q", r.Text)
	}
}
