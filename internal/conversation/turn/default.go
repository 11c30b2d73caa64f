package turn

import (
	"context"

	"github.com/wapipe/wapipe/internal/events"
	"github.com/wapipe/wapipe/internal/i18n"
	"github.com/wapipe/wapipe/internal/outgoing"
	"github.com/wapipe/wapipe/internal/responder"
	"github.com/wapipe/wapipe/internal/whatsapp"
)

// Default answers the single-tenant default's messages (a number no tenant owns, answered with
// WHATSAPP_ACCESS_TOKEN): no contact, no conversation, no assistant; the message's events
// first, then its Responder's reply, sent once by the worker (package delivery).
type Default struct {
	// Responder decides the reply to a message that asks for one.
	Responder responder.Responder
	// Events applies a message's events first; nil: every message is answered.
	Events Events
}

// Prepare applies m's events (a revoke erases, an edit changes) and returns what composes its
// reply once its send begins: the Responder's when m asks for an answer, the event's notice in
// the catalogue's default language (the default has no language of its own), else nothing
// (recorded, not answered: the send is skipped). An error is the events' and nothing is sent.
func (d Default) Prepare(ctx context.Context, m whatsapp.Message) (compose func(context.Context) (outgoing.Message, error), err error) {
	ev := events.Outcome{Answer: true, Event: events.EventMessage}
	if d.Events != nil {
		if ev, err = d.Events.ApplyMessage(ctx, "", "", m); err != nil {
			return nil, err
		}
	}
	return func(ctx context.Context) (outgoing.Message, error) {
		switch {
		case ev.Answer:
			return d.Responder.Respond(ctx, m)
		case ev.Reply != "":
			return outgoing.Message{Text: i18n.Text(i18n.Default, ev.Reply), Quote: true}, nil
		}
		return outgoing.Message{}, nil
	}, nil
}
