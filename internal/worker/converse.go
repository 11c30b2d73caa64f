package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/wapipe/wapipe/internal/assistant"
	"github.com/wapipe/wapipe/internal/conversation"
	"github.com/wapipe/wapipe/internal/graph"
	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/internal/responder"
	"github.com/wapipe/wapipe/internal/secrets"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/taskqueue"
	"github.com/wapipe/wapipe/internal/tenant"
	"github.com/wapipe/wapipe/tasks"
)

// TurnEngine decides one turn of a conversation; *assistant.Engine implements it.
type TurnEngine interface {
	Turn(ctx context.Context, in assistant.Input) (assistant.Outcome, error)
}

// StoredMessages reads a conversation's stored messages; *store.ConversationStore implements
// it. The worker reads the message that asked for a confirmation, to tell a tap on it from a
// tap on an older one.
type StoredMessages interface {
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
	in := conversation.Inbound{
		TenantID: out.TenantID, PhoneNumberID: out.PhoneNumberID, Contact: out.To,
		MessageID: out.Message.ID, Message: out.Message, ReceivedAt: out.ReceivedAt,
		InboundEventID: out.InboundEventID, CorrelationID: out.CorrelationID,
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
	res, err := s.runner.Handle(ctx, in, s.turnFunc(t))
	<-readDone
	if errors.Is(err, conversation.ErrHeld) && !s.isLastAttempt(t) {
		// Quietly: the usual reason is the conversation's live holder, which is handling the
		// message right now; the retry then finds it handled.
		return retryLater("conversation_held", 0)
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
		rec, token, _, err := s.tenantToken(ctx, out.TenantID)
		if err != nil || rec.AuthStatus == store.AuthNeedsReauth {
			// No token, or one already refused: nothing to mark with.
			return
		}
		s.markRead(context.WithoutCancel(ctx), token, out)
	}()
	return done
}

// turnFunc runs the turns of the conversation for the holder's task t: membership first
// (onboarding, invite codes), then the tenant's assistant.
func (s *Server) turnFunc(t *task) conversation.TurnFunc {
	return func(ctx context.Context, p conversation.Pending, st assistant.State) (assistant.Outcome, error) {
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
		adm, err := s.admit(ctx, tn, m, allow)
		if err != nil {
			return assistant.Outcome{}, err
		}
		if adm.handled {
			o := assistant.Outcome{State: st, Event: adm.event, Language: tn.EffectiveLanguage(adm.member)}
			if !adm.reply.IsZero() {
				o.Replies = []assistant.Reply{{Reply: adm.reply, Key: adm.key}}
			}
			return o, nil
		}
		stale, err := s.staleButton(ctx, p, st)
		if err != nil {
			return assistant.Outcome{}, err
		}
		return s.deps.Assistant.Turn(ctx, assistant.Input{
			Tenant: tn, Member: adm.member, IsMember: adm.isMember, ConversationID: p.ConversationID,
			Message: m, Now: p.ReceivedAt, State: st, LastAttempt: s.isLastAttempt(t), StaleButton: stale,
		})
	}
}

// staleButton reports whether a confirm_yes / confirm_no tap does not answer the pending
// action's prompt (the button ids are the same on every confirmation): only a tap whose
// context is the prompt's Graph message id answers it. A tap without a context, or on a prompt
// whose id is not known (never sent), cannot be shown to answer it, so it does not.
func (s *Server) staleButton(ctx context.Context, p conversation.Pending, st assistant.State) (bool, error) {
	m := p.Message
	if st.Pending == nil || m.Reply == nil || (m.Reply.ID != assistant.ButtonYes && m.Reply.ID != assistant.ButtonNo) {
		return false, nil
	}
	if m.ContextID == "" {
		return true, nil
	}
	prompt, err := s.deps.Messages.GetMessage(ctx, p.ConversationID, st.Pending.MessageID)
	if errors.Is(err, store.ErrNotFound) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("read the confirmation's message: %w", err)
	}
	for _, r := range prompt.Replies {
		if r.Index == st.Pending.PromptIndex && r.GraphMessageID != "" {
			return r.GraphMessageID != m.ContextID, nil
		}
	}
	return true, nil
}

