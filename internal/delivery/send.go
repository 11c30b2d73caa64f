package delivery

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/wapipe/wapipe/internal/budget"
	"github.com/wapipe/wapipe/internal/contact"
	"github.com/wapipe/wapipe/internal/graph"
	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/internal/outgoing"
	"github.com/wapipe/wapipe/internal/store"
)

// CodeReengagement is Meta's 131047: more than 24 hours since the contact's last message.
const CodeReengagement = 131047

// fitWindow checks the message against the contact's 24-hour window, by the policy: a template
// always goes; a free-form message goes while the window is open (the conversation's
// last_inbound_at, or req.LastInbound when later: store.WindowOpen). Outside it the tenant's
// templates.reengage replaces it (WindowReengage), or it is refused.
func (d *Deliverer) fitWindow(ctx context.Context, req Request, pol Policy, fr from, out wire) (wire, Result, bool) {
	if pol.Window == WindowUnchecked || fr.tenant == nil || out.isTemplate() || d.Windows == nil {
		return out, Result{}, true
	}
	last := req.LastInbound
	convID := req.ConversationID
	if convID == "" {
		// A send that names no conversation: a record made before records did (before contacts),
		// whose contact's conversation, found by phone or BSUID, holds the window it was
		// accepted in.
		id, err := d.conversationOf(ctx, req)
		if err != nil {
			return out, d.retry(ctx, req, err, 0, true), false
		}
		convID = id
	}
	var conv store.Conversation
	err := store.ErrNotFound
	if convID != "" {
		conv, err = d.Windows.Get(ctx, convID)
	}
	switch {
	case errors.Is(err, store.ErrNotFound):
	case err != nil:
		return out, d.retry(ctx, req, fmt.Errorf("read the conversation's window: %w", err), 0, true), false
	case conv.LastInboundAt.After(last):
		last = conv.LastInboundAt
	}
	open := store.WindowOpen(last, d.now())
	if open {
		return out, Result{}, true
	}
	// Outside the window what goes instead is a template wapipe sends on its own, which Meta
	// charges: not past the tenant's budget.
	if over, err := d.overBudget(ctx, fr); err != nil {
		return out, d.retry(ctx, req, err, 0, true), false
	} else if over && (req.Fallback != nil || pol.Window == WindowReengage && fr.tenant.Tenant.Templates.Reengage != nil) {
		return d.skip(ctx, req, out, ReasonBudgetExhausted, "the tenant's month is past its budget: the template is not sent")
	}
	if pol.Window == WindowFallback {
		return d.fallback(ctx, req, out)
	}
	if tpl, ok := d.reengage(ctx, req, pol, fr, conv.ContactName); ok {
		return tpl, Result{}, true
	}
	return out, d.refuse(ctx, req, pol, CodeReengagement, ReasonOutsideWindow, errors.New("no message from the contact in the last 24 hours")), false
}

// ConversationLocator finds the conversation of a person on a tenant's number;
// *store.ConversationStore implements it. When Deliverer.Windows implements it too, a send that
// names no conversation (a record made before records did) has its window read from the
// conversation of its contact.
type ConversationLocator interface {
	ConversationOf(ctx context.Context, tenantID, phoneNumberID string, id contact.Identity) (string, bool, error)
}

// conversationOf is the conversation of req's contact on its number, "" when the tenant has none
// for them or Windows cannot locate one.
func (d *Deliverer) conversationOf(ctx context.Context, req Request) (string, error) {
	l, ok := d.Windows.(ConversationLocator)
	if !ok || req.TenantID == "" || (req.To == "" && req.Recipient == "") {
		return "", nil
	}
	id := contact.Identity{WaID: req.To}
	if contact.ValidParentUserID(req.Recipient) {
		id.ParentUserID = req.Recipient
	} else {
		id.UserID = req.Recipient
	}
	conv, _, err := l.ConversationOf(ctx, req.TenantID, req.PhoneNumberID, id)
	if err != nil {
		return "", fmt.Errorf("find the conversation of the send's contact: %w", err)
	}
	return conv, nil
}

