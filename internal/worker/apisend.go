package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/wapipe/wapipe/internal/graph"
	"github.com/wapipe/wapipe/internal/httpjson"
	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/internal/responder"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/tenant"
	"github.com/wapipe/wapipe/tasks"
)

// CustomerServiceWindow is how long after a contact's last message free-form messages may be
// sent to them; outside it only templates go out (Meta answers 131047 otherwise).
const CustomerServiceWindow = 24 * time.Hour

// ReasonOutsideWindow is the recorded reason of a message that could not be sent because the
// contact's 24-hour window had closed (the api's 422 code too).
const ReasonOutsideWindow = "outside_customer_service_window"

// codeReengagement is Meta's 131047: more than 24 hours since the contact's last message.
const codeReengagement = 131047

// SendRecords are the records of sends that go out from their record alone (api sends, released
// parked sends), and the parking of a tenant's sends; *store.Sends implements it.
type SendRecords interface {
	GetSend(ctx context.Context, key string) (store.OutboundRecord, error)
	Park(ctx context.Context, p store.ParkRequest) (store.ParkResult, error)
	ReleaseDone(ctx context.Context, key string, gen int64) error
}

// WindowReader reads the conversation that holds a contact's last_inbound_at;
// *store.ConversationStore implements it.
type WindowReader interface {
	Get(ctx context.Context, conversationID string) (store.Conversation, error)
}

// handleProcessSend sends one message from its record: a send made through the api service or a
// parked send released. Its steps: read the task and the record, check the tenant (a tenant that
// needs a new token parks the send), the 24-hour window, begin the send, send, settle.
func (s *Server) handleProcessSend() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body tasks.Send
		t, o, ok, err := s.readTask(r, tasks.ProcessSendPath, &body)
		if !ok {
			respond(w, o)
			return
		}
		body.CorrelationID = t.correlate(body.CorrelationID)
		t.idempotencyKey, t.tenantID = body.IdempotencyKey, body.TenantID
		if err == nil && (!tasks.IsIdempotencyKey(body.IdempotencyKey) || body.TenantID == "") {
			err = errors.New("idempotency_key or tenant_id is missing or malformed")
		}
		if err != nil {
			respond(w, s.deadLetter(r.Context(), t, permanentFailure(errors.Join(errors.New("malformed send task"), err))))
			return
		}
		ctx, _ := logging.With(r.Context(), "correlation_id", body.CorrelationID, "idempotency_key", body.IdempotencyKey,
			"tenant_id", body.TenantID, "release_gen", body.ReleaseGen)
		o, parked := s.processSend(ctx, t, body)
		if parked {
			httpjson.Write(w, http.StatusOK, map[string]any{"status": store.OutboundParked})
			return
		}
		respond(w, o)
	})
}

// processSend runs the steps of handleProcessSend. parked reports that the send is parked.
func (s *Server) processSend(ctx context.Context, t *task, body tasks.Send) (o outcome, parked bool) {
	logger := logging.FromContext(ctx)
	key := body.IdempotencyKey
	out := tasks.Outbound{IdempotencyKey: key, TenantID: body.TenantID}
	if s.deps.Sends == nil {
		return s.fail(ctx, t, errors.New("process_send: no send records configured")), false
	}
	rec, err := s.deps.Sends.GetSend(ctx, key)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return s.deadLetter(ctx, t, permanentFailure(fmt.Errorf("no send record %s", key))), false
	case err != nil:
		return s.fail(ctx, t, err), false
	case rec.TenantID != body.TenantID:
		return s.deadLetter(ctx, t, permanentFailure(fmt.Errorf("send record %s is not tenant %s's", key, body.TenantID))), false
	}
	if body.ReleaseGen > 0 {
		// Once the release's task settles the send, a later release need not enqueue it again;
		// until then a release run again re-enqueues it (a retry exhausted leaves it pending).
		defer func() {
			if o.kind == sent || o.kind == refusedByMeta || o.kind == settled || o.kind == deadLettered || parked {
				if err := s.deps.Sends.ReleaseDone(ctx, key, body.ReleaseGen); err != nil {
					logger.WarnContext(ctx, "release mark not cleared", "event", "send_release_mark_failed", "error", err)
				}
			}
		}()
	}
	if rec.State == store.OutboundParked {
		// A task from before the park: the release makes a task of its own.
		return outcome{}, true
	}
	var m graph.Message
	if err := json.Unmarshal([]byte(rec.Message), &m); err != nil || m.Type == "" {
		return s.abandon(ctx, t, out, "malformed_message", fmt.Errorf("the record's message is not a Graph message: %v", err)), false
	}
	tn, err := s.deps.Tenants.Tenant(ctx, rec.TenantID)
	if errors.Is(err, store.ErrNotFound) {
		return s.abandon(ctx, t, out, "tenant_not_found", fmt.Errorf("tenant %s does not exist (any more)", rec.TenantID)), false
	}
	if err != nil {
		return s.fail(ctx, t, fmt.Errorf("read tenant %s: %w", rec.TenantID, err)), false
	}
	// The tenant as cached may be a few seconds old: parking reads it afresh, and when it is ok
	// after all (a new token) the send goes on with the fresh record.
	if tn.AuthStatus == store.AuthNeedsReauth {
		res, err := s.parkSend(ctx, tn, rec, m, nil)
		if err != nil {
			return s.fail(ctx, t, err), false
		}
		if res.Parked {
			return outcome{}, true
		}
		tn = res.Tenant
	}
	return s.sendRecord(ctx, t, tn, rec, m)
}

