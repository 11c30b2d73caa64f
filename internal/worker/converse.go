package worker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/wapipe/wapipe/internal/assistant"
	"github.com/wapipe/wapipe/internal/contact"
	"github.com/wapipe/wapipe/internal/conversation"
	"github.com/wapipe/wapipe/internal/delivery"
	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/internal/members"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/tenant"
	"github.com/wapipe/wapipe/internal/turnstate"
	"github.com/wapipe/wapipe/tasks"
)

// TurnEngine decides one turn of a conversation; *assistant.Engine implements it.
type TurnEngine interface {
	Turn(ctx context.Context, in assistant.Input) (assistant.Outcome, error)
}

// ConversationStore keeps the conversations: their inboxes (package conversation), their
// messages (the one that asked for a confirmation, to tell a tap on it from a tap on an older
// one; an action's result) and their contacts' windows; *store.ConversationStore implements it.
type ConversationStore interface {
	conversation.Inbox
	delivery.Windows
	GetMessage(ctx context.Context, conversationID, messageID string) (store.Message, error)
	AddOutbound(ctx context.Context, conversationID string, m store.Message) error
}

// converse answers a tenant's message through its conversation: the message is stored in the
// conversation's inbox and its turn runs when the conversation's earlier turns have run (see
// package conversation), here or in the task that holds the conversation. The task succeeds once
// the message is safely in the inbox and, if this task took the conversation, once the inbox is
// drained; any error leaves it to Cloud Tasks to retry.
func (s *Server) converse(ctx context.Context, t *task, out tasks.Outbound, start time.Time) outcome {
	logger := logging.FromContext(ctx)
	if ch, ok := out.Message.IdentityChange(); ok {
		// process_inbound follows identity changes and makes no task of them; a task made
		// before it did lands here. It is followed the same way, never answered, and makes no
		// contact nor conversation for a person the tenant never knew.
		if _, err := s.deps.People.Change(ctx, []string{out.TenantID}, ch); err != nil {
			return s.fail(ctx, t, fmt.Errorf("follow the identity change: %w", err))
		}
		return outcome{kind: skipped}
	}
	who, err := s.deps.People.Sender(ctx, out.TenantID, out.PhoneNumberID, senderOf(out))
	if err != nil {
		return s.fail(ctx, t, fmt.Errorf("find the sender's contact: %w", err))
	}
	ctx, logger = logging.With(ctx, "contact_id", who.Contact.ID)
	in := conversation.Inbound{
		TenantID: out.TenantID, PhoneNumberID: out.PhoneNumberID, ConversationID: who.ConversationID,
		ContactID: who.Contact.ID, Person: who.Contact.Identity, Contact: who.Contact.WaID,
		MessageID: out.Message.ID, Message: out.Message, ReceivedAt: out.ReceivedAt,
		InboundEventID: out.InboundEventID, CorrelationID: out.CorrelationID, LastAttempt: s.isLastAttempt(t),
	}
	if rec, err := s.deps.Tenants.Tenant(ctx, out.TenantID); err == nil && rec.Tenant.Assistant.Mode == tenant.ModeLLM {
		in.MayConfirm = true
	}
	if in.ReceivedAt.IsZero() {
		// A task from before received_at travelled: the task's first run is the next best
		// clock, and stays the same on a redo only if the turn commits in this attempt.
		in.ReceivedAt = start
	}
	readDone := s.markReadAsync(ctx, out)
	handle := s.runner.Handle
	if s.isLastAttempt(t) {
		handle = s.runner.AwaitHolder
	}
	res, err := handle(ctx, in, s.turnFunc(t))
	<-readDone
	if errors.Is(err, conversation.ErrHeld) && !s.isLastAttempt(t) {
		// Quietly: the usual reason is the conversation's live holder, which is handling the
		// message right now; the retry then finds it handled.
		return retryLater("conversation_held", 0)
	}
	if o, ok := mediaBusy(err); ok {
		return o
	}
	if err != nil {
		return s.fail(ctx, t, err)
	}
	status := "handled"
	switch {
	case res.Duplicate && !res.Queued && res.Turns == 0:
		status = "duplicate"
	case res.Queued:
		status = "queued"
	}
	logger.InfoContext(ctx, "message handled through its conversation", "event", "conversation_handled",
		"conversation_id", res.ConversationID, "status", status, "turns", res.Turns,
		"duration_ms", s.deps.Now().Sub(start).Milliseconds())
	return outcome{kind: conversed, conversation: res, reason: status}
}

