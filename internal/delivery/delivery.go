package delivery

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/wapipe/wapipe/internal/contact"
	"github.com/wapipe/wapipe/internal/graph"
	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/internal/outgoing"
	"github.com/wapipe/wapipe/internal/secrets"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/pricing"
)

// Records are the outbound records a send begins and settles; *store.Outbound implements it.
type Records interface {
	BeginSend(ctx context.Context, seed store.OutboundRecord) (store.Decision, store.OutboundRecord, error)
	MarkSent(ctx context.Context, key, graphMessageID string, readMarked bool) (store.OutboundRecord, error)
	MarkSkipped(ctx context.Context, key string) error
	MarkFailed(ctx context.Context, key string, code int, reason, msg string) error
	MarkRetry(ctx context.Context, key string, definite bool, code int, msg string) error
}

// Parker parks the sends of a tenant that needs a new token, and reads and releases the sends
// that go out from their record alone; *store.Sends implements it.
type Parker interface {
	GetSend(ctx context.Context, key string) (store.OutboundRecord, error)
	Park(ctx context.Context, p store.ParkRequest) (store.ParkResult, error)
	ReleaseDone(ctx context.Context, key string, gen int64) error
	MarkNeedsReauth(ctx context.Context, tenantID, authErr string, tokenSetAt time.Time) (bool, error)
}

// Sender talks to the Graph API; GraphSender adapts the graph client to it. Each call carries
// the access token of the tenant that owns the business number.
type Sender interface {
	// Send sends reply to the person at `to` (a phone, or a BSUID as recipient) from the
	// business number, with callbackData as biz_opaque_callback_data and replyTo (when not
	// empty) as the quoted message. It returns Meta's message id.
	Send(ctx context.Context, token, phoneNumberID string, to contact.Address, reply outgoing.Message, callbackData, replyTo string) (string, error)
	MarkRead(ctx context.Context, token, phoneNumberID, messageID string) error
	// ShowTyping marks the message read and shows the typing indicator.
	ShowTyping(ctx context.Context, token, phoneNumberID, messageID string) error
}

// Tenants gives a tenant by id as of a few seconds ago, and hears of a refused token; the
// worker's tenant cache implements it.
type Tenants interface {
	Tenant(ctx context.Context, id string) (store.TenantRecord, error)
	TokenRefused(rec store.TenantRecord)
}

// Tokens opens a tenant's access token; the worker's token cache implements it.
type Tokens interface {
	Token(ctx context.Context, rec store.TenantRecord) (string, error)
}

// Windows reads the conversation that holds a contact's last_inbound_at (Request
// ConversationID); *store.ConversationStore implements it.
type Windows interface {
	Get(ctx context.Context, conversationID string) (store.Conversation, error)
}

// Deliverer sends messages exactly once. Records, Sender and Tenants are required; without
// Sends nothing is parked (a token refusal is a refusal), without Windows no window is read.
type Deliverer struct {
	Records Records
	Sends   Parker
	Sender  Sender
	Tenants Tenants
	Tokens  Tokens
	Windows Windows
	// Hasher keys the record's to_hash.
	Hasher *logging.Hasher
	Now    func() time.Time
	// MarkReadTimeout bounds the best-effort mark-as-read beside a reply; 5 s when zero.
	MarkReadTimeout time.Duration
	// Unknowns keep the sends of unknown outcome (evidence, hold, resend) and the messages of
	// records given up; DeadLetters the records' own dead letters (Policy.RecordDeadLetter).
	// Without them an unknown outcome past the reconcile window is given up at once, and a
	// reply given up is only failed.
	Unknowns    Unknowns
	DeadLetters DeadLetters
	// MaxUnknownWait caps the wait held on a record (UNKNOWN_OUTCOME_MAX_WAIT);
	// DefaultMaxUnknownWait when zero.
	MaxUnknownWait time.Duration
	// ResendConfirm is how long a resend the evidence decided waits before it goes, for a status
	// held up behind the record to land (longer than the inbound queue's backoff);
	// DefaultResendConfirm when zero.
	ResendConfirm time.Duration
	// Spending says whether a tenant's month is past its budget, when the templates wapipe
	// sends on its own then wait; without it they are not checked.
	Spending Spending
}

// Spending reads a tenant's month's spending; *store.Guard implements it.
type Spending interface {
	Spent(ctx context.Context, tenantID, period string) (pricing.Amount, error)
}

