package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/wapipe/wapipe/internal/action"
	"github.com/wapipe/wapipe/internal/assistant"
	"github.com/wapipe/wapipe/internal/delivery"
	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/internal/members"
	"github.com/wapipe/wapipe/internal/responder"
	"github.com/wapipe/wapipe/internal/secrets"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/tenant"
	"github.com/wapipe/wapipe/internal/tenantcache"
	"github.com/wapipe/wapipe/tasks"
)

// ActionRecords keeps the action calls; *store.ActionStore implements it.
type ActionRecords interface {
	BeginCall(ctx context.Context, seed store.ActionRecord, hold time.Duration) (store.ActionRecord, bool, error)
	Finish(ctx context.Context, id, state string, httpStatus int, reply, lastError, replyKey string) (store.ActionRecord, error)
	Wait(ctx context.Context, id string, httpStatus int, lastError string) error
}

// ActionCaller calls a business's action URL; *action.Client implements it.
type ActionCaller interface {
	Call(ctx context.Context, actionURL string, secret []byte, req action.Request) (action.Result, error)
}

// SecretSource opens the tenants' action signing secrets; *TokenCache implements it.
type SecretSource interface {
	ActionSecret(ctx context.Context, rec store.TenantRecord) ([]byte, error)
}

// actionHold is how long an attempt holds an action's call: the call's 10 s timeout and a
// margin. A double run of the task within it waits instead of calling a second time.
const actionHold = 30 * time.Second

// handleProcessAction runs one action: it calls the business unless an answer is recorded, then
// tells the user the result, exactly once (its own idempotency record).
func (s *Server) handleProcessAction() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req action.Request
		t, a, o, ok := readAs(s, r, tasks.ProcessActionPath, func(t *task, a *tasks.Action) {
			a.CorrelationID = t.correlate(a.CorrelationID)
			t.inboundEventID, t.tenantID, t.idempotencyKey = a.InboundEventID, a.TenantID, tasks.ActionReplyKey(a.ActionID)
		}, func(a tasks.Action) (err error) {
			req, err = validateAction(a)
			return err
		})
		if !ok {
			respond(w, o)
			return
		}
		ctx, _ := logging.With(r.Context(), "action_id", a.ActionID, "tenant_id", a.TenantID, "conversation_id", a.ConversationID,
			"correlation_id", a.CorrelationID, "intent", req.Intent, logging.EventID(a.InboundEventID))
		respond(w, s.processAction(ctx, t, a, req))
	})
}

// processAction calls the business when no answer is recorded yet, then tells the user.
func (s *Server) processAction(ctx context.Context, t *task, a tasks.Action, req action.Request) outcome {
	rec, err := s.deps.Tenants.Tenant(ctx, a.TenantID)
	if errors.Is(err, store.ErrNotFound) {
		return s.deadLetter(ctx, t, permanentFailure(fmt.Errorf("tenant %s does not exist (any more)", a.TenantID)))
	}
	if err != nil {
		return s.fail(ctx, t, fmt.Errorf("read tenant %s: %w", a.TenantID, err))
	}
	member, _, err := members.Gate{Store: s.deps.Members}.Member(ctx, rec.Tenant, a.To)
	if err != nil {
		return s.fail(ctx, t, err)
	}
	lang := rec.Tenant.EffectiveLanguage(member)
	ar, call, err := s.deps.Actions.BeginCall(ctx, store.ActionRecord{
		ActionID: a.ActionID, TenantID: a.TenantID, ConversationID: a.ConversationID, Intent: req.Intent,
	}, actionHold)
	if errors.Is(err, store.ErrActionBusy) {
		logging.FromContext(ctx).WarnContext(ctx, "action call in progress in another attempt: retry later", "event", "action_busy")
		return retryLater("action_in_progress", 0)
	}
	if err != nil {
		return s.fail(ctx, t, err)
	}
	if call {
		var o outcome
		var ok bool
		if ar, o, ok = s.callAction(ctx, t, rec, req, ar); !ok {
			return o
		}
	} else {
		logging.FromContext(ctx).InfoContext(ctx, "action already answered: not calling again", "event", "action_duplicate",
			"state", ar.State)
	}
	return s.tellAction(ctx, t, a, rec.Tenant, lang, ar)
}

