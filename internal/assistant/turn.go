package assistant

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/wapipe/wapipe/internal/contact"
	"github.com/wapipe/wapipe/internal/i18n"
	"github.com/wapipe/wapipe/internal/llm"
	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/internal/tenant"
	"github.com/wapipe/wapipe/internal/turnstate"
	"github.com/wapipe/wapipe/internal/whatsapp"
	"github.com/wapipe/wapipe/pricing"
)

// Extractor asks the model for a message's intent; *llm.Client satisfies it. Its errors are
// read with errors.Is against llm.ErrInvalidResponse and llm.ErrPermanent; any other error
// counts as llm.ErrUnavailable.
type Extractor interface {
	Extract(ctx context.Context, req llm.Request) (llm.Result, error)
}

// ExtractorFunc adapts a function to Extractor.
type ExtractorFunc func(ctx context.Context, req llm.Request) (llm.Result, error)

// Extract calls f.
func (f ExtractorFunc) Extract(ctx context.Context, req llm.Request) (llm.Result, error) {
	return f(ctx, req)
}

// ErrRetry marks a turn that could not be completed now and changed nothing: Vertex AI was
// unavailable, the sender rate limit could not be read, or the context ended. Redo the turn
// later (answer non-2xx so Cloud Tasks retries); the error also matches its cause.
var ErrRetry = errors.New("assistant: redo the turn later")

// Input is everything one turn depends on.
type Input struct {
	// Tenant is the tenant the message's number belongs to.
	Tenant *tenant.Tenant
	// Member is the sender when IsMember; the zero Member otherwise.
	Member   tenant.Member
	IsMember bool
	// ConversationID is the conversation's id in the store; with the tenant and message ids it
	// makes the action ids.
	ConversationID string
	// ContactID is the sender's contact (ct_…): the key of its sender window and quota share.
	// Person is the contact's identity as known now (the action call's "from").
	ContactID string
	Person    contact.Identity
	// Message is the inbound message (already stored).
	Message whatsapp.Message
	// Now is the turn's only clock (expiry, rate windows, quota period, requested_at). Pass a
	// value that a redone turn sees again, such as the inbound task's received_at.
	Now time.Time
	// State is what the previous turn left; Turn does not modify it.
	State turnstate.State
	// LastAttempt says the worker will not redo this turn: when Vertex AI is unavailable the
	// user gets the localized "unavailable" message instead of an ErrRetry.
	LastAttempt bool
	// StaleButton says a confirm_yes or confirm_no tap was made on another confirmation than
	// the pending action's: the button ids are fixed, so only the worker can tell, by comparing
	// Message.ContextID with the Graph id of the pending action's prompt (the reply PromptIndex
	// of the turn of turnstate.PendingAction.MessageID). Such a tap is answered "expired" and the
	// pending action stays, so a user scrolling up cannot confirm what they did not see.
	StaleButton bool
	// UntiedWord says a typed confirming or rejecting word ("yes", "ya") on a number several
	// businesses share does not reply (Meta's context) to the pending action's prompt: another
	// business on the number may have asked the question it answers, so it confirms nothing; the
	// pending action stays and the user is told to tap or reply to the prompt. Only the worker
	// can tell, as for StaleButton.
	UntiedWord bool
	// Media fetches the file of an image, audio, video or document message, only after the
	// guardrails let the message through to the LLM (a limited or over-quota message downloads
	// nothing). Nil: such messages get the "can't read this message" reply, as before media
	// were understood.
	Media MediaLoader
	// Typing shows the sender the typing indicator (one best-effort call); Turn calls it once
	// when a model call runs longer than TypingDelay. Nil: never.
	Typing func(context.Context)
	// HumanAt is when a human of the business last answered in the conversation: the
	// assistant stays silent until the tenant's human_pause after it (takeover).
	HumanAt time.Time
}