// Request is one message to send under its record Key.
type Request struct {
	Kind Kind
	Key  string
	// TenantID sends for the tenant with its token; "" is the single-tenant default, which sends
	// with Token.
	TenantID      string
	Token         string
	PhoneNumberID string
	// To is the contact's phone; Recipient its BSUID (or parent BSUID), used when To is empty
	// (contact.Address): a BSUID never goes in To.
	To        string
	Recipient string
	// ConversationID is the contact's conversation on the number ("" when they have none):
	// its last_inbound_at is the 24-hour window, its contact name the template's.
	ConversationID string
	// InboundMessageID is the message answered ("" for none): quoted when the reply asks to, and
	// marked read with MarkRead.
	InboundMessageID string
	InboundEventID   string
	CorrelationID    string
	ReceivedAt       time.Time
	// Reply is the message; Compose, when set, is asked for it once the send has begun (an
	// empty reply is skipped). An error of Compose is retried unless it is Unsendable's.
	Reply   outgoing.Message
	Compose func(ctx context.Context) (outgoing.Message, error)
	// Fallback replaces the message outside the contact's 24-hour window when the policy's
	// window rule is WindowFallback (a notification's templates.notify); nil skips it there.
	Fallback *graph.Message
	// LastInbound is the Meta time of the message answered: the 24-hour window runs from it, or
	// from the conversation's last_inbound_at when later.
	LastInbound time.Time
	// MarkRead marks InboundMessageID read beside the send, unless the record says it is.
	MarkRead bool
	// LastAttempt: the task that sends will not be retried after this attempt.
	LastAttempt bool
	// ReleaseGen is a released parked send's generation: once settled, the release is done.
	ReleaseGen int64
}

// from is who sends: a tenant with its token, or the single-tenant default.
type from struct {
	tenant *store.TenantRecord
	// token is the Graph API access token, in clear: never log it.
	token string
}

// unsendableError marks a cause no retry fixes until an operator acts, with its reason code.
type unsendableError struct {
	reason string
	err    error
}

func (e *unsendableError) Error() string { return e.err.Error() }
func (e *unsendableError) Unwrap() error { return e.err }

// NotSendable marks err as a cause no retry fixes (a Compose that cannot build the message).
func NotSendable(reason string, err error) error { return &unsendableError{reason: reason, err: err} }

func (d *Deliverer) now() time.Time {
	if d.Now == nil {
		return time.Now()
	}
	return d.Now()
}

// Deliver sends req.Reply (or Compose's) once under its record, by the policy of req.Kind:
// begin the send, find who sends, compose, fit the window, park if the tenant needs a new
// token, send, settle.
func (d *Deliverer) Deliver(ctx context.Context, req Request) (res Result) {
	pol := PolicyFor(req.Kind)
	if req.ReleaseGen > 0 {
		defer func() { d.releaseDone(ctx, req, res) }()
	}
	for round := 0; ; round++ {
		res, resend := d.attempt(ctx, req, pol)
		if !resend {
			return res
		}
		if round > 0 {
			return Result{Status: Retry, Reason: RetryTenantReauthorized}
		}
	}
}

// attempt is one begin → send → settle. resend: the token was refused but the tenant has a
// newer one and the policy sends again at once (the record is pending again).
func (d *Deliverer) attempt(ctx context.Context, req Request, pol Policy) (Result, bool) {
	rec, res, ok := d.begin(ctx, req, pol)
	if !ok {
		return res, false
	}
	fr, res, ok := d.from(ctx, req, pol)
	if !ok {
		return res, false
	}
	reply, res, ok := d.compose(ctx, req, pol)
	if !ok {
		return res, false
	}
	out := wire{reply: reply}
	if reply.Quote {
		out.replyTo = req.InboundMessageID
	}
	out, res, ok = d.fitWindow(ctx, req, pol, fr, out)
	if !ok {
		return res, false
	}
	if res, ok := d.parkIfNeedsReauth(ctx, req, &fr, out); !ok {
		return res, false
	}
	return d.send(ctx, req, pol, fr, out, rec)
}

// wire is what goes to Graph: the reply, quoting replyTo when set.
type wire struct {
	reply   outgoing.Message
	replyTo string
}

// message is the Graph message of o, as GraphSender sends it (without the recipient and the
// callback data, which the send adds).
func (o wire) message() graph.Message {
	var m graph.Message
	if o.reply.Graph != nil {
		m = *o.reply.Graph
	} else {
		m = graph.Message{Type: "text", Text: &graph.Text{Body: o.reply.Text}}
	}
	if o.replyTo != "" {
		m.Context = &graph.Context{MessageID: o.replyTo}
	}
	return m
}

func (o wire) isTemplate() bool {
	return o.reply.Graph != nil && o.reply.Graph.Type == "template"
}