// sendRecord sends the record's message m for tenant tn, once: check the window, begin the send,
// send, settle. A Graph auth error parks it, unless a new token was set meanwhile: then it is
// sent once more, at once, with the new token.
func (s *Server) sendRecord(ctx context.Context, t *task, tn store.TenantRecord, rec store.OutboundRecord, m graph.Message) (o outcome, parked bool) {
	logger := logging.FromContext(ctx)
	key := rec.IdempotencyKey
	out := tasks.Outbound{IdempotencyKey: key, TenantID: rec.TenantID}
	if len(tn.AccessToken) == 0 {
		if err := s.deps.Outbound.MarkFailed(ctx, key, 0, "no_token: the tenant has no access token"); err != nil {
			return s.fail(ctx, t, err), false
		}
		logger.ErrorContext(ctx, "send refused: the tenant has no access token", "event", "send_failed", "reason", "no_token")
		return outcome{kind: refusedByMeta}, false
	}
	m, reason, err := s.fitWindow(ctx, tn.Tenant, rec.PhoneNumberID, rec.To, m, rec.Source != store.SourceAPI, time.Time{})
	if err != nil {
		return s.fail(ctx, t, err), false
	}
	if reason != "" {
		return s.refuseOutsideWindow(ctx, key, reason), false
	}
	for round := 0; ; round++ {
		o, retryWith, parked := s.sendOnce(ctx, t, out, tn, m)
		if retryWith == nil || round > 0 {
			return o, parked
		}
		tn = *retryWith
	}
}