// Outcome is what a turn decided.
type Outcome struct {
	// Replies are the messages to send now, in order, each with its Index.
	Replies []Reply
	// Action, when set, is the action call to run now as its own task; its answer is the
	// user's one message for it (see ActionReply, ActionRefusal, ActionFailed).
	Action *ActionRequest
	// State is the state to save for the next turn.
	State turnstate.State
	// Event names what happened, for the log (the Event constants).
	Event string
	// Reason refines Event (the Reason constants), empty when Event says it all.
	Reason string
	// Cause is the error behind a fail-safe outcome (ReasonQuotaCheckError,
	// ReasonSenderCheckError, ReasonLLMPermanent, ReasonLLMUnavailable), for the log. The turn
	// completed all the same.
	Cause error
	// Intent is the intent the model chose or the confirmed action's.
	Intent string
	// Corrected: the message dropped a pending action and was handled as a fresh turn.
	Corrected bool
	// LLMCalls counts the LLM calls made (0 to 2); each was reserved against the quota.
	LLMCalls int
	// Usage sums the calls' token usage.
	Usage llm.Usage
	// Language is the language of the turn's system messages, and of the action's answer.
	Language string
	// Media describes the file Input.Media fetched (type, hash, size), its Data left out: what
	// the stored message keeps (media.Describe). Nil when nothing was fetched.
	Media *Attachment
}

// The events of a turn.
const (
	EventAck                = "ack"                  // mode ack: the acknowledgement
	EventIgnored            = "ignored"              // a reaction, system notice or blank text: nothing sent
	EventConfirmed          = "confirmed"            // the pending action runs: Outcome.Action, no reply
	EventCancelled          = "cancelled"            // the pending action was rejected
	EventExpired            = "expired"              // an answer to a pending action past its time
	EventHumanHolds         = "human_holds"          // a human of the business answered lately: silent
	EventNothingToConfirm   = "nothing_to_confirm"   // a confirm button with nothing pending
	EventConfirmByReply     = "confirm_by_reply"     // a typed yes or no on a shared number, not replying to the prompt
	EventRateLimited        = "rate_limited"         // over a rate limit: the notice or silence
	EventQuotaBlocked       = "quota_blocked"        // the quota check refused or failed
	EventQuotaBlockedCached = "quota_blocked_cached" // the conversation's cached block: no check
	EventUnsupported        = "unsupported_message"  // a message it cannot read: "send it another way"
	EventNotUnderstood      = "not_understood"       // two invalid answers, or no usable reply
	EventUnavailable        = "llm_unavailable"      // the LLM failed for good: "unavailable"
	EventNotAllowed         = "not_allowed"          // the intent's roles exclude the sender
	EventClarification      = "clarification"        // low confidence or missing fields
	EventPending            = "pending"              // asked to confirm: a new pending action
	EventActionNow          = "action_now"           // an intent without confirmation: Outcome.Action
	EventGeneralQuery       = "general_query"        // the model's answer
)

// The reasons refining an event.
const (
	ReasonConversationLimit = "conversation_limit"  // EventRateLimited
	ReasonSenderLimit       = "sender_limit"        // EventRateLimited
	ReasonQuotaExceeded     = "quota_exceeded"      // EventQuotaBlocked, EventQuotaBlockedCached
	ReasonQuotaCheckError   = "quota_check_error"   // EventQuotaBlocked: fail safe
	ReasonSenderCheckError  = "sender_check_error"  // EventUnavailable on the last attempt
	ReasonLLMUnavailable    = "llm_unavailable"     // EventUnavailable on the last attempt
	ReasonLLMPermanent      = "llm_permanent"       // EventUnavailable: the request cannot succeed
	ReasonInvalidResponse   = "invalid_response"    // EventNotUnderstood
	ReasonEmptyReply        = "empty_reply"         // EventNotUnderstood
	ReasonUnknownIntent     = "unknown_intent"      // EventNotUnderstood: not a tenant intent
	ReasonDataTooLong       = "data_too_long"       // EventNotUnderstood: the data lines exceed a message
	ReasonSenderShare       = "sender_share"        // EventQuotaBlocked(Cached): the contact's monthly share
	ReasonIntentRemoved     = "intent_removed"      // EventExpired: the tenant dropped the intent
	ReasonStaleButton       = "stale_button"        // EventExpired: a tap on an older confirmation
	ReasonStaleOption       = "stale_option"        // EventExpired: a tap on a choice not offered by the last reply
	ReasonUntiedWord        = "untied_word"         // EventConfirmByReply: a typed word not replying to the prompt
	ReasonPendingNotAllowed = "pending_not_allowed" // EventNotAllowed at confirmation
)

// Engine runs turns. It is safe for concurrent use; the turns of one conversation must still
// run one at a time, each with the state the previous one left.
type Engine struct {
	extractor Extractor
	guard     Guard
	// prices and spending price the calls and check the budget (WithPrices); nil: not priced.
	prices   *pricing.Card
	spending Spending
	watcher  Watcher
}

// New returns an engine that asks x and counts with g; both are required.
func New(x Extractor, g Guard) *Engine {
	if x == nil || g == nil {
		panic("assistant.New: nil Extractor or Guard")
	}
	return &Engine{extractor: x, guard: g}
}