// replySender sends the replies of committed turns (conversation.Sender), each under its own
// idempotency record.
type replySender struct{ s *Server }

// SendReply sends one recorded reply exactly once. It returns an error only when the send should
// be retried (the drain stops and the task is retried); a reply that cannot be sent for good is
// recorded failed and logged, and nil is returned so the conversation goes on.
func (r replySender) SendReply(ctx context.Context, o conversation.Outgoing) (string, error) {
	p := o.Pending
	replyTo := ""
	if o.Reply.Quote {
		replyTo = p.MessageID
	}
	return r.s.deliver(ctx, delivery{
		key: o.IdempotencyKey, tenantID: p.TenantID, phoneNumberID: p.PhoneNumberID, to: p.Contact,
		messageID: p.MessageID, inboundEventID: p.InboundEventID, correlationID: p.CorrelationID,
		receivedAt: p.ReceivedAt, lastInbound: time.Unix(p.Timestamp, 0), reply: o.Reply.Reply, replyTo: replyTo,
	})
}

// delivery is one message to send under its idempotency record.
type delivery struct {
	key, tenantID, phoneNumberID, to         string
	messageID, inboundEventID, correlationID string
	receivedAt                               time.Time
	// lastInbound is the Meta time of the message answered (zero when none): the 24-hour window
	// runs from it, or from the conversation's last_inbound_at when later.
	lastInbound time.Time
	reply       responder.Reply
	// replyTo is the message to quote, "" for none.
	replyTo string
}

// errSendLater is a send to retry later: an earlier attempt's outcome is still unknown.
var errSendLater = errors.New("an earlier send's outcome is not known yet: retry later")