// fallback replaces a message outside the contact's window by the policy WindowFallback: with
// the request's Fallback (a notification's templates.notify), never the reengage template, or
// with nothing: the record says skipped and the log says why, with the contact's keyed hash
// only. When ok is false, res ends the delivery.
func (d *Deliverer) fallback(ctx context.Context, req Request, out wire) (wire, Result, bool) {
	logger := logging.FromContext(ctx)
	if req.Fallback != nil {
		logger.InfoContext(ctx, "outside the customer service window: sending the fallback template",
			"event", "send_fallback_template", "kind", req.Kind.String())
		return wire{reply: outgoing.Message{Graph: req.Fallback}}, Result{}, true
	}
	return d.skip(ctx, req, out, ReasonOutsideWindow, "outside the contact's 24-hour window and no template for it: not sent")
}

// skip ends req as skipped for reason: the record's state, and a log line saying why with the
// contact's keyed hash only.
func (d *Deliverer) skip(ctx context.Context, req Request, out wire, reason, why string) (wire, Result, bool) {
	if err := d.Records.MarkSkipped(ctx, req.Key); err != nil {
		return out, Result{Status: Retry, Err: err, Class: "temporary"}, false
	}
	logging.FromContext(ctx).WarnContext(ctx, why, "event", req.Kind.String()+"_skipped", "reason", reason, "to_hash", d.toHash(req))
	return out, Result{Status: Skipped, Reason: reason}, false
}

// overBudget reports whether fr's tenant has spent its month's budget (none: never).
func (d *Deliverer) overBudget(ctx context.Context, fr from) (bool, error) {
	if d.Spending == nil || fr.tenant == nil {
		return false, nil
	}
	return budget.Exhausted(ctx, d.Spending, fr.tenant.Tenant, d.now())
}

// reengage is the tenant's reengage template, when the policy sends it and the tenant has one;
// name, when known, is the contact's (reengage.go).
func (d *Deliverer) reengage(ctx context.Context, req Request, pol Policy, fr from, name string) (wire, bool) {
	if pol.Window != WindowReengage || fr.tenant == nil || fr.tenant.Tenant.Templates.Reengage == nil {
		return wire{}, false
	}
	tpl := fr.tenant.Tenant.Templates.Reengage
	logging.FromContext(ctx).InfoContext(ctx, "outside the customer service window: sending the reengage template", "event", "send_reengage")
	if needsContactName(tpl) {
		name = d.contactName(ctx, req, fr.tenant.Tenant, name)
	}
	m := graph.Message{Type: "template", Template: reengageTemplate(tpl, name)}
	return wire{reply: outgoing.Message{Graph: &m}}, true
}

// refuse fails the record for good with reason and Meta's code. A deliberate refusal (outside
// the window with no template for it, a contact who opted out) is only the record's state; any
// other is a dead letter, of the record or of the task by the policy.
func (d *Deliverer) refuse(ctx context.Context, req Request, pol Policy, code int, reason string, err error) Result {
	if reason != ReasonOutsideWindow && reason != ReasonOptedOut {
		return d.giveUp(ctx, req, pol, Refused, reason, code, err)
	}
	if merr := d.Records.MarkFailed(ctx, req.Key, code, reason, err.Error()); merr != nil {
		// Without the failed record a retry would try again; let it.
		return Result{Status: Retry, Err: merr, Code: code, Class: "temporary"}
	}
	logging.FromContext(ctx).WarnContext(ctx, "not sent: refused on purpose", "event", "outbound_refused",
		"meta_error_code", code, "reason", reason, "kind", req.Kind.String())
	return Result{Status: Refused, Reason: reason, Code: code, Err: err, Class: reason}
}