// Turn decides the answer to in.Message. An error matching ErrRetry means nothing was decided
// and the turn should be redone later; any other error is a malformed Input.
func (e *Engine) Turn(ctx context.Context, in Input) (Outcome, error) {
	if err := in.validate(); err != nil {
		return Outcome{}, err
	}
	t := newTurn(in)
	kind, text, ok := t.message()
	if !ok {
		return t.outcome(), nil
	}
	llmMode := in.Tenant.Assistant.Mode == tenant.ModeLLM
	if !llmMode {
		// A pending action left from mode llm: nothing can confirm it now.
		t.state.Pending = nil
	}
	if (in.Message.Type == "revoke" || in.Message.Type == "edit") && t.revise(llmMode) || t.humanHolds() {
		return t.outcome(), nil
	}
	if t.state.Pending != nil {
		switch {
		case (kind == kindYes || kind == kindNo) && in.StaleButton:
			t.reason = ReasonStaleButton
			t.system(EventExpired, i18n.Expired)
			return t.outcome(), nil
		case kind == kindText && in.UntiedWord:
			// Perhaps an answer to another business on the number: the action stays pending,
			// and the user is told how to answer it.
			t.reason = ReasonUntiedWord
			t.system(EventConfirmByReply, i18n.ConfirmByReply)
			return t.outcome(), nil
		case kind == kindYes || kind == kindText && i18n.IsConfirm(text):
			t.answerPending(true)
			return t.outcome(), nil
		case kind == kindNo || kind == kindText && i18n.IsReject(text):
			t.answerPending(false)
			return t.outcome(), nil
		}
	}
	if kind == kindIgnored {
		t.event = EventIgnored
		return t.outcome(), nil
	}
	// The rate limits hold in every mode.
	done, err := e.rateLimit(ctx, t)
	if err != nil {
		return Outcome{}, err
	}
	if done {
		return t.outcome(), nil
	}
	if !llmMode {
		if in.Message.Type == "unsupported" {
			// What Meta could not deliver is not acknowledged as received, in any mode.
			t.system(EventUnsupported, i18n.UnsupportedMessage)
			return t.outcome(), nil
		}
		t.ack()
		return t.outcome(), nil
	}
	switch kind {
	case kindYes, kindNo:
		t.system(EventNothingToConfirm, i18n.NothingToConfirm)
	case kindTap:
		// Another button's tap is an ordinary message, whatever its title says ("Yes"):
		// only wapipe's own buttons, or typed words, answer a pending action.
		if err := e.converse(ctx, t, text); err != nil {
			return Outcome{}, err
		}
	case kindMedia:
		if err := e.converseMedia(ctx, t); err != nil {
			return Outcome{}, err
		}
	case kindOther:
		t.system(EventUnsupported, i18n.UnsupportedMessage)
	default:
		if err := e.converse(ctx, t, text); err != nil {
			return Outcome{}, err
		}
	}
	return t.outcome(), nil
}

func (in *Input) validate() error {
	var errs []error
	if in.Tenant == nil {
		errs = append(errs, errors.New("no tenant"))
	}
	if in.ConversationID == "" {
		errs = append(errs, errors.New("no conversation id"))
	}
	if in.Message.ID == "" {
		errs = append(errs, errors.New("no message id"))
	}
	if in.Now.IsZero() {
		errs = append(errs, errors.New("no time"))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("assistant: invalid input: %w", err)
	}
	return nil
}

// kind is what an inbound message is to the assistant.
type kind int

const (
	kindText    kind = iota // text
	kindTap                 // a tap on another button or list row: its title, never an answer
	kindYes                 // the confirm_yes button
	kindNo                  // the confirm_no button
	kindIgnored             // nothing to answer
	kindOther               // a message the assistant cannot read
	kindMedia               // an image, audio, video or document: its file goes to the model
)