// deliver sends d.reply once under the record d.key: it returns Meta's message id, "" when the
// message cannot be sent for good (recorded failed), or an error when a retry should try again.
func (s *Server) deliver(ctx context.Context, d delivery) (string, error) {
	ctx, logger := logging.With(ctx, "idempotency_key", d.key)
	dec, rec, err := s.deps.Outbound.BeginSend(ctx, store.OutboundRecord{
		IdempotencyKey: d.key, InboundEventID: d.inboundEventID, MessageID: d.messageID,
		CorrelationID: d.correlationID, PhoneNumberID: d.phoneNumberID, TenantID: d.tenantID,
		ToHash: s.deps.Hasher.Phone(d.to), ReceivedAt: d.receivedAt,
	})
	if err != nil {
		return "", err
	}
	switch dec {
	case store.AlreadyDone:
		logger.InfoContext(ctx, "reply already settled: not sending again", "event", "outbound_duplicate", "state", rec.State)
		return rec.GraphMessageID, nil
	case store.AwaitReconcile:
		if t, ok := ctx.Value(taskKey{}).(*task); ok && s.isLastAttempt(t) {
			// As process_outbound does on its last attempt: the record says failed (a late
			// status webhook still settles it to sent) and the task is kept as an
			// outcome_unknown dead letter, so that a replay reopens the record and sends.
			// Left "sending", every replay within the reconcile window would wait again.
			if err := s.deps.Outbound.MarkFailed(ctx, d.key, int(rec.LastErrorCode), errOutcomeUnknown.Error()); err != nil {
				return "", err
			}
			logger.ErrorContext(ctx, "reply given up on the task's last attempt: an earlier send's outcome is unknown",
				"event", "outbound_failed", "class", reasonOutcomeUnknown)
			return "", &failure{kind: permanent, err: errOutcomeUnknown, code: int(rec.LastErrorCode), class: reasonOutcomeUnknown}
		}
		logger.WarnContext(ctx, "awaiting reconciliation of an earlier send", "event", "outbound_awaiting_reconcile",
			"sending_since", rec.SendingSince)
		return "", errSendLater
	case store.OutcomeUnknown:
		if err := s.deps.Outbound.MarkFailed(ctx, d.key, int(rec.LastErrorCode), errOutcomeUnknown.Error()); err != nil {
			return "", err
		}
		logger.ErrorContext(ctx, "reply given up: an earlier send's outcome stayed unknown", "event", "outbound_failed",
			"class", reasonOutcomeUnknown)
		return "", nil
	}
	rec2, token, reason, err := s.tenantToken(ctx, d.tenantID)
	if err != nil && reason == "" {
		s.markRetry(ctx, d.key, temporaryFailure(err, 0), true)
		return "", err
	}
	if reason != "" {
		if err := s.deps.Outbound.MarkFailed(ctx, d.key, 0, reason); err != nil {
			return "", err
		}
		logger.ErrorContext(ctx, "reply cannot be sent: the tenant has no usable access token", "event", "outbound_unsendable",
			"reason", reason, "tenant_id", d.tenantID)
		return "", nil
	}
	// Outside the contact's 24-hour window a free-form reply becomes the tenant's reengage
	// template, or is recorded failed.
	m, why, err := s.fitWindow(ctx, rec2.Tenant, d.phoneNumberID, d.to, replyMessage(d.reply, d.replyTo), true, d.lastInbound)
	if err != nil {
		s.markRetry(ctx, d.key, temporaryFailure(err, 0), true)
		return "", err
	}
	if why != "" {
		if err := s.deps.Outbound.MarkFailed(ctx, d.key, codeReengagement, why); err != nil {
			return "", err
		}
		logger.WarnContext(ctx, "reply not sent: outside the customer service window", "event", "send_outside_window")
		return "", nil
	}
	seed := store.OutboundRecord{IdempotencyKey: d.key, TenantID: d.tenantID, PhoneNumberID: d.phoneNumberID, To: d.to}
	if s.deps.Sends != nil && rec2.AuthStatus == store.AuthNeedsReauth {
		res, err := s.parkSend(ctx, rec2, seed, m, nil)
		if err != nil {
			return "", err
		}
		if res.Parked {
			return "", nil
		}
		// The cache was a few seconds behind a new token: send with it.
		if token, err = s.deps.Tokens.Token(ctx, res.Tenant); err != nil {
			return "", err
		}
	}
	start := s.deps.Now()
	graphID, err := s.deps.Sender.Send(ctx, token, d.phoneNumberID, d.to, responder.Reply{Message: &m}, d.key, "")
	if err != nil && classifySend(err).code == codeReengagement && m.Type != "template" && rec2.Tenant.Templates.Reengage != nil {
		// Meta says the window closed: the reengage template instead, once.
		tpl := rec2.Tenant.Templates.Reengage
		m = graph.Message{Type: "template", Template: &graph.Template{Name: tpl.Name, Language: graph.Language{Code: tpl.Language}}}
		logger.InfoContext(ctx, "Meta refused a free-form reply outside the window: sending the reengage template", "event", "send_reengage")
		graphID, err = s.deps.Sender.Send(ctx, token, d.phoneNumberID, d.to, responder.Reply{Message: &m}, d.key, "")
	}
	if err != nil {
		f := classifySend(err)
		if f.kind == refusedAuth && s.deps.Sends != nil {
			res, perr := s.parkSend(ctx, rec2, seed, m, err)
			if perr == nil && res.Parked {
				return "", nil
			}
			// Not parked: the tenant has a new token since; send again with it.
			s.markRetry(ctx, d.key, f, true)
			return "", errors.Join(err, perr)
		}
		if f.kind == refused || f.kind == refusedAuth {
			if merr := s.deps.Outbound.MarkFailed(ctx, d.key, f.code, err.Error()); merr != nil {
				return "", merr
			}
			logger.ErrorContext(ctx, "reply refused by WhatsApp: not retrying", "event", "outbound_failed",
				"meta_error_code", f.code, "class", f.class, "error", err)
			return "", nil
		}
		s.markRetry(ctx, d.key, f, f.definite)
		if t, ok := ctx.Value(taskKey{}).(*task); ok && s.isLastAttempt(t) {
			// The task that runs the conversation is on its last attempt and will be kept as a
			// dead letter: the record says failed, so a replay reopens it.
			if merr := s.deps.Outbound.MarkFailed(ctx, d.key, f.code, "retries exhausted: "+err.Error()); merr != nil {
				logger.ErrorContext(ctx, "record not marked failed", "event", "outbound_record_failed", "error", merr)
			}
		}
		logger.WarnContext(ctx, "reply not sent: will retry", "event", "outbound_retry", "meta_error_code", f.code,
			"class", f.class, "outcome_known", f.definite, "error", err)
		return "", f
	}
	if _, err := s.deps.Outbound.MarkSent(ctx, d.key, graphID, false); err != nil {
		logger.ErrorContext(ctx, "reply sent but record not updated: the status webhook will reconcile it",
			"event", "outbound_record_failed", "error", err)
	}
	logger.InfoContext(ctx, "reply sent", "event", "outbound_sent", logging.MessageID(graphID),
		"attempt", rec.Attempts, "duration_ms", s.deps.Now().Sub(start).Milliseconds())
	return graphID, nil
}