// sendOnce is one send of sendRecord. retryWith is set when the token was refused but the
// tenant has a newer one: the record is pending again and the caller may send with it.
func (s *Server) sendOnce(ctx context.Context, t *task, out tasks.Outbound, tn store.TenantRecord, m graph.Message) (o outcome, retryWith *store.TenantRecord, parked bool) {
	logger := logging.FromContext(ctx)
	key := out.IdempotencyKey
	dec, rec, err := s.deps.Outbound.BeginSend(ctx, store.OutboundRecord{IdempotencyKey: key})
	if err != nil {
		return s.fail(ctx, t, err), nil, false
	}
	switch dec {
	case store.AlreadyDone:
		logger.InfoContext(ctx, "send already settled: not sending again", "event", "send_duplicate", "state", rec.State)
		return outcome{kind: settled, record: rec}, nil, rec.State == store.OutboundParked
	case store.AwaitReconcile:
		if s.isLastAttempt(t) {
			return s.outcomeUnknown(ctx, t, out, rec), nil, false
		}
		return retryLater("awaiting_reconciliation", 0), nil, false
	case store.OutcomeUnknown:
		return s.outcomeUnknown(ctx, t, out, rec), nil, false
	}
	token, err := s.deps.Tokens.Token(ctx, tn)
	if err != nil {
		s.markRetry(ctx, key, temporaryFailure(err, 0), true)
		return s.fail(ctx, t, fmt.Errorf("open the access token of %s: %w", tn.Tenant.ID, err)), nil, false
	}
	graphID, err := s.deps.Sender.Send(ctx, token, rec.PhoneNumberID, rec.To, responder.Reply{Message: &m}, key, "")
	if err != nil {
		if classifySend(err).kind == refusedAuth {
			res, perr := s.parkSend(ctx, tn, rec, m, err)
			switch {
			case perr != nil:
				s.markRetry(ctx, key, temporaryFailure(perr, 0), true)
				return s.fail(ctx, t, perr), nil, false
			case res.Parked:
				return outcome{}, nil, true
			}
			s.markRetry(ctx, key, temporaryFailure(errors.New("token refused, but the tenant has a newer one"), 0), true)
			fresh := res.Tenant
			return retryLater("tenant_reauthorized", 0), &fresh, false
		}
		if classifySend(err).code == codeReengagement {
			return s.refuseOutsideWindow(ctx, key, ReasonOutsideWindow+": Meta answered 131047"), nil, false
		}
		return s.settleFailure(ctx, t, out, err), nil, false
	}
	if _, err := s.deps.Outbound.MarkSent(ctx, key, graphID, false); err != nil {
		logger.ErrorContext(ctx, "message sent but record not updated: the status webhook will reconcile it",
			"event", "send_record_failed", "error", err)
	}
	logger.InfoContext(ctx, "message sent", "event", "send_sent", logging.MessageID(graphID), "message_type", m.Type,
		"attempt", rec.Attempts)
	return outcome{kind: sent, messageID: graphID}, nil, false
}

// refuseOutsideWindow records a message that the contact's closed window refuses: failed with
// Meta's 131047 and the reason, not retried.
func (s *Server) refuseOutsideWindow(ctx context.Context, key, reason string) outcome {
	if err := s.deps.Outbound.MarkFailed(ctx, key, codeReengagement, reason); err != nil {
		return retryLater("record_not_updated", 0)
	}
	logging.FromContext(ctx).WarnContext(ctx, "not sent: outside the customer service window", "event", "send_outside_window")
	return outcome{kind: refusedByMeta, code: codeReengagement}
}

// parkSend parks the send seed of tenant tn, carrying message m: seed names it (IdempotencyKey,
// TenantID, PhoneNumberID, To). With authErr (a Graph auth error the send met with tn's token)
// the tenant is first marked needs_reauth, once: the first send to meet the error logs it at
// ERROR, the others park quietly. Nothing is parked when the tenant is ok after all (a new token
// was set since tn was read): the caller sends again with res.Tenant, the tenant as now stored. A parked send is
// released, once, by a new token (operator.Tenants.SetToken, Embedded Signup), which enqueues a
// process_send task for it.
func (s *Server) parkSend(ctx context.Context, tn store.TenantRecord, seed store.OutboundRecord, m graph.Message, authErr error) (store.ParkResult, error) {
	logger := logging.FromContext(ctx)
	body, err := json.Marshal(m)
	if err != nil {
		return store.ParkResult{}, fmt.Errorf("encode the parked message: %w", err)
	}
	seed.Message, seed.MessageType = string(body), m.Type
	req := store.ParkRequest{Seed: seed}
	if authErr != nil {
		req.AuthError, req.TokenSetAt = authErr.Error(), tn.TokenSetAt
		// No further call with this token from this instance, from now on: its cached tenant
		// may still say ok for a few seconds.
		s.deps.Tenants.TokenRefused(tn)
	}
	res, err := s.deps.Sends.Park(ctx, req)
	if err != nil {
		return res, err
	}
	if res.Marked {
		logger.ErrorContext(ctx, "the tenant's access token was refused: its sends are parked until a new token is set (wapipe tenants set-token or connect-link)",
			"event", "tenant_needs_reauth", "error", authErr)
	}
	if res.Parked {
		logger.WarnContext(ctx, "send parked: the tenant needs a new access token", "event", "send_parked", "message_type", m.Type)
	}
	return res, nil
}