// classify sorts m and returns its text (the body, the tapped button's title, or what a media
// message, a location, contact cards or a list choice are to the model and the history).
func classify(m whatsapp.Message) (kind, string) {
	switch m.Type {
	case "text":
		if strings.TrimSpace(m.Text) == "" {
			return kindIgnored, ""
		}
		return kindText, m.Text
	case "image", "audio", "video", "document":
		if m.Media == nil {
			return kindOther, ""
		}
		return kindMedia, mediaSummary(m)
	case "location":
		if m.Location == nil {
			return kindOther, ""
		}
		return kindText, locationText(m.Location)
	case "contacts":
		if len(m.Contacts) == 0 {
			return kindOther, ""
		}
		return kindText, contactsText(m.Contacts)
	case "interactive", "button":
		if m.Reply == nil {
			return kindOther, ""
		}
		switch m.Reply.ID {
		case ButtonYes:
			return kindYes, m.Reply.Title
		case ButtonNo:
			return kindNo, m.Reply.Title
		}
		switch m.Reply.Kind {
		case whatsapp.InteractiveCallPermission, "nfm_reply":
			// A call permission answer, or a Flow wapipe did not send: recorded, nothing to say.
			return kindIgnored, ""
		}
		if strings.TrimSpace(m.Reply.Title) == "" {
			return kindOther, ""
		}
		if m.Reply.Kind == "list_reply" {
			return kindTap, listReplyText(m.Reply)
		}
		return kindTap, m.Reply.Title
	case "order":
		if m.Order == nil || len(m.Order.Items) == 0 {
			return kindOther, ""
		}
		return kindText, orderText(m.Order)
	case "edit":
		// Only a correction of a pending action reaches the model (see revise).
		if strings.TrimSpace(m.Text) == "" {
			return kindIgnored, ""
		}
		return kindText, m.Text
	case "revoke", "reaction", "system", "request_welcome", "sticker":
		// A reaction or a sticker is not the user asking for something, nor is a number
		// change, and request_welcome (a first opening of the chat) carries no text to answer.
		return kindIgnored, ""
	}
	return kindOther, ""
}

// turn is one turn in progress.
type turn struct {
	in Input
	// typing is the turn's one typing indicator (typingAfter).
	typing    sync.Once
	lang      string
	role      tenant.Role
	state     turnstate.State
	user      string
	replies   replies
	action    *ActionRequest
	event     string
	reason    string
	cause     error
	intent    string
	corrected bool
	// dropped is the pending action a correction dropped, kept back if the file of a media
	// message is refused (the model never saw the correction).
	dropped  *turnstate.PendingAction
	media    *Attachment
	llmCalls int
	usage    llm.Usage
}

func newTurn(in Input) *turn {
	t := &turn{in: in, state: in.State.Clone()}
	var m tenant.Member
	if in.IsMember {
		m, t.role = in.Member, in.Member.Role
	}
	t.lang = in.Tenant.EffectiveLanguage(m)
	return t
}

func (t *turn) outcome() Outcome {
	if t.event != EventIgnored && t.event != EventRevoked && t.event != EventEdited {
		t.state.AddTurn(turnstate.Turn{MessageID: t.in.Message.ID, At: t.in.Now, User: t.user, Reply: t.replies.transcript(),
			Intent: t.intent, Event: t.event})
	}
	return Outcome{
		Replies: t.replies, Action: t.action, State: t.state, Event: t.event, Reason: t.reason, Cause: t.cause,
		Intent: t.intent, Corrected: t.corrected, LLMCalls: t.llmCalls, Usage: t.usage, Language: t.lang, Media: t.media,
	}
}

// system ends the turn with one system message.
func (t *turn) system(event string, key i18n.Key) {
	t.event = event
	t.replies.system(t.lang, key)
}

// ack answers in mode ack: ack_text exactly, else the localized acknowledgement in the sender's
// language.
func (t *turn) ack() {
	t.event = EventAck
	if s := t.in.Tenant.Assistant.AckText; s != "" {
		t.replies.text(s, "", true)
		return
	}
	t.replies.text(i18n.Text(t.lang, i18n.Ack), i18n.Ack, true)
}

// answerPending handles a confirmation (yes) or a rejection of the pending action.
func (t *turn) answerPending(yes bool) {
	p := t.state.Pending
	t.state.Pending = nil
	t.intent = p.Intent
	if p.Expired(t.in.Now) {
		t.system(EventExpired, i18n.Expired)
		return
	}
	if !yes {
		t.system(EventCancelled, i18n.Cancelled)
		return
	}
	in, ok := t.in.Tenant.Intent(p.Intent)
	if !ok {
		t.reason = ReasonIntentRemoved
		t.system(EventExpired, i18n.Expired)
		return
	}
	if !in.AllowedFor(t.role) {
		// The member's role changed since the request.
		t.reason = ReasonPendingNotAllowed
		t.system(EventNotAllowed, i18n.NotAllowed)
		return
	}
	t.event = EventConfirmed
	t.action = t.actionRequest(p.ActionID, p.Intent, p.Data)
}

