package worker

import (
	"context"
	"errors"
	"time"

	"github.com/wapipe/wapipe/internal/actionrun"
	"github.com/wapipe/wapipe/internal/assistant"
	"github.com/wapipe/wapipe/internal/conversation"
	"github.com/wapipe/wapipe/internal/conversation/turn"
	"github.com/wapipe/wapipe/internal/delivery"
	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/internal/media"
	"github.com/wapipe/wapipe/internal/members"
	"github.com/wapipe/wapipe/tasks"
)

// TurnEngine decides one turn of a conversation; *assistant.Engine implements it.
type TurnEngine = turn.Engine

// ConversationStore keeps the conversations: their inboxes (package conversation), their
// messages (the one that asked for a confirmation, to tell a tap on it from a tap on an older
// one; an action's result) and their contacts' windows; *store.ConversationStore implements it.
type ConversationStore interface {
	conversation.Inbox
	delivery.Windows
	turn.Messages
	actionrun.Messages
}

// converse answers a tenant's message through its conversation (package turn): the task
// succeeds once the message is safely in its conversation's inbox and, if this task took the
// conversation, once the inbox is drained; any error leaves it to Cloud Tasks to retry.
func (s *Server) converse(ctx context.Context, t *task, out tasks.Outbound, start time.Time) outcome {
	last := s.isLastAttempt(t)
	in := conversation.Inbound{
		TenantID: out.TenantID, PhoneNumberID: out.PhoneNumberID, Person: out.Sender(), MessageID: out.Message.ID,
		Message: out.Message, ReceivedAt: out.ReceivedAt, InboundEventID: out.InboundEventID, CorrelationID: out.CorrelationID,
		LastAttempt: last,
	}
	if in.ReceivedAt.IsZero() {
		// A task from before received_at travelled: the task's first run is the next best
		// clock, and stays the same on a redo only if the turn commits in this attempt.
		in.ReceivedAt = start
	}
	res, err := s.turner.Handle(ctx, in)
	if res.ContactID != "" {
		ctx, _ = logging.With(ctx, "contact_id", res.ContactID)
	}
	switch {
	case res.Followed:
		return outcome{kind: skipped}
	case errors.Is(err, conversation.ErrHeld) && !last:
		// Quietly: the usual reason is the conversation's live holder, which is handling the
		// message right now; the retry then finds it handled.
		return retryLater("conversation_held", 0)
	case errors.Is(err, media.ErrBusy):
		// The turn could not get its file's share of MEDIA_INFLIGHT_BYTES (logged
		// media_budget_exhausted where it was refused): no failure of the message, whose turn has
		// not run and stays in its conversation's inbox. It is retried on every attempt, the last
		// one too, never dead-lettered: after a last attempt the sweep finds the conversation with
		// its message still in the inbox and runs it.
		return retryLater("media_budget_exhausted", 0)
	case err != nil:
		return s.fail(ctx, t, err)
	}
	logging.FromContext(ctx).InfoContext(ctx, "message handled through its conversation", "event", "conversation_handled",
		"conversation_id", res.ConversationID, "status", res.Status(), "turns", res.Turns,
		"duration_ms", s.deps.Now().Sub(start).Milliseconds())
	return outcome{kind: conversed, conversation: res.Result, reason: res.Status()}
}

// newTurner is the conversations' turner on deps (NewServer checked the required ones): replies
// leave through replies, actions as their own tasks, the tenant's token opened by deliver.
func newTurner(deps Deps, deliver *delivery.Deliverer, replies delivery.ReplySender) *turn.Turner {
	runner := conversation.NewRunner(deps.Conversations, replies, actionrun.Queue{Tasks: deps.Tasks}, conversation.Options{
		Lease: deps.Lease, IsConfirmTap: assistant.IsConfirmTap, IsAnswerWord: assistant.IsAnswerWord,
		IsQuotaNotice: assistant.IsQuotaNotice, DescribeMedia: media.Describe, Keyer: deps.Keyer})
	tr := &turn.Turner{Runner: runner, People: deps.People, Tenants: deps.Tenants, Messages: deps.Conversations,
		Events: deps.Events, Gate: members.Gate{Store: deps.Members, Moves: deps.Contacts}, Assistant: deps.Assistant,
		Media: deps.Media, Tokens: deliver, Receipts: deliver}
	if r, ok := deps.Outbound.(turn.Records); ok {
		tr.Records = r
	}
	return tr
}