// callAction makes one call and records its answer. When ok is false, o ends the attempt: the
// call is to be retried.
func (s *Server) callAction(ctx context.Context, t *task, rec store.TenantRecord, req action.Request, ar store.ActionRecord) (store.ActionRecord, outcome, bool) {
	logger := logging.FromContext(ctx)
	key := tasks.ActionReplyKey(ar.ActionID)
	finish := func(state string, status int, reply, lastErr string) (store.ActionRecord, outcome, bool) {
		done, err := s.deps.Actions.Finish(ctx, ar.ActionID, state, status, reply, lastErr, key)
		if err != nil {
			// The answer is not recorded: the retry calls again with the same
			// Idempotency-Key, and the business answers what it answered.
			return ar, s.fail(ctx, t, err), false
		}
		return done, outcome{}, true
	}
	url := rec.Tenant.Assistant.ActionURL
	secret, err := s.deps.Tokens.ActionSecret(ctx, rec)
	switch {
	case url == "":
		err = errors.New("the tenant's assistant has no action_url")
	case errors.Is(err, tenantcache.ErrNoActionSecret) || isUnreadableSecret(err):
	case err != nil:
		return ar, s.fail(ctx, t, err), false
	}
	if err != nil {
		logger.ErrorContext(ctx, "action cannot be called", "event", "action_failed", "reason", "not_configured", "error", err)
		s.keepDeadLetter(ctx, t, &failure{kind: permanent, err: err, class: "action_not_configured"})
		return finish(store.ActionFailed, 0, "", err.Error())
	}
	res, err := s.deps.Caller.Call(ctx, url, secret, req)
	logger.InfoContext(ctx, "action called", "event", "action_called", "result", res.Kind.String(),
		"http_status", res.HTTPStatus, "attempt", ar.Attempts, "note", res.Note)
	switch res.Kind {
	case action.Done:
		return finish(store.ActionDone, res.HTTPStatus, res.Reply, "")
	case action.Refused:
		return finish(store.ActionRefused, res.HTTPStatus, res.Reply, "")
	case action.Retry:
		if s.isLastAttempt(t) {
			logger.ErrorContext(ctx, "action failed on its last attempt", "event", "action_failed", "reason", "retries_exhausted",
				"http_status", res.HTTPStatus, "error", err)
			s.keepDeadLetter(ctx, t, &failure{kind: temporary, err: err, class: "action_retries_exhausted"})
			return finish(store.ActionFailed, res.HTTPStatus, "", "retries exhausted: "+errText(err))
		}
		if werr := s.deps.Actions.Wait(ctx, ar.ActionID, res.HTTPStatus, errText(err)); werr != nil {
			logger.WarnContext(ctx, "action attempt not recorded", "event", "action_record_failed", "error", werr)
		}
		// No Retry-After: Cloud Tasks would slow the tenant's whole queue for it.
		return ar, s.fail(ctx, t, temporaryFailure(err, 0)), false
	default:
		logger.ErrorContext(ctx, "action cannot succeed", "event", "action_failed", "reason", "permanent",
			"http_status", res.HTTPStatus, "error", err)
		s.keepDeadLetter(ctx, t, &failure{kind: permanent, err: err, class: "action_failed"})
		return finish(store.ActionFailed, res.HTTPStatus, "", errText(err))
	}
}

// tellAction sends the user the one message for the action's answer and stores it in the
// conversation.
func (s *Server) tellAction(ctx context.Context, t *task, a tasks.Action, tn *tenant.Tenant, lang string, ar store.ActionRecord) outcome {
	var text string
	switch ar.State {
	case store.ActionDone:
		text = assistant.ActionReply(lang, ar.Reply)
	case store.ActionRefused:
		text = assistant.ActionRefusal(lang, ar.Reply)
	default:
		text = assistant.ActionFailed(lang)
	}
	key := tasks.ActionReplyKey(a.ActionID)
	graphID, err := s.sendReply(ctx, delivery.Request{
		Kind: delivery.ActionResult, Key: key, TenantID: tn.ID, PhoneNumberID: a.PhoneNumberID, To: a.To,
		InboundMessageID: a.MessageID, InboundEventID: a.InboundEventID, CorrelationID: a.CorrelationID,
		ReceivedAt: a.ReceivedAt, Reply: responder.Reply{Text: text},
	})
	if err != nil {
		return s.fail(ctx, t, err)
	}
	if err := s.deps.Conversations.AddOutbound(ctx, a.ConversationID, store.Message{
		MessageID: key, Type: "text", Text: text, ActionID: a.ActionID, Event: "action_" + ar.State,
		CorrelationID: a.CorrelationID, InboundEventID: a.InboundEventID,
		Replies: []store.Reply{{IdempotencyKey: key, Body: text, GraphMessageID: graphID}},
	}); err != nil {
		return s.fail(ctx, t, err)
	}
	return outcome{kind: actionDone, action: ar}
}

// validateAction checks an action task and decodes its request.
func validateAction(a tasks.Action) (action.Request, error) {
	var errs []error
	for _, f := range []struct{ name, v string }{
		{"action_id", a.ActionID}, {"tenant_id", a.TenantID}, {"conversation_id", a.ConversationID},
		{"phone_number_id", a.PhoneNumberID}, {"to", a.To}, {"message_id", a.MessageID},
	} {
		if f.v == "" {
			errs = append(errs, fmt.Errorf("%s is empty", f.name))
		}
	}
	var req action.Request
	if len(a.Request) == 0 {
		errs = append(errs, errors.New("request is empty"))
	} else if err := json.Unmarshal(a.Request, &req); err != nil {
		errs = append(errs, fmt.Errorf("request: %w", err))
	} else if req.ActionID != a.ActionID {
		errs = append(errs, errors.New("request.action_id differs from action_id"))
	}
	return req, errors.Join(errs...)
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// isUnreadableSecret reports a ciphertext no retry can open: sealed for another key or place,
// or damaged.
func isUnreadableSecret(err error) bool {
	return errors.Is(err, secrets.ErrNotAuthentic) || errors.Is(err, secrets.ErrKeyKind) || errors.Is(err, secrets.ErrMalformed)
}