func (t *turn) actionRequest(id, intent string, data map[string]any) *ActionRequest {
	name := t.in.Member.Name
	if !t.in.IsMember || name == "" {
		name = t.in.Message.ContactName
	}
	if data == nil {
		data = map[string]any{}
	}
	return &ActionRequest{
		ActionID: id, TenantID: t.in.Tenant.ID, Intent: intent, Data: data,
		From: ActionFrom{WaID: t.in.Person.WaID, UserID: t.in.Person.UserID, Username: t.in.Person.Username,
			Name: name, Role: string(t.role)},
		ConversationID: t.in.ConversationID, RequestedAt: t.in.Now,
	}
}

// rateLimit counts the message against the conversation limit, then the sender limit. done
// means the turn ends here (limited, or failed safe on the last attempt).
func (e *Engine) rateLimit(ctx context.Context, t *turn) (done bool, err error) {
	limits, id, now := t.in.Tenant.Limits, t.in.Message.ID, t.in.Now
	var w turnstate.Window
	if t.state.RateWindow != nil {
		w = *t.state.RateWindow
	}
	w, d := w.Hit(id, now, limits.Conversation)
	t.state.RateWindow = &w
	if d.Limited {
		t.rateLimited(ReasonConversationLimit, d.First)
		return true, nil
	}
	d, err = e.guard.HitSender(ctx, turnstate.SenderHit{TenantID: t.in.Tenant.ID, Sender: t.in.ContactID, LegacySender: t.in.Person.WaID,
		MessageID: id, At: now, Limit: limits.Sender})
	if err != nil {
		if t.in.LastAttempt && ctx.Err() == nil {
			t.unavailable(ReasonSenderCheckError, err)
			return true, nil
		}
		return false, fmt.Errorf("%w: sender rate limit: %w", ErrRetry, err)
	}
	if d.Limited {
		t.rateLimited(ReasonSenderLimit, d.First)
		return true, nil
	}
	return false, nil
}

func (t *turn) rateLimited(reason string, notify bool) {
	t.event, t.reason = EventRateLimited, reason
	if notify {
		t.replies.system(t.lang, i18n.RateLimited)
	}
}

func (t *turn) unavailable(reason string, cause error) {
	t.reason, t.cause = reason, cause
	t.system(EventUnavailable, i18n.Unavailable)
}

// converseMedia handles an image, audio, video or document: a type the model cannot take is
// refused before the quota gate (nothing to download, no call to count); the file is fetched
// after it.
func (e *Engine) converseMedia(ctx context.Context, t *turn) error {
	m := t.in.Message
	if t.in.Media == nil {
		t.system(EventUnsupported, i18n.UnsupportedMessage)
		return nil
	}
	if mt := m.Media.MimeType; mt != "" {
		if _, ok := llm.InlineMIMEType(mt); !ok {
			t.reason = ReasonMediaUnsupported
			t.system(EventMediaRefused, i18n.MediaUnsupported)
			return nil
		}
	}
	return e.converse(ctx, t, mediaText(m))
}

// converse handles a text (or, for kindMedia, the file and its caption) with the LLM, behind
// the quota gate.
func (e *Engine) converse(ctx context.Context, t *turn, text string) error {
	if t.state.Pending != nil {
		// Anything but a yes or a no is a correction: the old action is dropped and the model,
		// which sees the conversation, builds the new one.
		t.dropped, t.state.Pending = t.state.Pending, nil
		t.corrected = true
	}
	req := t.request(text)
	for attempt := 0; ; attempt++ {
		ok, err := e.gate(ctx, t, attempt)
		if err != nil || !ok {
			return err
		}
		if attempt == 0 && isMediaType(t.in.Message.Type) && t.in.Media != nil {
			// After the gate: a message over a limit or the quota downloads nothing.
			media, done, err := e.loadMedia(ctx, t)
			if err != nil || done {
				return err
			}
			req.Media = media
		}
		if ok, err := e.withinBudget(ctx, t, req); err != nil || !ok {
			return err
		}
		t.llmCalls++
		stop := t.typingAfter(ctx, TypingDelay)
		res, err := e.extractor.Extract(ctx, req)
		stop()
		t.addUsage(res.Usage)
		e.recordTokens(ctx, t, attempt, req.Model, res.Usage)
		switch {
		case err == nil:
			t.decide(res)
			return nil
		case errors.Is(err, llm.ErrInvalidResponse):
			if attempt == 0 {
				continue
			}
			t.reason = ReasonInvalidResponse
			t.system(EventNotUnderstood, i18n.NotUnderstood)
			return nil
		case errors.Is(err, llm.ErrPermanent):
			t.unavailable(ReasonLLMPermanent, err)
			return nil
		case t.in.LastAttempt && ctx.Err() == nil:
			t.unavailable(ReasonLLMUnavailable, err)
			return nil
		default:
			return fmt.Errorf("%w: llm: %w", ErrRetry, err)
		}
	}
}

