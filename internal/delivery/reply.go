package delivery

import (
	"context"
	"errors"
	"time"

	"github.com/wapipe/wapipe/internal/conversation"
	"github.com/wapipe/wapipe/internal/logging"
)

// ReplySender sends the replies of conversations, each exactly once under its own record: a
// committed turn's (SendReply: conversation.Sender) and an action's result (Send: what
// actionrun.Runner's Tell needs). It is the one place a reply's Result becomes what a
// conversation acts on: Meta's message id; "" and no error when the reply is settled unsent for
// good (refused, held on its record, its record its own dead letter), so the conversation goes
// on; an error when the task must not end yet (a *ReplyError, or an earlier send's outcome still
// unknown).
type ReplySender struct{ Deliverer *Deliverer }

// ReplyError is a reply that did not go and holds up its task: a later attempt may send it
// (Cloud Tasks retries the task, after RetryAfter when Meta said), or, Permanent, the kind's
// policy keeps the task as a dead letter (Result.DeadLetter). Code and Class are the Result's.
type ReplyError struct {
	Err        error
	Permanent  bool
	Code       int
	RetryAfter time.Duration
	Class      string
}

func (e *ReplyError) Error() string {
	if e.Err == nil {
		return e.Class
	}
	return e.Err.Error()
}

func (e *ReplyError) Unwrap() error { return e.Err }

// errSendLater is a send to retry later: an earlier attempt's outcome is still unknown.
var errSendLater = errors.New("an earlier send's outcome is not known yet: retry later")

// SendReply sends one recorded reply of a turn (conversation.Sender) to the message's sender.
func (r ReplySender) SendReply(ctx context.Context, o conversation.Outgoing) (string, error) {
	p := o.Pending
	to := p.Person.Address()
	if to.IsZero() {
		// A message stored before contacts names its sender's phone alone.
		to.To = p.Contact
	}
	return r.Send(ctx, Request{
		Kind: ConversationReply, Key: o.IdempotencyKey, TenantID: p.TenantID, PhoneNumberID: p.PhoneNumberID,
		To: to.To, Recipient: to.Recipient, ConversationID: p.ConversationID, InboundMessageID: p.MessageID, InboundEventID: p.InboundEventID, CorrelationID: p.CorrelationID,
		ReceivedAt: p.ReceivedAt, LastInbound: time.Unix(p.Timestamp, 0), Reply: o.Reply.Message, LastAttempt: o.LastAttempt,
	})
}

// Send delivers a reply of a conversation (a turn's, or an action's result) for the task that
// holds the conversation; see ReplySender for what it returns.
func (r ReplySender) Send(ctx context.Context, req Request) (string, error) {
	ctx, _ = logging.With(ctx, "idempotency_key", req.Key)
	return replyOutcome(r.Deliverer.Deliver(ctx, req))
}

// replyOutcome is what a conversation acts on for a reply's delivery (see ReplySender).
func replyOutcome(res Result) (string, error) {
	switch res.Status {
	case Sent:
		return res.MessageID, nil
	case Settled:
		return res.Record.GraphMessageID, nil
	case Retry:
		if res.Err == nil {
			return "", errSendLater
		}
		return "", &ReplyError{Err: res.Err, Code: res.Code, RetryAfter: res.RetryAfter, Class: res.Class}
	}
	if res.DeadLetter {
		return "", &ReplyError{Err: res.Err, Permanent: true, Code: res.Code, Class: res.Class}
	}
	return "", nil
}
