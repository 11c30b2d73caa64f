package worker

import (
	"context"
	"errors"
	"time"

	"github.com/wapipe/wapipe/internal/graph"
	"github.com/wapipe/wapipe/internal/responder"
)

// GraphSender sends replies with the Graph API client.
type GraphSender struct{ c *graph.Client }

// NewGraphSender adapts c to Sender.
func NewGraphSender(c *graph.Client) *GraphSender { return &GraphSender{c: c} }

// Send sends reply to `to`.
func (g *GraphSender) Send(ctx context.Context, phoneNumberID, to string, reply responder.Reply, callbackData, replyTo string) (string, error) {
	var m graph.Message
	if reply.Message != nil {
		m = *reply.Message
	} else {
		m = graph.Message{Type: "text", Text: &graph.Text{Body: reply.Text}}
	}
	m.To = to
	m.BizOpaqueCallbackData = callbackData
	if replyTo != "" {
		m.Context = &graph.Context{MessageID: replyTo}
	}
	res, err := g.c.Send(ctx, phoneNumberID, m)
	if err != nil {
		return "", err
	}
	return res.MessageID, nil
}

// MarkRead marks an inbound message as read.
func (g *GraphSender) MarkRead(ctx context.Context, phoneNumberID, messageID string) error {
	return g.c.MarkRead(ctx, phoneNumberID, messageID)
}

// sendFailure is a failed send, classified.
type sendFailure struct {
	// Retryable: throttling, Meta's temporary errors, timeouts and network errors.
	Retryable bool
	// Definite: Meta answered, so nothing was sent and a retry may send at once. A timeout or
	// a network error leaves the outcome unknown.
	Definite   bool
	Code       int
	RetryAfter time.Duration
	Class      string
}

// classify reads a send error the way the contract asks: on Meta's error.code first, the HTTP
// status second.
func classify(err error) sendFailure {
	f := sendFailure{
		Retryable:  graph.IsRetryable(err),
		RetryAfter: graph.RetryAfter(err),
		Class:      graph.Classify(err).String(),
	}
	var ge *graph.Error
	if errors.As(err, &ge) {
		f.Code = ge.Code
		// Only Meta's own error object on an error status proves nothing was sent. A gateway's
		// 5xx without it, or a 2xx Meta answered but that could not be read, leaves the outcome
		// unknown: the message may be on its way, so wait for its status webhook, never resend
		// at once.
		f.Definite = ge.Code != 0 && ge.HTTPStatus >= 300
		if ge.HTTPStatus >= 200 && ge.HTTPStatus < 300 {
			f.Retryable, f.Class = true, "unreadable_success"
		}
	}
	return f
}