// gate is the quota check, the one place that decides whether an LLM call may be made. It
// reports false after setting the turn's answer when it may not. Its error only says the
// context ended.
func (e *Engine) gate(ctx context.Context, t *turn, attempt int) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, fmt.Errorf("%w: %w", ErrRetry, err)
	}
	now := t.in.Now
	period := turnstate.Period(now)
	limit, limited := t.in.Tenant.Quota.MonthlyLLMCalls()
	share, shareLimited := t.in.Tenant.Quota.SenderShare()
	if b := t.state.QuotaBlocked; b != nil {
		if b.Holds(period, limit, limited, share, shareLimited) {
			t.event, t.reason = EventQuotaBlockedCached, ReasonQuotaExceeded
			if b.Sender {
				// The contact's own share: it got its one notice.
				t.reason = ReasonSenderShare
				return false, nil
			}
			// One notice per conversation rate-limit window: the user learns why there is no
			// answer without getting one notice per message.
			if !now.Before(b.NotifiedAt.Add(t.in.Tenant.Limits.Conversation.Per)) {
				b.NotifiedAt = now
				t.replies.system(t.lang, i18n.QuotaExceeded)
			}
			return false, nil
		}
		// A new period, or the quota or share was raised or removed: check again.
		t.state.QuotaBlocked = nil
	}
	dec, err := e.guard.ReserveCall(ctx, turnstate.CallReservation{
		TenantID: t.in.Tenant.ID, Period: period, CallID: callID(t.in.Tenant.ID, t.in.ConversationID, t.in.Message.ID, attempt),
		Limit: limit, Limited: limited, Sender: t.in.ContactID, LegacySender: t.in.Person.WaID, SenderLimit: share,
		SenderLimited: shareLimited,
	})
	switch {
	case err != nil && (ctx.Err() != nil || !t.in.LastAttempt):
		// Like the sender check's: the turn is redone (its task's retry, after a last attempt the
		// sweep), since a store that failed now (an outage of seconds) may answer then.
		return false, fmt.Errorf("%w: quota: %w", ErrRetry, err)
	case err != nil:
		// Fail safe on the last attempt: no call without a counted reservation.
		t.event, t.reason, t.cause = EventQuotaBlocked, ReasonQuotaCheckError, err
		t.replies.system(t.lang, i18n.Unavailable)
		return false, nil
	case !dec.Granted && dec.SenderShare:
		// This contact used its share of the month; the others are still served.
		t.state.QuotaBlocked = &turnstate.QuotaBlock{Period: period, Limit: share, NotifiedAt: now, Sender: true}
		t.event, t.reason = EventQuotaBlocked, ReasonSenderShare
		t.replies.system(t.lang, i18n.QuotaExceeded)
		return false, nil
	case !dec.Granted:
		t.state.QuotaBlocked = &turnstate.QuotaBlock{Period: period, Limit: limit, NotifiedAt: now}
		t.event, t.reason = EventQuotaBlocked, ReasonQuotaExceeded
		t.replies.system(t.lang, i18n.QuotaExceeded)
		return false, nil
	}
	return true, nil
}

// recordTokens records the tokens of the turn's call number attempt. A failure is logged and
// the turn goes on: the call was made and answered, and redoing the turn would pay for it again.
func (e *Engine) recordTokens(ctx context.Context, t *turn, attempt int, model string, u llm.Usage) {
	if u.PromptTokens == 0 && u.OutputTokens == 0 && u.ThoughtsTokens == 0 {
		return
	}
	out := u.OutputTokens + u.ThoughtsTokens
	err := e.guard.RecordTokens(ctx, turnstate.TokenUse{TenantID: t.in.Tenant.ID, Period: turnstate.Period(t.in.Now),
		CallID: callID(t.in.Tenant.ID, t.in.ConversationID, t.in.Message.ID, attempt),
		Prompt: u.PromptTokens, Output: out, Audio: u.AudioTokens, ContactID: t.in.ContactID,
		Amount: e.price(model, t.in.Now, u.PromptTokens, u.AudioTokens, out), At: t.in.Now})
	if err != nil {
		logging.FromContext(ctx).WarnContext(ctx, "LLM token usage not recorded", "event", "llm_tokens_unrecorded",
			"tenant_id", t.in.Tenant.ID, "error", err)
		return
	}
	e.watch(ctx, t)
}