// parkReply is the token lifecycle of a reply (process_outbound): before the send (sendErr nil)
// it parks the reply of a tenant known to need a new token (when the tenant turns out to have a
// new one, from.token becomes it and the send goes on); after a send the Graph API refused for
// the token (sendErr) it marks the tenant and parks the reply. ok reports that o ends the
// attempt (parked, or retried because the tenant has a new token); the single-tenant default is
// never parked.
func (s *Server) parkReply(ctx context.Context, out tasks.Outbound, from *sender, reply responder.Reply, sendErr error) (o outcome, ok bool) {
	if s.deps.Sends == nil || out.TenantID == "" || (sendErr != nil && classifySend(sendErr).kind != refusedAuth) {
		return outcome{}, false
	}
	tn, err := s.deps.Tenants.Tenant(ctx, out.TenantID)
	if err != nil || (sendErr == nil && tn.AuthStatus != store.AuthNeedsReauth) {
		return outcome{}, false
	}
	replyTo := ""
	if reply.Quote {
		replyTo = out.Message.ID
	}
	seed := store.OutboundRecord{IdempotencyKey: out.IdempotencyKey, TenantID: out.TenantID, PhoneNumberID: out.PhoneNumberID, To: out.To}
	res, err := s.parkSend(ctx, tn, seed, replyMessage(reply, replyTo), sendErr)
	if err == nil && !res.Parked && sendErr == nil {
		// The cache was a few seconds behind a new token: send with it now.
		if token, terr := s.deps.Tokens.Token(ctx, res.Tenant); terr == nil {
			from.token = token
			return outcome{}, false
		}
	}
	if err != nil || !res.Parked {
		s.markRetry(ctx, out.IdempotencyKey, temporaryFailure(errors.New("reply not parked: send again"), 0), true)
		return retryLater("tenant_reauthorized", 0), true
	}
	return outcome{kind: settled, record: store.OutboundRecord{State: store.OutboundParked}}, true
}

// replyMessage is the Graph message of reply, quoting replyTo when set, as GraphSender sends it
// (without the recipient and the callback data, which the send adds).
func replyMessage(reply responder.Reply, replyTo string) graph.Message {
	var m graph.Message
	if reply.Message != nil {
		m = *reply.Message
	} else {
		m = graph.Message{Type: "text", Text: &graph.Text{Body: reply.Text}}
	}
	if replyTo != "" {
		m.Context = &graph.Context{MessageID: replyTo}
	}
	return m
}

// fitWindow checks m against the contact's 24-hour customer service window: a template always
// goes; a free-form message goes while the window is open (the conversation's last_inbound_at,
// or lastInbound when later, is under 24 hours old). Outside it, with reengage and a tenant that
// has a templates.reengage, the template replaces m; otherwise reason says why nothing is sent.
// The conversation path calls it with the inbound message's time as lastInbound.
func (s *Server) fitWindow(ctx context.Context, tn *tenant.Tenant, phoneNumberID, to string, m graph.Message, reengage bool, lastInbound time.Time) (graph.Message, string, error) {
	if m.Type == "template" || s.deps.Windows == nil {
		return m, "", nil
	}
	conv, err := s.deps.Windows.Get(ctx, store.ConversationID(tn.ID, phoneNumberID, to))
	switch {
	case errors.Is(err, store.ErrNotFound):
	case err != nil:
		return m, "", fmt.Errorf("read the conversation's window: %w", err)
	case conv.LastInboundAt.After(lastInbound):
		lastInbound = conv.LastInboundAt
	}
	if !lastInbound.IsZero() && s.deps.Now().Sub(lastInbound) < CustomerServiceWindow {
		return m, "", nil
	}
	if reengage && tn.Templates.Reengage != nil {
		tpl := tn.Templates.Reengage
		logging.FromContext(ctx).InfoContext(ctx, "outside the customer service window: sending the reengage template", "event", "send_reengage")
		return graph.Message{Type: "template", Template: &graph.Template{Name: tpl.Name, Language: graph.Language{Code: tpl.Language}}}, "", nil
	}
	return m, ReasonOutsideWindow + ": no message from the contact in the last 24 hours", nil
}
