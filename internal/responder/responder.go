// Package responder is the seam between a normalised inbound message and the reply wapipe sends:
// a Responder decides what to answer, the worker takes care of sending it exactly once.
// Conversation logic (bookings, support flows) plugs in here; the default acknowledges.
package responder

import (
	"context"
	"strings"

	"github.com/wapipe/wapipe/internal/outgoing"
	"github.com/wapipe/wapipe/internal/whatsapp"
)

// Responder turns an inbound message into the reply to send.
type Responder interface {
	Respond(ctx context.Context, m whatsapp.Message) (outgoing.Message, error)
}

// Func adapts a function to Responder.
type Func func(ctx context.Context, m whatsapp.Message) (outgoing.Message, error)

// Respond calls f.
func (f Func) Respond(ctx context.Context, m whatsapp.Message) (outgoing.Message, error) {
	return f(ctx, m)
}

// DefaultAckText is the acknowledgement Ack sends for text when none is configured.
const DefaultAckText = "Thanks! We got your message and will get back to you shortly."

// Ack is the default Responder: it acknowledges every message with a reply that fits its type.
type Ack struct {
	// Text answers text messages; DefaultAckText when empty.
	Text string
}

// Respond acknowledges m.
func (a Ack) Respond(_ context.Context, m whatsapp.Message) (outgoing.Message, error) {
	text := a.Text
	if text == "" {
		text = DefaultAckText
	}
	// A notice, a deleted or edited message, a removed reaction, a call permission answer or a
	// Flow answer asks for nothing (the same rule TenantAck and the assistant follow).
	if Ignorable(m) {
		return outgoing.Message{}, nil
	}
	switch m.Type {
	case "text":
		return outgoing.Message{Text: text, Quote: true}, nil
	case "image", "video", "audio", "document", "sticker":
		return outgoing.Message{Text: "Thanks, we received your " + mediaNoun(m.Type) + ".", Quote: true}, nil
	case "location":
		return outgoing.Message{Text: "Thanks for sharing your location.", Quote: true}, nil
	case "contacts":
		return outgoing.Message{Text: "Thanks, we received the contact card.", Quote: true}, nil
	case "reaction":
		return outgoing.Message{Text: "Thanks for your reaction " + m.Reaction.Emoji}, nil
	case "order":
		return outgoing.Message{Text: "Thanks, we received your order.", Quote: true}, nil
	case "interactive", "button":
		if m.Reply != nil && m.Reply.Title != "" {
			return outgoing.Message{Text: "You chose: " + m.Reply.Title + ". " + text, Quote: true}, nil
		}
		return outgoing.Message{Text: text, Quote: true}, nil
	case "request_welcome":
		return outgoing.Message{Text: "Hello! How can we help you today?"}, nil
	default:
		// unsupported and types Meta adds later.
		return outgoing.Message{Text: "Sorry, we can't read this kind of message yet. Could you send it as text?", Quote: true}, nil
	}
}

func mediaNoun(t string) string {
	switch t {
	case "image":
		return "photo"
	case "audio":
		return "voice message"
	default:
		return strings.ToLower(t)
	}
}