func (t *turn) addUsage(u llm.Usage) {
	t.usage.PromptTokens += u.PromptTokens
	t.usage.OutputTokens += u.OutputTokens
	t.usage.ThoughtsTokens += u.ThoughtsTokens
	t.usage.TotalTokens += u.TotalTokens
}

// decide turns the model's answer into the turn's replies, pending action or action.
func (t *turn) decide(res llm.Result) {
	t.intent = res.Intent
	reply := strings.TrimSpace(res.Reply)
	if res.Intent == tenant.GeneralQuery {
		t.modelReply(EventGeneralQuery, reply, res.Options)
		return
	}
	in, ok := t.in.Tenant.Intent(res.Intent)
	if !ok {
		t.reason = ReasonUnknownIntent
		t.system(EventNotUnderstood, i18n.NotUnderstood)
		return
	}
	// The role comes first: asking for missing details of a request that will be refused
	// wastes the user's time.
	if !in.AllowedFor(t.role) {
		t.system(EventNotAllowed, i18n.NotAllowed)
		return
	}
	t.fillDefaults(in, res.Data)
	if res.Confidence < t.in.Tenant.Assistant.MinConfidence || len(missingFields(in, res)) > 0 {
		t.modelReply(EventClarification, reply, res.Options)
		return
	}
	id := ActionID(t.in.Tenant.ID, t.in.ConversationID, t.in.Message.ID)
	data := actionData(in, res.Data)
	if in.Confirm {
		// The user confirms the data lines wapipe renders from the data the action will carry,
		// not the model's prose, which a steered model can make say something else.
		if !t.replies.confirm(t.lang, reply, dataLines(t.lang, t.in.Tenant.Currency, in, data)) {
			t.reason = ReasonDataTooLong
			t.system(EventNotUnderstood, i18n.NotUnderstood)
			return
		}
		t.event = EventPending
		t.state.Pending = &turnstate.PendingAction{
			ActionID: id, Intent: in.Name, Data: data, Summary: t.replies.transcript(),
			MessageID: t.in.Message.ID, PromptIndex: len(t.replies) - 1, CreatedAt: t.in.Now, ExpiresAt: t.in.Now.Add(turnstate.PendingTTL),
		}
		return
	}
	// No interim reply: the action's answer is the user's one message.
	t.event = EventActionNow
	t.action = t.actionRequest(id, in.Name, data)
}

// modelReply sends the model's text, or "not understood" when it gave none; with the choices
// it offers as buttons or a list, never beside a pending confirmation (whose buttons alone
// answer it).
func (t *turn) modelReply(event, reply string, options []llm.Option) {
	if reply == "" {
		t.reason = ReasonEmptyReply
		t.system(EventNotUnderstood, i18n.NotUnderstood)
		return
	}
	t.event = event
	if len(options) == 0 || t.state.Pending != nil {
		t.replies.text(reply, "", false)
		return
	}
	t.state.Offered = t.replies.choices(t.lang, reply, options)
}

// missingFields are the intent's required fields that the data lacks or that the model lists
// as missing: the Extractor is trusted for neither. A missing optional field does not hold the
// request up.
func missingFields(in tenant.Intent, res llm.Result) []string {
	var missing []string
	for _, r := range in.Required {
		if v, ok := res.Data[r]; !ok || v == nil || slices.Contains(res.MissingFields, r) {
			missing = append(missing, r)
		}
	}
	return missing
}

// request is the LLM request for text: the tenant's assistant, the sender and the history.
func (t *turn) request(text string) llm.Request {
	a := t.in.Tenant.Assistant
	return llm.Request{
		Model: a.Model, Instructions: a.Instructions, Role: string(t.role), Name: t.senderName(), Language: t.lang,
		Intents: llmIntents(a.Intents), History: history(t.state.Turns), Text: text, Now: t.in.Now.In(t.in.Tenant.Location()),
	}
}