// markReadAsync marks the inbound message read with its tenant's token, beside the turn; the
// returned channel closes when it is done. Best effort: no token, no mark.
func (s *Server) markReadAsync(ctx context.Context, out tasks.Outbound) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		rec, token, _, err := s.deliver.TenantToken(ctx, out.TenantID)
		if err != nil || rec.AuthStatus == store.AuthNeedsReauth {
			// No token, or one already refused: nothing to mark with.
			return
		}
		s.deliver.MarkRead(context.WithoutCancel(ctx), token, out.PhoneNumberID, out.Message.ID)
	}()
	return done
}

// turnFunc runs the turns of the conversation for the holder's task t: membership first
// (onboarding, invite codes), then the tenant's assistant.
func (s *Server) turnFunc(t *task) conversation.TurnFunc {
	return func(ctx context.Context, p conversation.Pending, st turnstate.State) (assistant.Outcome, error) {
		// The stored records first (a revoke erases, an edit changes, a number change moves);
		// the turn then decides the state and replies, as for any message.
		if _, err := s.applyMessageEvent(ctx, p.TenantID, p.ConversationID, p.Message); err != nil {
			return assistant.Outcome{}, err
		}
		rec, err := s.deps.Tenants.Tenant(ctx, p.TenantID)
		if errors.Is(err, store.ErrNotFound) {
			// The tenant was deleted after the message was routed: nobody to answer for.
			logging.FromContext(ctx).WarnContext(ctx, "tenant gone: message not answered", "event", "tenant_not_found",
				"tenant_id", p.TenantID)
			return assistant.Outcome{State: st, Event: "tenant_not_found"}, nil
		}
		if err != nil {
			return assistant.Outcome{}, fmt.Errorf("read tenant %s: %w", p.TenantID, err)
		}
		tn := rec.Tenant
		m := p.Message
		// A non-member's replies are counted in the conversation's state, whose turns run one
		// at a time: exact, and no extra read.
		allow := func() (ok bool) {
			st, ok = st.HitOnboarding(m.ID, p.ReceivedAt)
			return ok
		}
		gate := members.Gate{Store: s.deps.Members}
		if s.deps.Contacts != nil {
			gate.Moves = s.deps.Contacts
		}
		c, err := s.pendingContact(ctx, p)
		if err != nil {
			return assistant.Outcome{}, err
		}
		adm, err := gate.Admit(ctx, tn, c, m, allow)
		if err != nil {
			return assistant.Outcome{}, err
		}
		if adm.Handled {
			o := assistant.Outcome{State: st, Event: adm.Event, Language: tn.EffectiveLanguage(adm.Member)}
			if !adm.Reply.IsZero() {
				o.Replies = []assistant.Reply{{Reply: adm.Reply, Key: adm.Key}}
			}
			return o, nil
		}
		stale, err := s.staleButton(ctx, p, st)
		if err != nil {
			return assistant.Outcome{}, err
		}
		loader, release := s.mediaLoader(p.TenantID)
		// The turn's file, and the request built around it, are done with once its model call is.
		defer release()
		return s.deps.Assistant.Turn(ctx, assistant.Input{
			Tenant: tn, Member: adm.Member, IsMember: adm.IsMember, ConversationID: p.ConversationID,
			ContactID: c.ID, Person: c.Identity,
			Message: m, Now: p.ReceivedAt, State: st, LastAttempt: s.isLastAttempt(t), StaleButton: stale,
			Media: loader,
		})
	}
}

// pendingContact is the contact of pending message p: as resolved when it arrived, or, for a
// message stored before contacts (its payload names the sender's phone alone), resolved now.
func (s *Server) pendingContact(ctx context.Context, p conversation.Pending) (store.Contact, error) {
	if p.ContactID != "" {
		return store.Contact{ID: p.ContactID, TenantID: p.TenantID, Identity: p.Person}, nil
	}
	id := p.Message.Identity()
	if id.IsZero() {
		id = contact.Identity{WaID: p.Contact}
	}
	who, err := s.deps.People.Sender(ctx, p.TenantID, p.PhoneNumberID, id)
	if err != nil {
		return store.Contact{}, fmt.Errorf("find the sender's contact: %w", err)
	}
	return who.Contact, nil
}

