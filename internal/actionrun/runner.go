package actionrun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/wapipe/wapipe/internal/actioncall"
	"github.com/wapipe/wapipe/internal/assistant"
	"github.com/wapipe/wapipe/internal/contact"
	"github.com/wapipe/wapipe/internal/delivery"
	"github.com/wapipe/wapipe/internal/keyedid"
	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/internal/members"
	"github.com/wapipe/wapipe/internal/outgoing"
	"github.com/wapipe/wapipe/internal/secrets"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/tenant"
	"github.com/wapipe/wapipe/internal/tenantcache"
	"github.com/wapipe/wapipe/tasks"
)

// Tenants gives a tenant by id; the worker's tenant cache implements it.
type Tenants interface {
	Tenant(ctx context.Context, id string) (store.TenantRecord, error)
}

// Messages adds a message to a stored conversation; *store.ConversationStore implements it.
type Messages interface {
	AddOutbound(ctx context.Context, conversationID string, m store.Message) error
}

// Runner runs the actions of confirmed turns.
type Runner struct {
	Tenants  Tenants
	Members  members.Store
	Records  Records
	Caller   Caller
	Secrets  SecretSource
	Messages Messages
	// Tell sends the user the action's result once (delivery.ReplySender).
	Tell Teller
	// Notify, when set, tells the members the intent's notify names of a succeeded action,
	// once each (package notify).
	Notify Notifier
	// Keyer keys the result's idempotency key (tasks.ActionReplyKey); the development key's
	// when nil.
	Keyer *keyedid.Keyer
}

// Teller sends a reply of a conversation exactly once; delivery.ReplySender implements it. Send
// returns Meta's message id ("" when the reply is settled unsent for good), or an error to retry
// (or dead-letter) the task.
type Teller interface {
	Send(ctx context.Context, req delivery.Request) (string, error)
}

// Notifier queues the notifications of a succeeded action; *notify.Notifier implements it. It
// may run again for the same action (a retried or redelivered task) and queues nothing twice.
type Notifier interface {
	Notify(ctx context.Context, tn *tenant.Tenant, a tasks.Action, req actioncall.Request) error
}

// Status is how a run ended.
type Status int

const (
	// Done: the action has its answer and the user was told (or cannot be); Result.Record.
	Done Status = iota + 1
	// Failed: Result.Err ends the attempt (retried, or kept as a dead letter when permanent or
	// on the task's last attempt).
	Failed
	// Busy: another attempt is calling the business right now: retry later.
	Busy
	// Gone: the tenant does not exist any more: the task is kept as a dead letter.
	Gone
)

// Kept is a dead letter to keep beside the run's outcome, for an operator (an action that
// cannot succeed, or failed on its last attempt).
type Kept struct {
	Err   error
	Class string
	// Permanent: no retry fixes it.
	Permanent bool
}

// Result is what a run did.
type Result struct {
	Status Status
	Record store.ActionRecord
	Err    error
	Kept   []Kept
}

// Records keeps the action calls; *store.ActionStore implements it.
type Records interface {
	BeginCall(ctx context.Context, seed store.ActionRecord, hold time.Duration) (store.ActionRecord, bool, error)
	Finish(ctx context.Context, id, state string, httpStatus int, reply, lastError, replyKey string) (store.ActionRecord, error)
	Wait(ctx context.Context, id string, httpStatus int, lastError string) error
}

// Caller calls a business's action URL; *actioncall.Client implements it.
type Caller interface {
	Call(ctx context.Context, actionURL string, secret []byte, req actioncall.Request) (actioncall.Result, error)
}

// SecretSource opens the tenants' action signing secrets; *tenantcache.TokenCache implements it.
type SecretSource interface {
	ActionSecret(ctx context.Context, rec store.TenantRecord) ([]byte, error)
}

// actionHold is how long an attempt holds an action's call: the call's 10 s timeout and a
// margin. A double run of the task within it waits instead of calling a second time.
const actionHold = 30 * time.Second