// parkIfNeedsReauth parks the send of a tenant known to need a new token. When the tenant turns
// out to have a new one (the cache was a few seconds behind), fr takes it and the send goes on.
func (d *Deliverer) parkIfNeedsReauth(ctx context.Context, req Request, fr *from, out wire) (Result, bool) {
	if d.Sends == nil || fr.tenant == nil || fr.tenant.AuthStatus != store.AuthNeedsReauth {
		return Result{}, true
	}
	res, err := d.park(ctx, req, *fr.tenant, out, nil)
	if err != nil {
		return d.retry(ctx, req, err, 0, true), false
	}
	if res.Parked {
		return Result{Status: Parked}, false
	}
	token, err := d.Tokens.Token(ctx, res.Tenant)
	if err != nil {
		return d.retry(ctx, req, err, 0, true), false
	}
	fresh := res.Tenant
	fr.tenant, fr.token = &fresh, token
	return Result{}, true
}

// park parks the send of tenant tn. With authErr (a Graph auth error the send met with tn's
// token) the tenant is first marked needs_reauth, once: the first send to meet the error logs it
// at ERROR, the others park quietly. Nothing is parked when the tenant is ok after all (a new
// token was set since tn was read): res.Tenant is the tenant as now stored. A parked send is
// released, once, by a new token, which enqueues a process_send task for it.
func (d *Deliverer) park(ctx context.Context, req Request, tn store.TenantRecord, out wire, authErr error) (store.ParkResult, error) {
	logger := logging.FromContext(ctx)
	m := out.message()
	body, err := json.Marshal(m)
	if err != nil {
		return store.ParkResult{}, fmt.Errorf("encode the parked message: %w", err)
	}
	seed := store.OutboundRecord{IdempotencyKey: req.Key, TenantID: req.TenantID, PhoneNumberID: req.PhoneNumberID, To: req.To,
		Recipient: req.Recipient, ConversationID: req.ConversationID, Message: string(body), MessageType: m.Type}
	p := store.ParkRequest{Seed: seed}
	if authErr != nil {
		p.AuthError, p.TokenSetAt = authErr.Error(), tn.TokenSetAt
		// No further call with this token from this instance, from now on: its cached tenant
		// may still say ok for a few seconds.
		d.Tenants.TokenRefused(tn)
	}
	res, err := d.Sends.Park(ctx, p)
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

// TokenRefused marks tenant tn needs_reauth after a Graph call other than a send (an upload, a
// template call, a media download for the console) met authErr with tn's token, so that health,
// the console and /v1/messages say so and its sends park, as after a refused send. The first to
// mark it logs tenant_needs_reauth at ERROR. Without parking (Sends nil) it only stops this
// instance from using the token.
func (d *Deliverer) TokenRefused(ctx context.Context, tn store.TenantRecord, authErr error) error {
	d.Tenants.TokenRefused(tn)
	if d.Sends == nil || authErr == nil {
		return nil
	}
	marked, err := d.Sends.MarkNeedsReauth(ctx, tn.Tenant.ID, authErr.Error(), tn.TokenSetAt)
	if err != nil {
		return err
	}
	if marked {
		logging.FromContext(ctx).ErrorContext(ctx, "the tenant's access token was refused: its sends are parked until a new token is set (wapipe tenants set-token or connect-link)",
			"event", "tenant_needs_reauth", "error", authErr)
	}
	return nil
}

// send sends and settles. A reply beside which the inbound message is marked read waits for the
// mark (bounded by its timeout), so no goroutine outlives the request.
func (d *Deliverer) send(ctx context.Context, req Request, pol Policy, fr from, out wire, rec store.OutboundRecord) (Result, bool) {
	start := d.now()
	readDone := make(chan bool, 1)
	switch {
	case !req.MarkRead || req.InboundMessageID == "":
		readDone <- false
	case rec.ReadMarked:
		readDone <- true
	default:
		go func() {
			readDone <- d.MarkRead(context.WithoutCancel(ctx), fr.token, req.PhoneNumberID, req.InboundMessageID)
		}()
	}
	graphID, err := d.Sender.Send(ctx, fr.token, req.PhoneNumberID, req.address(), out.reply, req.Key, out.replyTo)
	readMarked := <-readDone
	if err != nil && pol.Window == WindowFallback && classify(err).code == CodeReengagement && !out.isTemplate() {
		// Meta says the window closed: the fallback instead, once, or nothing.
		fb, res, ok := d.fallback(ctx, req, out)
		if !ok {
			return res, false
		}
		out = fb
		graphID, err = d.Sender.Send(ctx, fr.token, req.PhoneNumberID, req.address(), out.reply, req.Key, "")
	}
	if err != nil && classify(err).code == CodeReengagement && !out.isTemplate() {
		// Meta says the window closed: the reengage template instead, once.
		if tpl, ok := d.reengage(ctx, req, pol, fr, ""); ok {
			out = tpl
			graphID, err = d.Sender.Send(ctx, fr.token, req.PhoneNumberID, req.address(), out.reply, req.Key, "")
		}
	}
	if err != nil {
		return d.settleFailure(ctx, req, pol, fr, out, rec, err)
	}
	logger := logging.FromContext(ctx)
	if _, err := d.Records.MarkSent(ctx, req.Key, graphID, readMarked); err != nil {
		// Meta has the message; the status webhook that echoes the key will settle the
		// record. Reporting it sent stops a retry from sending it again.
		logger.ErrorContext(ctx, "sent but record not updated: the status webhook will reconcile it",
			"event", "outbound_record_failed", "error", err)
	}
	logger.InfoContext(ctx, "message sent", "event", "outbound_sent", logging.MessageID(graphID), "kind", req.Kind.String(),
		"attempt", rec.Attempts, "duration_ms", d.now().Sub(start).Milliseconds())
	return Result{Status: Sent, MessageID: graphID}, false
}

// settleFailure records a failed send by its classification and the policy: a token refusal
// parks a tenant's send; a closed window or another refusal fails it for good; anything else is
// retried (failed once the task has no attempt left).
func (d *Deliverer) settleFailure(ctx context.Context, req Request, pol Policy, fr from, out wire, rec store.OutboundRecord, err error) (Result, bool) {
	f := classify(err)
	if f.auth && fr.tenant != nil && d.Sends != nil {
		return d.parkRefused(ctx, req, pol, fr, out, err)
	}
	switch {
	case f.code == CodeReengagement:
		return d.refuse(ctx, req, pol, f.code, ReasonOutsideWindow, err), false
	case f.code == CodeOptedOut:
		return d.refuse(ctx, req, pol, f.code, ReasonOptedOut, err), false
	case f.refused || f.auth:
		res := d.refuse(ctx, req, pol, f.code, ReasonRefused, err)
		if res.Status == Refused {
			res.Class = f.class
		}
		return res, false
	case !f.definite:
		return d.sentUnknown(ctx, req, pol, out, err, f, rec), false
	}
	d.markRetry(ctx, req.Key, true, f.code, err)
	if req.LastAttempt {
		if pol.RecordDeadLetter {
			// Retries exhausted: the record is the dead letter, the conversation goes on.
			return d.giveUp(ctx, req, pol, Unsendable, ReasonRetriesExhausted, f.code, err), false
		}
		// The task will be kept as a dead letter: the record says failed, so a replay reopens it.
		if merr := d.Records.MarkFailed(ctx, req.Key, f.code, ReasonRetriesExhausted, err.Error()); merr != nil {
			logging.FromContext(ctx).ErrorContext(ctx, "record not marked failed", "event", "outbound_record_failed", "error", merr)
		}
	}
	logging.FromContext(ctx).WarnContext(ctx, "not sent: will retry", "event", "outbound_retry", "meta_error_code", f.code,
		"class", f.class, "outcome_known", true, "error", err)
	return Result{Status: Retry, Err: err, Code: f.code, RetryAfter: f.retryAfter, Class: f.class}, false
}

// sentUnknown records a send whose outcome is unknown (a timeout, a gateway's 5xx without
// Meta's error body): the record stays sending, with its message kept, and the next attempt
// waits for its status webhook (AwaitReconcile). On the last attempt the record holds the wait.
func (d *Deliverer) sentUnknown(ctx context.Context, req Request, pol Policy, out wire, err error, f sendFailure, rec store.OutboundRecord) Result {
	logger := logging.FromContext(ctx)
	logger.WarnContext(ctx, "outcome unknown: waiting for its status", "event", "outbound_retry", "meta_error_code", f.code,
		"class", f.class, "outcome_known", false, "error", err)
	if d.Unknowns == nil {
		d.markRetry(ctx, req.Key, false, f.code, err)
		return Result{Status: Retry, Err: err, Code: f.code, RetryAfter: f.retryAfter, Class: f.class}
	}
	stash := d.stashOf(ctx, req, &out)
	if merr := d.Unknowns.MarkUnknown(ctx, req.Key, f.code, err.Error(), stash); merr != nil {
		logger.WarnContext(ctx, "record not updated after a failed send", "event", "outbound_record_failed", "error", merr)
	} else if req.LastAttempt {
		if rec.Message == "" {
			rec.Message = stash.Message
		}
		rec.LastErrorCode, rec.LastError = int64(f.code), err.Error()
		return d.hold(ctx, req, pol, rec)
	}
	return Result{Status: Retry, Err: err, Code: f.code, RetryAfter: f.retryAfter, Class: f.class}
}

// parkRefused parks a tenant's send whose token Meta refused. When the tenant has a newer token
// already, the policy says whether to send again at once (resend) or retry the task.
func (d *Deliverer) parkRefused(ctx context.Context, req Request, pol Policy, fr from, out wire, err error) (Result, bool) {
	res, perr := d.park(ctx, req, *fr.tenant, out, err)
	switch {
	case perr != nil:
		return d.retry(ctx, req, perr, 0, true), false
	case res.Parked:
		return Result{Status: Parked}, false
	}
	d.markRetry(ctx, req.Key, true, 0, errors.New("token refused, but the tenant has a newer one"))
	if pol.Reauth == ReauthResend {
		return Result{}, true
	}
	return Result{Status: Retry, Reason: RetryTenantReauthorized}, false
}

// sendFailure is a send error, classified.
type sendFailure struct {
	// refused: Meta refused this message for good; auth: refused for the access token.
	refused, auth bool
	// definite: Meta answered, so nothing was sent and a retry may send at once. A timeout or a
	// network error leaves a send's outcome unknown.
	definite   bool
	code       int
	retryAfter time.Duration
	class      string
}

// classify reads a send error the way the contract asks: on Meta's error.code first, the HTTP
// status second (graph.Classify), then on whether Meta's answer proves nothing was sent.
func classify(err error) sendFailure {
	f := sendFailure{retryAfter: graph.RetryAfter(err)}
	k := graph.Classify(err)
	f.class = k.String()
	switch k {
	case graph.Throttled, graph.Temporary:
	case graph.Auth:
		f.auth = true
	default:
		f.refused = true
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
			f.refused, f.auth, f.class = false, false, "unreadable_success"
		}
	}
	if graph.NotSent(err) {
		// No connection was ever made (DNS, dial, TLS handshake): nothing reached Meta, so the
		// retry may send at once instead of waiting out the reconcile window.
		f.definite, f.class = true, "not_sent"
	}
	return f
}

// GraphSender sends messages with the Graph API client.
type GraphSender struct{ c *graph.Client }

// NewGraphSender adapts c to Sender.
func NewGraphSender(c *graph.Client) *GraphSender { return &GraphSender{c: c} }

// Send sends reply to the person at `to` with token: by phone when to has one, else by
// "recipient" (a BSUID) and no "to".
func (g *GraphSender) Send(ctx context.Context, token, phoneNumberID string, to contact.Address, reply outgoing.Message, callbackData, replyTo string) (string, error) {
	m := wire{reply: reply, replyTo: replyTo}.message()
	m.To, m.Recipient = to.To, ""
	if to.To == "" {
		m.Recipient = to.Recipient
	}
	m.BizOpaqueCallbackData = callbackData
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

// ShowTyping marks the message read with the typing indicator, with the tenant's token.
func (g *GraphSender) ShowTyping(ctx context.Context, token, phoneNumberID, messageID string) error {
	return g.c.WithToken(token).ShowTyping(ctx, phoneNumberID, messageID)
}