// begin asks the record whether this attempt may send. When ok is false, res ends the delivery:
// the send is settled (or parked), or an earlier send's outcome is still unknown.
func (d *Deliverer) begin(ctx context.Context, req Request, pol Policy) (store.OutboundRecord, Result, bool) {
	logger := logging.FromContext(ctx)
	seed := store.OutboundRecord{
		IdempotencyKey: req.Key, InboundEventID: req.InboundEventID, MessageID: req.InboundMessageID,
		CorrelationID: req.CorrelationID, PhoneNumberID: req.PhoneNumberID, TenantID: req.TenantID,
		ReceivedAt: req.ReceivedAt,
	}
	seed.ToHash = d.toHash(req)
	dec, rec, err := d.Records.BeginSend(ctx, seed)
	if err != nil {
		return rec, Result{Status: Retry, Err: err, Class: "temporary"}, false
	}
	switch dec {
	case store.AlreadyDone:
		if rec.State == store.OutboundParked {
			return rec, Result{Status: Parked}, false
		}
		logger.InfoContext(ctx, "already settled: not sending again", "event", "outbound_duplicate", "state", rec.State)
		return rec, Result{Status: Settled, Record: rec}, false
	case store.AwaitReconcile:
		// An earlier attempt's send may have reached Meta; its status webhook will say so.
		// Sending now could send twice.
		if req.LastAttempt {
			// No retry is left to wait on: the record holds the wait (the sweep ends it).
			return rec, d.hold(ctx, req, pol, rec), false
		}
		logger.WarnContext(ctx, "awaiting reconciliation of an earlier send", "event", "outbound_awaiting_reconcile",
			"sending_since", rec.SendingSince)
		return rec, Result{Status: Retry, Reason: RetryAwaitingReconciliation}, false
	case store.OutcomeUnknown:
		return d.unknownOutcome(ctx, req, pol, rec)
	}
	return rec, Result{}, true
}

// from finds who sends. When ok is false, res ends the delivery: the tenant or its token could
// not be read (a retry), or nobody can send until an operator acts.
func (d *Deliverer) from(ctx context.Context, req Request, pol Policy) (from, Result, bool) {
	if req.TenantID == "" {
		if req.Token == "" {
			return from{}, d.unsendable(ctx, req, pol, ReasonNoToken, errors.New(
				"reply for the single-tenant default, but WHATSAPP_ACCESS_TOKEN is unset: set it (or apply a tenant that owns the number), then replay")), false
		}
		return from{token: req.Token}, Result{}, true
	}
	rec, token, reason, err := d.TenantToken(ctx, req.TenantID)
	switch reason {
	case "":
		if err != nil {
			// The tenant store or Cloud KMS unreachable for now: a retry may succeed.
			return from{}, d.retry(ctx, req, err, 0, true), false
		}
		return from{tenant: &rec, token: token}, Result{}, true
	case ReasonTenantNotFound:
		err = fmt.Errorf("tenant %s does not exist (any more): apply it, then replay", req.TenantID)
	case ReasonNoToken:
		err = fmt.Errorf("tenant %s has no access token (auth_status %s): set one with `wapipe tenants set-token %s`, then replay",
			req.TenantID, rec.AuthStatus, req.TenantID)
	default:
		// No retry opens a ciphertext sealed for another key or place.
		err = fmt.Errorf("%w: set the token again, then replay", err)
	}
	return from{}, d.unsendable(ctx, req, pol, reason, err), false
}

// TenantToken opens the tenant's access token. When no retry can help until an operator acts
// (tenant gone, no token, a token sealed for another key), reason names it and err is the cause;
// otherwise a non-nil err is worth a retry.
func (d *Deliverer) TenantToken(ctx context.Context, tenantID string) (rec store.TenantRecord, token, reason string, err error) {
	rec, err = d.Tenants.Tenant(ctx, tenantID)
	if errors.Is(err, store.ErrNotFound) {
		return rec, "", ReasonTenantNotFound, err
	}
	if err != nil {
		return rec, "", "", fmt.Errorf("read tenant %s: %w", tenantID, err)
	}
	if len(rec.AccessToken) == 0 {
		return rec, "", ReasonNoToken, errors.New("no access token")
	}
	token, err = d.Tokens.Token(ctx, rec)
	if secrets.Unreadable(err) {
		return rec, "", ReasonTokenUnreadable, err
	}
	if err != nil {
		return rec, "", "", fmt.Errorf("open the access token of %s: %w", tenantID, err)
	}
	return rec, token, "", nil
}