// Run calls the business when no answer is recorded yet, then tells the user. lastAttempt: the
// task will not be retried after this attempt.
func (r *Runner) Run(ctx context.Context, a tasks.Action, req actioncall.Request, lastAttempt bool) (res Result) {
	rec, err := r.Tenants.Tenant(ctx, a.TenantID)
	if errors.Is(err, store.ErrNotFound) {
		return Result{Status: Gone, Err: fmt.Errorf("tenant %s does not exist (any more)", a.TenantID)}
	}
	if err != nil {
		return Result{Status: Failed, Err: fmt.Errorf("read tenant %s: %w", a.TenantID, err)}
	}
	member, _, err := members.Gate{Store: r.Members}.Member(ctx, rec.Tenant, Contact(a))
	if err != nil {
		return Result{Status: Failed, Err: err}
	}
	lang := rec.Tenant.EffectiveLanguage(member)
	ar, call, err := r.Records.BeginCall(ctx, store.ActionRecord{
		ActionID: a.ActionID, TenantID: a.TenantID, ConversationID: a.ConversationID, Intent: req.Intent,
	}, actionHold)
	if errors.Is(err, store.ErrActionBusy) {
		logging.FromContext(ctx).WarnContext(ctx, "action call in progress in another attempt: retry later", "event", "action_busy")
		return Result{Status: Busy}
	}
	if err != nil {
		return Result{Status: Failed, Err: err}
	}
	if call {
		var ok bool
		if ar, ok = r.call(ctx, &res, rec, req, ar, lastAttempt); !ok {
			return res
		}
	} else {
		logging.FromContext(ctx).InfoContext(ctx, "action already answered: not calling again", "event", "action_duplicate",
			"state", ar.State)
	}
	r.tell(ctx, &res, a, rec.Tenant, lang, ar, lastAttempt)
	if res.Status == Done && ar.State == store.ActionDone && r.Notify != nil {
		// After the user's answer, never before: a failure here retries the task, whose
		// next attempt finds the answer sent and the action recorded, and queues only what
		// is missing.
		if err := r.Notify.Notify(ctx, rec.Tenant, a, req); err != nil {
			res.Status, res.Err = Failed, fmt.Errorf("notify: %w", err)
		}
	}
	return res
}

// call makes one call and records its answer. When ok is false, res says why the attempt ends
// (the call is to be retried).
func (r *Runner) call(ctx context.Context, res *Result, rec store.TenantRecord, req actioncall.Request, ar store.ActionRecord, lastAttempt bool) (store.ActionRecord, bool) {
	logger := logging.FromContext(ctx)
	key := tasks.ActionReplyKey(r.keyer(), ar.ActionID)
	finish := func(state string, status int, reply, lastErr string) (store.ActionRecord, bool) {
		done, err := r.Records.Finish(ctx, ar.ActionID, state, status, reply, lastErr, key)
		if err != nil {
			// The answer is not recorded: the retry calls again with the same
			// Idempotency-Key, and the business answers what it answered.
			res.Status, res.Err = Failed, err
			return ar, false
		}
		return done, true
	}
	url := rec.Tenant.Assistant.ActionURL
	secret, err := r.Secrets.ActionSecret(ctx, rec)
	switch {
	case url == "":
		err = errors.New("the tenant's assistant has no action_url")
	case errors.Is(err, tenantcache.ErrNoActionSecret) || secrets.Unreadable(err):
	case err != nil:
		res.Status, res.Err = Failed, err
		return ar, false
	}
	if err != nil {
		logger.ErrorContext(ctx, "action cannot be called", "event", "action_failed", "reason", "not_configured", "error", err)
		res.Kept = append(res.Kept, Kept{Err: err, Class: "action_not_configured", Permanent: true})
		return finish(store.ActionFailed, 0, "", err.Error())
	}
	called, err := r.Caller.Call(ctx, url, secret, req)
	logger.InfoContext(ctx, "action called", "event", "action_called", "result", called.Kind.String(),
		"http_status", called.HTTPStatus, "attempt", ar.Attempts, "note", called.Note)
	switch called.Kind {
	case actioncall.Done:
		return finish(store.ActionDone, called.HTTPStatus, called.Reply, "")
	case actioncall.Refused:
		return finish(store.ActionRefused, called.HTTPStatus, called.Reply, "")
	case actioncall.Retry:
		if lastAttempt {
			logger.ErrorContext(ctx, "action failed on its last attempt", "event", "action_failed", "reason", "retries_exhausted",
				"http_status", called.HTTPStatus, "error", err)
			res.Kept = append(res.Kept, Kept{Err: err, Class: "action_retries_exhausted"})
			return finish(store.ActionFailed, called.HTTPStatus, "", "retries exhausted: "+errText(err))
		}
		if werr := r.Records.Wait(ctx, ar.ActionID, called.HTTPStatus, errText(err)); werr != nil {
			logger.WarnContext(ctx, "action attempt not recorded", "event", "action_record_failed", "error", werr)
		}
		// No Retry-After: Cloud Tasks would slow the tenant's whole queue for it.
		res.Status, res.Err = Failed, err
		return ar, false
	default:
		logger.ErrorContext(ctx, "action cannot succeed", "event", "action_failed", "reason", "permanent",
			"http_status", called.HTTPStatus, "error", err)
		res.Kept = append(res.Kept, Kept{Err: err, Class: "action_failed", Permanent: true})
		return finish(store.ActionFailed, called.HTTPStatus, "", errText(err))
	}
}

