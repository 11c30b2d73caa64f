package turn

import (
	"context"
	"errors"
	"fmt"

	"github.com/wapipe/wapipe/internal/assistant"
	"github.com/wapipe/wapipe/internal/contact"
	"github.com/wapipe/wapipe/internal/conversation"
	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/internal/media"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/turnstate"
)

// turnFunc runs the turns of the conversation for the holder's task (lastAttempt: the task will
// not be retried): the message's events first, then membership (onboarding, invite codes), then
// the tenant's assistant.
func (t *Turner) turnFunc(lastAttempt bool) conversation.TurnFunc {
	return func(ctx context.Context, p conversation.Pending, st turnstate.State) (assistant.Outcome, error) {
		// The stored records first (a revoke erases, an edit changes, a number change moves);
		// the turn then decides the state and replies, as for any message.
		if t.Events != nil {
			if _, err := t.Events.ApplyMessage(ctx, p.TenantID, p.ConversationID, p.Message); err != nil {
				return assistant.Outcome{}, err
			}
		}
		rec, err := t.Tenants.Tenant(ctx, p.TenantID)
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
		c, err := t.pendingContact(ctx, p)
		if err != nil {
			return assistant.Outcome{}, err
		}
		adm, err := t.Gate.Admit(ctx, tn, c, m, allow)
		if err != nil {
			return assistant.Outcome{}, err
		}
		if adm.Handled {
			o := assistant.Outcome{State: st, Event: adm.Event, Language: tn.EffectiveLanguage(adm.Member)}
			if !adm.Reply.IsZero() {
				o.Replies = []assistant.Reply{{Message: adm.Reply, Key: adm.Key}}
			}
			return o, nil
		}
		stale, err := t.staleButton(ctx, p, st)
		if err != nil {
			return assistant.Outcome{}, err
		}
		untied, err := t.untiedWord(ctx, p, st, tn.SharesNumber(p.PhoneNumberID))
		if err != nil {
			return assistant.Outcome{}, err
		}
		loader, release := t.mediaLoader(p.TenantID)
		// The turn's file, and the request built around it, are done with once its model call is.
		defer release()
		return t.Assistant.Turn(ctx, assistant.Input{
			Tenant: tn, Member: adm.Member, IsMember: adm.IsMember, ConversationID: p.ConversationID,
			ContactID: c.ID, Person: c.Identity,
			Message: m, Now: p.ReceivedAt, State: st, LastAttempt: lastAttempt, StaleButton: stale, UntiedWord: untied,
			Media: loader, Typing: t.typing(p), HumanAt: p.HumanAt,
		})
	}
}

// typing shows p's sender the typing indicator with its tenant's token (no token, none).
func (t *Turner) typing(p conversation.Pending) func(context.Context) {
	return func(ctx context.Context) {
		rec, token, _, err := t.Tokens.TenantToken(ctx, p.TenantID)
		if err != nil || rec.AuthStatus == store.AuthNeedsReauth {
			return
		}
		t.Receipts.ShowTyping(ctx, token, p.PhoneNumberID, p.Message.ID)
	}
}

// pendingContact is the contact of pending message p: as resolved when it arrived, or, for a
// message stored before contacts (its payload names the sender's phone alone), resolved now.
func (t *Turner) pendingContact(ctx context.Context, p conversation.Pending) (store.Contact, error) {
	if p.ContactID != "" {
		return store.Contact{ID: p.ContactID, TenantID: p.TenantID, Identity: p.Person}, nil
	}
	id := p.Message.Identity()
	if id.IsZero() {
		id = contact.Identity{WaID: p.Contact}
	}
	who, err := t.People.Sender(ctx, p.TenantID, p.PhoneNumberID, id)
	if err != nil {
		return store.Contact{}, fmt.Errorf("find the sender's contact: %w", err)
	}
	return who.Contact, nil
}

// staleButton reports whether a confirm_yes / confirm_no tap does not answer the pending
// action's prompt (the button ids are the same on every confirmation): only a tap whose
// context is the prompt's Graph message id answers it. A tap without a context, or on a prompt
// whose id is not known (never sent), cannot be shown to answer it, so it does not.
func (t *Turner) staleButton(ctx context.Context, p conversation.Pending, st turnstate.State) (bool, error) {
	m := p.Message
	if st.Pending == nil || m.Reply == nil || (m.Reply.ID != assistant.ButtonYes && m.Reply.ID != assistant.ButtonNo) {
		return false, nil
	}
	return t.notOnPrompt(ctx, p, st)
}

// untiedWord reports whether a typed confirming or rejecting word on a shared number does not
// reply to the pending action's prompt (assistant.Input.UntiedWord): on a number another
// business also writes from, "yes" may answer that business's message, so only a word whose
// context is the prompt answers it. On a number of the tenant's own a typed word answers as it
// always did.
func (t *Turner) untiedWord(ctx context.Context, p conversation.Pending, st turnstate.State, shared bool) (bool, error) {
	m := p.Message
	if !shared || st.Pending == nil || m.Type != "text" || !assistant.IsAnswerWord(m.Text) {
		return false, nil
	}
	return t.notOnPrompt(ctx, p, st)
}

// notOnPrompt reports whether p's message is not a reply (context) to the pending action's
// prompt: it has no context, the prompt's Graph id is not known (never sent), or it is another.
func (t *Turner) notOnPrompt(ctx context.Context, p conversation.Pending, st turnstate.State) (bool, error) {
	m := p.Message
	if m.ContextID == "" {
		return true, nil
	}
	prompt, err := t.Messages.GetMessage(ctx, p.ConversationID, st.Pending.MessageID)
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
			id, err = t.sentID(ctx, r.IdempotencyKey)
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
func (t *Turner) sentID(ctx context.Context, key string) (string, error) {
	if t.Records == nil || key == "" {
		return "", nil
	}
	rec, err := t.Records.GetOutbound(ctx, key)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("read the confirmation prompt's record: %w", err)
	}
	return rec.GraphMessageID, nil
}

// mediaLoader is the turn's assistant.Input.Media for a message of tenantID, fetched with the
// tenant's token (opened only if the assistant asks); nil when no media are fetched. The file
// stays charged to the media budget (MEDIA_INFLIGHT_BYTES) until release is called, once the
// turn's model call is done.
func (t *Turner) mediaLoader(tenantID string) (l assistant.MediaLoader, release func()) {
	if t.Media == nil {
		return nil, func() {}
	}
	return media.WithToken(t.Media, func(ctx context.Context) (string, error) {
		_, token, _, err := t.Tokens.TenantToken(ctx, tenantID)
		return token, err
	})
}