// compose is the message to send: req.Reply, or Compose's. When ok is false, res ends the
// delivery: nothing to send (skipped), a composer that failed, or a message that cannot be built.
func (d *Deliverer) compose(ctx context.Context, req Request, pol Policy) (outgoing.Message, Result, bool) {
	if req.Compose == nil {
		return req.Reply, Result{}, true
	}
	reply, err := req.Compose(ctx)
	var ue *unsendableError
	if errors.As(err, &ue) {
		return reply, d.unsendable(ctx, req, pol, ue.reason, ue.err), false
	}
	if err != nil {
		return reply, d.retry(ctx, req, err, 0, true), false
	}
	if reply.IsZero() {
		if err := d.Records.MarkSkipped(ctx, req.Key); err != nil {
			return reply, Result{Status: Retry, Err: err, Class: "temporary"}, false
		}
		logging.FromContext(ctx).InfoContext(ctx, "no reply for this message", "event", "outbound_skipped")
		return reply, Result{Status: Skipped}, false
	}
	return reply, Result{}, true
}

// unsendable fails a send nobody can make until an operator acts, with its reason, and
// dead-letters it by the policy (the record or the task) for a replay after the fix.
func (d *Deliverer) unsendable(ctx context.Context, req Request, pol Policy, reason string, err error) Result {
	logging.FromContext(ctx).ErrorContext(ctx, "cannot be sent until an operator acts", "event", "outbound_unsendable",
		"reason", reason, "tenant_id", req.TenantID, "error", err)
	return d.giveUp(ctx, req, pol, Unsendable, reason, 0, err)
}

// retry records a failed attempt on the record, best effort (definite: nothing was sent), and
// asks for a later attempt.
func (d *Deliverer) retry(ctx context.Context, req Request, err error, code int, definite bool) Result {
	d.markRetry(ctx, req.Key, definite, code, err)
	return Result{Status: Retry, Err: err, Code: code, Class: "temporary"}
}

func (d *Deliverer) markRetry(ctx context.Context, key string, definite bool, code int, err error) {
	if merr := d.Records.MarkRetry(ctx, key, definite, code, err.Error()); merr != nil {
		logging.FromContext(ctx).WarnContext(ctx, "record not updated after a failed send", "event", "outbound_record_failed", "error", merr)
	}
}

// releaseDone clears a released send's release mark once the release's task is settled, so a
// later release does not enqueue it again; until then a release run again re-enqueues it.
func (d *Deliverer) releaseDone(ctx context.Context, req Request, res Result) {
	if d.Sends == nil || res.Status == Invalid || (res.Status == Retry && !req.LastAttempt) {
		return
	}
	if err := d.Sends.ReleaseDone(ctx, req.Key, req.ReleaseGen); err != nil {
		logging.FromContext(ctx).WarnContext(ctx, "release mark not cleared", "event", "send_release_mark_failed", "error", err)
	}
}

// address is where req goes: its phone, else its BSUID.
func (req Request) address() contact.Address {
	if req.To != "" {
		return contact.Address{To: req.To}
	}
	return contact.Address{Recipient: req.Recipient}
}

// toHash is the keyed reference of req's recipient that records and logs carry: ph_ of its
// phone, else us_ of its BSUID.
func (d *Deliverer) toHash(req Request) string {
	if d.Hasher == nil {
		return ""
	}
	return d.Hasher.Address(req.To, req.Recipient)
}

// MarkRead marks an inbound message as read, best effort: a failure is logged and false
// returned (the next attempt, if any, tries again).
func (d *Deliverer) MarkRead(ctx context.Context, token, phoneNumberID, messageID string) bool {
	return d.bestEffort(ctx, "mark_read_failed", func(ctx context.Context) error {
		return d.Sender.MarkRead(ctx, token, phoneNumberID, messageID)
	})
}

// ShowTyping shows the sender of messageID the typing indicator while a turn takes long: one
// call, best effort, never retried (an indicator that comes late is worse than none).
func (d *Deliverer) ShowTyping(ctx context.Context, token, phoneNumberID, messageID string) bool {
	return d.bestEffort(ctx, "typing_failed", func(ctx context.Context) error {
		return d.Sender.ShowTyping(ctx, token, phoneNumberID, messageID)
	})
}

// bestEffort runs call within MarkReadTimeout (5 s when zero) and logs its failure as event.
func (d *Deliverer) bestEffort(ctx context.Context, event string, call func(context.Context) error) bool {
	timeout := d.MarkReadTimeout
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := call(ctx); err != nil {
		logging.FromContext(ctx).WarnContext(ctx, "a best-effort call to Meta failed", "event", event, "error", err)
		return false
	}
	return true
}