// staleButton reports whether a confirm_yes / confirm_no tap does not answer the pending
// action's prompt (the button ids are the same on every confirmation): only a tap whose
// context is the prompt's Graph message id answers it. A tap without a context, or on a prompt
// whose id is not known (never sent), cannot be shown to answer it, so it does not.
func (s *Server) staleButton(ctx context.Context, p conversation.Pending, st turnstate.State) (bool, error) {
	m := p.Message
	if st.Pending == nil || m.Reply == nil || (m.Reply.ID != assistant.ButtonYes && m.Reply.ID != assistant.ButtonNo) {
		return false, nil
	}
	if m.ContextID == "" {
		return true, nil
	}
	prompt, err := s.deps.Conversations.GetMessage(ctx, p.ConversationID, st.Pending.MessageID)
	if errors.Is(err, store.ErrNotFound) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("read the confirmation's message: %w", err)
	}
	for _, r := range prompt.Replies {
		if r.Index != st.Pending.PromptIndex {
			continue
		}
		id := r.GraphMessageID
		if id == "" {
			// The prompt went out after its turn's effects were done with it: held for an
			// unknown outcome and sent by the sweep, or sent from its dead-lettered record. Its
			// record knows the Graph id.
			id, err = s.sentID(ctx, r.IdempotencyKey)
			if err != nil {
				return false, err
			}
		}
		if id != "" {
			return id != m.ContextID, nil
		}
	}
	return true, nil
}

// sentID is the Graph message id of the send recorded under key, "" when it has none (not sent,
// or no record).
func (s *Server) sentID(ctx context.Context, key string) (string, error) {
	records, ok := s.deps.Outbound.(interface {
		GetOutbound(ctx context.Context, key string) (store.OutboundRecord, error)
	})
	if !ok || key == "" {
		return "", nil
	}
	rec, err := records.GetOutbound(ctx, key)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("read the confirmation prompt's record: %w", err)
	}
	return rec.GraphMessageID, nil
}

// replySender sends the replies of committed turns (conversation.Sender), each under its own
// idempotency record.
type replySender struct{ s *Server }

// SendReply sends one recorded reply exactly once. It returns an error only when the send should
// be retried (the drain stops and the task is retried); a reply that cannot be sent for good is
// recorded failed and logged, and nil is returned so the conversation goes on.
func (r replySender) SendReply(ctx context.Context, o conversation.Outgoing) (string, error) {
	p := o.Pending
	to := p.Person.Address()
	if to.IsZero() {
		// A message stored before contacts names its sender's phone alone.
		to.To = p.Contact
	}
	return r.s.sendReply(ctx, delivery.Request{
		Kind: delivery.ConversationReply, Key: o.IdempotencyKey, TenantID: p.TenantID, PhoneNumberID: p.PhoneNumberID,
		To: to.To, Recipient: to.Recipient, ConversationID: p.ConversationID, InboundMessageID: p.MessageID, InboundEventID: p.InboundEventID, CorrelationID: p.CorrelationID,
		ReceivedAt: p.ReceivedAt, LastInbound: time.Unix(p.Timestamp, 0), Reply: o.Reply.Reply, LastAttempt: o.LastAttempt,
	})
}

// errSendLater is a send to retry later: an earlier attempt's outcome is still unknown.
var errSendLater = errors.New("an earlier send's outcome is not known yet: retry later")

// sendReply delivers a reply of a conversation (a turn's, or an action's result) for the task
// that holds the conversation: it returns Meta's message id, "" when the reply cannot be sent
// for good (the conversation goes on), or an error when the task should be retried (or kept as
// a dead letter, for a permanent failure).
func (s *Server) sendReply(ctx context.Context, req delivery.Request) (string, error) {
	ctx, _ = logging.With(ctx, "idempotency_key", req.Key)
	res := s.deliver.Deliver(ctx, req)
	switch res.Status {
	case delivery.Sent:
		return res.MessageID, nil
	case delivery.Settled:
		return res.Record.GraphMessageID, nil
	case delivery.Retry:
		if res.Err == nil {
			return "", errSendLater
		}
		return "", &failure{kind: temporary, err: res.Err, code: res.Code, retryAfter: res.RetryAfter, class: res.Class}
	}
	if res.DeadLetter {
		return "", &failure{kind: permanent, err: res.Err, code: res.Code, class: res.Class}
	}
	return "", nil
}
