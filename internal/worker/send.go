package worker

import (
	"context"
	"errors"

	"github.com/wapipe/wapipe/internal/graph"
	"github.com/wapipe/wapipe/internal/responder"
)

// GraphSender sends replies with the Graph API client.
type GraphSender struct{ c *graph.Client }

// NewGraphSender adapts c to Sender.
func NewGraphSender(c *graph.Client) *GraphSender { return &GraphSender{c: c} }

// Send sends reply to `to` with token.
func (g *GraphSender) Send(ctx context.Context, token, phoneNumberID, to string, reply responder.Reply, callbackData, replyTo string) (string, error) {
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
	res, err := g.c.WithToken(token).Send(ctx, phoneNumberID, m)
	if err != nil {
		return "", err
	}
	return res.MessageID, nil
}

// MarkRead marks an inbound message as read, with token.
func (g *GraphSender) MarkRead(ctx context.Context, token, phoneNumberID, messageID string) error {
	return g.c.WithToken(token).MarkRead(ctx, phoneNumberID, messageID)
}

// classifySend reads a send error the way the contract asks: on Meta's error.code first, the HTTP
// status second (graph.Classify), then on whether Meta's answer proves nothing was sent.
func classifySend(err error) *failure {
	f := &failure{err: err, retryAfter: graph.RetryAfter(err)}
	k := graph.Classify(err)
	f.class = k.String()
	switch k {
	case graph.Throttled, graph.Temporary:
		f.kind = temporary
	case graph.Auth:
		f.kind = refusedAuth
	default:
		f.kind = refused
	}
	var ge *graph.Error
	if errors.As(err, &ge) {
		f.code = ge.Code
		// Only Meta's own error object on an error status proves nothing was sent. A gateway's
		// 5xx without it, or a 2xx Meta answered but that could not be read, leaves the outcome
		// unknown: the message may be on its way, so wait for its status webhook, never resend
		// at once.
		f.definite = ge.Code != 0 && ge.HTTPStatus >= 300
		if ge.HTTPStatus >= 200 && ge.HTTPStatus < 300 {
			f.kind, f.class = temporary, "unreadable_success"
		}
	}
	if graph.NotSent(err) {
		// No connection was ever made (DNS, dial, TLS handshake): nothing reached Meta, so the
		// retry may send at once instead of waiting out the reconcile window.
		f.definite, f.class = true, "not_sent"
	}
	return f
}