// tenantToken opens the tenant's access token. When no retry can help until an operator acts
// (tenant gone, no token, a token sealed for another key), reason names it and err is the cause;
// otherwise a non-nil err is worth a retry.
func (s *Server) tenantToken(ctx context.Context, tenantID string) (rec store.TenantRecord, token, reason string, err error) {
	rec, err = s.deps.Tenants.Tenant(ctx, tenantID)
	if errors.Is(err, store.ErrNotFound) {
		return rec, "", "tenant_not_found", err
	}
	if err != nil {
		return rec, "", "", fmt.Errorf("read tenant %s: %w", tenantID, err)
	}
	if len(rec.AccessToken) == 0 {
		return rec, "", "no_token", errNoToken
	}
	token, err = s.deps.Tokens.Token(ctx, rec)
	if isUnreadableSecret(err) {
		return rec, "", "token_unreadable", err
	}
	if err != nil {
		return rec, "", "", err
	}
	return rec, token, "", nil
}

// actionQueue enqueues the actions of committed turns (conversation.Actions) on the tenant's
// send queue, one task per action id.
type actionQueue struct{ s *Server }

// EnqueueAction creates the action's task; a task already created for it counts as success.
func (a actionQueue) EnqueueAction(ctx context.Context, p conversation.Pending, req assistant.ActionRequest) error {
	raw, err := json.Marshal(req)
	if err != nil {
		return fmt.Errorf("encode action request: %w", err)
	}
	body, err := json.Marshal(tasks.Action{
		ActionID: req.ActionID, TenantID: p.TenantID, ConversationID: p.ConversationID,
		PhoneNumberID: p.PhoneNumberID, To: p.Contact, MessageID: p.MessageID,
		InboundEventID: p.InboundEventID, CorrelationID: p.CorrelationID, ReceivedAt: p.ReceivedAt, Request: raw,
	})
	if err != nil {
		return fmt.Errorf("encode action task: %w", err)
	}
	res, err := a.s.deps.Tasks.Enqueue(ctx, taskqueue.Task{
		Queue: tasks.TenantQueueID(p.TenantID), ID: tasks.ActionTaskID(req.ActionID),
		Path: tasks.ProcessActionPath, Body: body, CorrelationID: p.CorrelationID,
	})
	if err != nil {
		return fmt.Errorf("create action task: %w", err)
	}
	logging.FromContext(ctx).InfoContext(ctx, "action queued", "event", "action_queued", "action_id", req.ActionID,
		"intent", req.Intent, "existed", res.Existed)
	return nil
}

// isUnreadableSecret reports a ciphertext no retry can open: sealed for another key or place,
// or damaged.
func isUnreadableSecret(err error) bool {
	return errors.Is(err, secrets.ErrNotAuthentic) || errors.Is(err, secrets.ErrKeyKind) || errors.Is(err, secrets.ErrMalformed)
}