// message classifies the turn's message and returns its text (the turn's user text), once the
// choices the last reply offered are applied: they are for this message only, and a tap on one
// is its title. ok is false, the turn answered, for a tap on a choice not offered (or offered
// before the last reply).
func (t *turn) message() (kind, string, bool) {
	k, text := classify(t.in.Message)
	offered := t.state.Offered
	t.state.Offered = nil
	if id, ok := strings.CutPrefix(t.tapID(k), OptionPrefix); ok {
		i := slices.IndexFunc(offered, func(o turnstate.Option) bool { return o.ID == id })
		if i < 0 {
			t.reason = ReasonStaleOption
			t.system(EventExpired, i18n.Expired)
			return k, "", false
		}
		text = offered[i].Title
	}
	t.user = text
	return k, text, true
}

// tapID is the id of a tapped button or row, "" for any other message.
func (t *turn) tapID(k kind) string {
	if k != kindTap {
		return ""
	}
	return t.in.Message.Reply.ID
}

// humanHolds reports whether a human of the business answered in the conversation within the
// tenant's human_pause (checked after a revoke or an edit is applied, which holds whoever holds
// the conversation): the message then waits for them, stored and unanswered (a pending action
// stays until it expires).
func (t *turn) humanHolds() bool {
	in := t.in
	if in.HumanAt.IsZero() || !in.Now.Before(in.HumanAt.Add(in.Tenant.Assistant.EffectiveHumanPause())) {
		return false
	}
	t.event = EventHumanHolds
	return true
}

// TypingDelay is how long a model call runs before the sender sees the typing indicator: a
// quick turn's reply comes first, a voice note's or a slow model's shows that it is coming.
const TypingDelay = time.Second

// typingAfter shows the typing indicator once in the turn if the call it brackets runs longer
// than d; the returned func ends the bracket.
func (t *turn) typingAfter(ctx context.Context, d time.Duration) (stop func()) {
	if t.in.Typing == nil {
		return func() {}
	}
	timer := time.AfterFunc(d, func() { t.typing.Do(func() { t.in.Typing(context.WithoutCancel(ctx)) }) })
	return func() { timer.Stop() }
}

// fillDefaults fills the fields of in that data lacks and the intent defaults to the sender
// (defaults: {driver: sender}) with the sender's name, when it is known.
func (t *turn) fillDefaults(in tenant.Intent, data map[string]any) {
	name := t.senderName()
	for field, d := range in.Defaults {
		if _, ok := data[field]; !ok && d == tenant.DefaultSender && name != "" {
			data[field] = name
		}
	}
}

// senderName is what the sender is called: the member's name in the tenant file, else the
// profile name Meta sent with the message.
func (t *turn) senderName() string {
	if t.in.IsMember && t.in.Member.Name != "" {
		return t.in.Member.Name
	}
	return t.in.Message.ContactName
}

// history is the stored turns as the model's conversation, oldest first.
func history(turns []turnstate.Turn) []llm.Turn {
	var h []llm.Turn
	for _, tr := range turns {
		if tr.User != "" {
			h = append(h, llm.Turn{Role: llm.RoleUser, Text: tr.User})
		}
		if tr.Reply != "" {
			h = append(h, llm.Turn{Role: llm.RoleModel, Text: tr.Reply})
		}
	}
	return h
}

// llmIntents maps the tenant's intents to the LLM's. The LLM's schema has no time types: time
// and datetime fields are strings, and their format is spelled out in the description.
func llmIntents(intents []tenant.Intent) []llm.Intent {
	out := make([]llm.Intent, 0, len(intents))
	for _, in := range intents {
		li := llm.Intent{Name: in.Name, Description: in.Description, Required: append([]string(nil), in.Required...)}
		var formats []string
		for _, f := range in.Fields {
			typ := llm.TypeString
			switch f.Type {
			case tenant.FieldInteger:
				typ = llm.TypeInteger
			case tenant.FieldNumber, tenant.FieldMoney:
				typ = llm.TypeNumber
			case tenant.FieldBoolean:
				typ = llm.TypeBoolean
			case tenant.FieldDate:
				typ = llm.TypeDate
			case tenant.FieldTime:
				formats = append(formats, f.Name+" is a time HH:MM (24-hour)")
			case tenant.FieldDateTime:
				formats = append(formats, f.Name+" is a date and time YYYY-MM-DDTHH:MM")
			}
			if in.Defaults[f.Name] == tenant.DefaultSender {
				formats = append(formats, f.Name+" is the user unless they name someone else")
			}
			li.Fields = append(li.Fields, llm.Field{Name: f.Name, Type: typ})
		}
		if len(formats) > 0 {
			li.Description = strings.TrimSpace(li.Description + " (" + strings.Join(formats, "; ") + ")")
		}
		out = append(out, li)
	}
	return out
}