// tell sends the user the one message for the action's answer and stores it in the
// conversation.
func (r *Runner) tell(ctx context.Context, res *Result, a tasks.Action, tn *tenant.Tenant, lang string, ar store.ActionRecord, lastAttempt bool) {
	var text string
	switch ar.State {
	case store.ActionDone:
		text = assistant.ActionReply(lang, ar.Reply)
	case store.ActionRefused:
		text = assistant.ActionRefusal(lang, ar.Reply)
	default:
		text = assistant.ActionFailed(lang)
	}
	// The key the answer was recorded with: an action answered before keys were keyed keeps
	// its unkeyed one, so its message is not sent twice.
	key := ar.ReplyKey
	if key == "" {
		key = tasks.ActionReplyKey(r.keyer(), a.ActionID)
	}
	to := Contact(a).Address()
	graphID, err := r.Tell.Send(ctx, delivery.Request{
		Kind: delivery.ActionResult, Key: key, TenantID: tn.ID, PhoneNumberID: a.PhoneNumberID, To: to.To, Recipient: to.Recipient,
		ConversationID:   a.ConversationID,
		InboundMessageID: a.MessageID, InboundEventID: a.InboundEventID, CorrelationID: a.CorrelationID,
		ReceivedAt: a.ReceivedAt, Reply: outgoing.Message{Text: text}, LastAttempt: lastAttempt,
	})
	if err != nil {
		res.Status, res.Err = Failed, err
		return
	}
	if err := r.Messages.AddOutbound(ctx, a.ConversationID, store.Message{
		MessageID: key, Type: "text", Text: text, ActionID: a.ActionID, Event: "action_" + ar.State,
		CorrelationID: a.CorrelationID, InboundEventID: a.InboundEventID,
		Replies: []store.Reply{{IdempotencyKey: key, Body: text, GraphMessageID: graphID}},
	}); err != nil {
		res.Status, res.Err = Failed, err
		return
	}
	res.Status, res.Record = Done, ar
}

// Validate checks an action task and decodes its request.
func Validate(a tasks.Action) (actioncall.Request, error) {
	var errs []error
	for _, f := range []struct{ name, v string }{
		{"action_id", a.ActionID}, {"tenant_id", a.TenantID}, {"conversation_id", a.ConversationID},
		{"phone_number_id", a.PhoneNumberID}, {"message_id", a.MessageID},
	} {
		if f.v == "" {
			errs = append(errs, fmt.Errorf("%s is empty", f.name))
		}
	}
	if Contact(a).Address().IsZero() {
		errs = append(errs, errors.New("to and user_id are empty: the action names nobody to answer"))
	}
	var req actioncall.Request
	if len(a.Request) == 0 {
		errs = append(errs, errors.New("request is empty"))
	} else if err := json.Unmarshal(a.Request, &req); err != nil {
		errs = append(errs, fmt.Errorf("request: %w", err))
	} else if req.ActionID != a.ActionID {
		errs = append(errs, errors.New("request.action_id differs from action_id"))
	}
	return req, errors.Join(errs...)
}

// Contact is the contact an action task names: who asked, and where its answer goes (the phone
// when known, else the BSUID).
func Contact(a tasks.Action) store.Contact {
	return store.Contact{ID: a.ContactID, TenantID: a.TenantID,
		Identity: contact.Identity{WaID: a.To, UserID: a.UserID, ParentUserID: a.ParentUserID}}
}

func (r *Runner) keyer() *keyedid.Keyer {
	if r.Keyer == nil {
		return keyedid.Dev()
	}
	return r.Keyer
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
