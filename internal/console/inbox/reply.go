package inbox

import (
	"context"

	"github.com/wapipe/wapipe/internal/graph"
	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/internal/outbox"
	"github.com/wapipe/wapipe/internal/store"
)

// OutboxReplier sends operators' replies through the outbox, the send path and 24-hour rules of
// /v1/messages, and stores each in its conversation, so the inbox shows it with its ticks.
type OutboxReplier struct {
	Outbox   *outbox.Outbox
	Messages interface {
		AddOutbound(ctx context.Context, conversationID string, m store.Message) error
	}
}

// Reply queues req's text, or with req.RequestContactInfo the request for the contact's phone
// number. A refusal (outside the window, reconnect needed…) is returned as an error whose
// UserMessage the page shows.
func (r OutboxReplier) Reply(ctx context.Context, req ReplyRequest) (ReplyResult, error) {
	msg := graph.Message{Type: "text", Text: &graph.Text{Body: req.Text}}
	if req.RequestContactInfo {
		var err error
		if msg, err = contactInfoRequest(req.Text); err != nil {
			return ReplyResult{}, err
		}
	}
	res, err := r.Outbox.Send(ctx, outbox.Request{
		TenantID: req.TenantID, PhoneNumberID: req.PhoneNumberID, To: req.To, Recipient: req.Recipient,
		ConversationID: req.ConversationID, Message: msg, IdempotencyKey: req.IdempotencyKey, Source: "console",
	})
	if err != nil {
		return ReplyResult{}, err
	}
	if err := r.Messages.AddOutbound(ctx, req.ConversationID, store.Message{
		MessageID: res.IdempotencyKey, Type: msg.Type, Text: req.Text, Event: OperatorReplyEvent, Operator: req.Operator,
		Replies: []store.Reply{{IdempotencyKey: res.IdempotencyKey, Body: req.Text}},
	}); err != nil {
		// The reply is queued and will go; only the inbox misses it until the page is reloaded
		// after a retry of the same request.
		logging.FromContext(ctx).WarnContext(ctx, "operator reply queued but not stored in the conversation",
			"event", "console_reply_not_stored", "error", err)
	}
	return ReplyResult{ID: res.ID, Status: outbox.PublicStatus(res.Record)}, nil
}

// contactInfoRequest is the message that asks a contact for their phone number, Meta's
//
//	{"type":"interactive","interactive":{"type":"request_contact_info","body":{"text":…},
//	 "action":{"name":"request_contact_info"}}}
//
// whose button (labelled by WhatsApp, in the user's language) shares the user's contact card,
// which comes back as a contacts message carrying the phone (origin contact_request), which the
// worker makes an alias of the contact.
func contactInfoRequest(text string) (graph.Message, error) {
	return graph.Message{Type: "interactive", Interactive: &graph.Interactive{Type: "request_contact_info",
		Body: &graph.Body{Text: text}, Action: graph.Action{Name: "request_contact_info"}}}, nil
}
