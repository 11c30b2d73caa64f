package fanout

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"
	"golang.org/x/sync/errgroup"

	"github.com/wapipe/wapipe/internal/budget"
	"github.com/wapipe/wapipe/internal/contact"
	"github.com/wapipe/wapipe/internal/events"
	"github.com/wapipe/wapipe/internal/keyedid"
	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/internal/people"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/taskqueue"
	"github.com/wapipe/wapipe/internal/tenant"
	"github.com/wapipe/wapipe/internal/tenantcache"
	"github.com/wapipe/wapipe/internal/whatsapp"
	"github.com/wapipe/wapipe/pricing"
	"github.com/wapipe/wapipe/tasks"
)

// ErrMalformed marks a delivery no retry can fix (its payload cannot be read or parsed): the
// caller keeps it as a dead letter.
var ErrMalformed = errors.New("malformed delivery")

// Enqueuer creates tasks; *taskqueue.Client implements it.
type Enqueuer interface {
	Enqueue(ctx context.Context, t taskqueue.Task) (taskqueue.Result, error)
}

// PayloadReader reads payloads stored out of band; *store.Payloads implements it.
type PayloadReader interface {
	Get(ctx context.Context, ref string) ([]byte, error)
}

// NumberResolver gives the tenant of a business number (store.ErrNotFound for none); the
// worker's tenant cache implements it.
type NumberResolver interface {
	GetByPhoneNumber(ctx context.Context, phoneNumberID string) (store.TenantRecord, error)
}

// ContactRouter routes the messages of a shared number, where the contact decides the tenant;
// tenantcache.ContactRouter implements it. Both answer store.ErrNotFound when no tenant lists
// the number.
type ContactRouter interface {
	// TenantFor returns the route of a message from person; codeHash is the message's
	// tenant.InviteCodeHash when it is exactly an invite code, else "".
	TenantFor(ctx context.Context, phoneNumberID string, person contact.Identity, codeHash string) (tenantcache.Route, error)
	// Choose records person's tap on a tenant's row of the list that asked them; false when
	// they are not its member there.
	Choose(ctx context.Context, phoneNumberID string, person contact.Identity, id string) (bool, error)
	// NumberTenants returns the tenants that list the number.
	NumberTenants(ctx context.Context, phoneNumberID string) ([]string, error)
}

// Money is what counts a tenant's spending on Meta's messages: the Ledger, priced by Prices
// (the rate card); Budget is told after a priced message is counted (its thresholds), and
// Spending says whether the tenant was past its budget (its own sends are marked so).
type Money struct {
	Ledger   Ledger
	Prices   *pricing.Card
	Budget   BudgetWatcher
	Spending Spending
}

// Ledger counts what a tenant spends; *store.Guard implements it.
type Ledger interface {
	RecordBilled(ctx context.Context, b store.BilledMessage) (bool, error)
}

// Spending reads a tenant's month's spending; *store.Guard implements it.
type Spending interface {
	Spent(ctx context.Context, tenantID, period string) (pricing.Amount, error)
}

// BudgetWatcher checks a tenant's budget thresholds; *budget.Watcher implements it.
type BudgetWatcher interface {
	Check(ctx context.Context, tenantID string, at time.Time) error
}

// Chooser keeps the messages of a member of several tenants on a shared number until they
// choose one, asking them with a list; *choice.Chooser implements it.
type Chooser interface {
	Hold(ctx context.Context, body tasks.Outbound, q tenantcache.Question) (bool, error)
	Release(ctx context.Context, phoneNumberID string, person contact.Identity, id string) (int, error)
}

// Identities follows the identity changes of people (user_changed_number, user_changed_user_id,
// user_id_update) in the tenants of the number they came to; *people.Directory implements it.
type Identities interface {
	Change(ctx context.Context, tenantIDs []string, ch whatsapp.IdentityChange) ([]people.Moved, error)
}

// Fanner fans one inbound delivery out: each message becomes an outbound task on the queue of
// the tenant its number routes to, each status is applied to its outbound record once, and the
// attempt leaves one trace. A message that changes its sender's identity is followed here and
// makes no task; a message that names no sender is recorded and answered by nobody.
type Fanner struct {
	Tasks    Enqueuer
	Payloads PayloadReader
	Statuses StatusRecords
	Outbound DeliveryUpdater
	Traces   TraceRecords
	Tenants  NumberResolver
	// Contacts routes the messages of shared numbers by contact; nil routes them to the
	// number's first tenant, like any number.
	Contacts ContactRouter
	// Choices holds the messages of members of several tenants on a shared number who chose
	// none; nil sends them to the number's primary tenant.
	Choices Chooser
	// Events applies the changes of fields other than messages (preferences, echoes, account
	// and template updates, calls); with none they are traced only.
	Events EventApplier
	// Money counts the messages statuses price; its zero value counts nothing.
	Money Money
	// Identities follows identity changes; with none they are traced only.
	Identities Identities
	Hasher     *logging.Hasher
	// Keyer keys the reply keys (tasks.IdempotencyKey).
	Keyer *keyedid.Keyer
	Now   func() time.Time
	// Limit bounds the outbound tasks created at once.
	Limit int
	// DefaultQueue takes the messages to a number no tenant owns; "" when there is no
	// single-tenant default (WHATSAPP_ACCESS_TOKEN unset): they are unrouted.
	DefaultQueue string
}

// Attempt is what Cloud Tasks says of the attempt, for the trace.
type Attempt struct {
	Name       string
	RetryCount int
}

// Counts is what an inbound task did.
type Counts struct {
	Status   string `json:"status"`
	Messages int    `json:"messages"`
	Statuses int    `json:"statuses"`
	Created  int    `json:"tasks_created"`
	Existed  int    `json:"tasks_existed"`
	// Unrouted counts the messages to a number no tenant owns, with no default to serve them.
	Unrouted int `json:"unrouted,omitempty"`
	// NoSender counts the messages that name no sender (no phone, no BSUID): recorded with a
	// WARNING, not answered. IdentityChanges counts the identity changes followed.
	NoSender        int `json:"no_sender,omitempty"`
	IdentityChanges int `json:"identity_changes,omitempty"`
	// Events counts the changes of other fields applied (package events).
	Events int `json:"events,omitempty"`
}

// EventApplier applies one change of a field other than messages for the tenant its number
// routes to ("" for the default path, or a change with no number); *events.Applier implements it.
type EventApplier interface {
	Apply(ctx context.Context, tenantID string, ev whatsapp.Event) (events.Outcome, error)
}

// TraceRecords keep one trace per inbound event; the store's traces implement it.
type TraceRecords interface {
	// PutTrace writes an attempt's trace once the attempt is over: one write per attempt.
	PutTrace(ctx context.Context, t store.Trace) error
}

// inboundStoreTimeout bounds each store call of process_inbound, so an unreachable Firestore
// fails the attempt in seconds (503, Cloud Tasks retries) instead of holding it until Cloud
// Tasks' dispatch deadline.
const inboundStoreTimeout = 5 * time.Second

// errStoreTimeout marks a store call that ran out of inboundStoreTimeout: the store is not
// answering, and the attempt makes no further store call that would only wait as long.
var errStoreTimeout = errors.New("store call timed out")

// storeCall runs f with the store-call timeout.
func storeCall[T any](ctx context.Context, f func(context.Context) (T, error)) (T, error) {
	ctx, cancel := context.WithTimeout(ctx, inboundStoreTimeout)
	defer cancel()
	v, err := f(ctx)
	if err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		err = fmt.Errorf("%w after %s: %w", errStoreTimeout, inboundStoreTimeout, err)
	}
	return v, err
}

// StatusRecords remember which statuses were applied; the store's statuses implement it.
type StatusRecords interface {
	StatusSeen(ctx context.Context, key string) (bool, error)
	RecordStatus(ctx context.Context, s store.StatusRecord) (bool, error)
}

// DeliveryUpdater applies a status to the outbound record it is about; the store's outbound
// records implement it.
type DeliveryUpdater interface {
	ApplyStatus(ctx context.Context, u store.StatusUpdate) (store.ApplyResult, error)
}

// Process reads the payload of one inbound delivery, fans out its messages and applies its
// statuses, then writes the trace. A delivery no retry can fix is ErrMalformed.
func (f *Fanner) Process(ctx context.Context, logger *slog.Logger, in tasks.Inbound, task Attempt) (Counts, error) {
	payloadBytes := []byte(in.Payload)
	if in.PayloadRef != "" {
		b, err := storeCall(ctx, func(ctx context.Context) ([]byte, error) { return f.Payloads.Get(ctx, in.PayloadRef) })
		if errors.Is(err, store.ErrBadRef) {
			return Counts{}, fmt.Errorf("%w: load payload out of band: %w", ErrMalformed, err)
		}
		if err != nil {
			return Counts{}, fmt.Errorf("load payload out of band: %w", err)
		}
		payloadBytes = b
	}
	payload, err := whatsapp.Parse(payloadBytes)
	if err != nil {
		// The webhook parsed it before enqueueing, so this is a defect, not bad luck: retrying
		// will not help, and the dead letter keeps the payload.
		return Counts{}, fmt.Errorf("%w: parse payload: %w", ErrMalformed, err)
	}
	logValueErrors(ctx, logger, payload)
	msgs, statuses := whatsapp.Normalize(payload)

	traceID := ""
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		traceID = sc.TraceID().String()
	}
	// The trace is written once, when the attempt is over, whatever its outcome.
	tr := store.Trace{
		InboundEventID: in.InboundEventID,
		EventRef:       f.Hasher.Ref(in.InboundEventID),
		CorrelationID:  in.CorrelationID,
		TaskName:       task.Name,
		TraceID:        traceID,
		Attempt:        int64(task.RetryCount) + 1,
		Messages:       int64(len(msgs)),
		Statuses:       int64(len(statuses)),
		ReceivedAt:     in.ReceivedAt,
		StartedAt:      f.Now(),
	}

	out := Counts{Messages: len(msgs), Statuses: len(statuses)}
	routes, err := f.routeAll(ctx, logger, msgs, statuses)
	var targets map[string]store.TraceTarget
	if err == nil {
		var fanErr error
		targets, fanErr = f.fanOut(ctx, logger, in, msgs, routes)
		out.count(targets)
		err = errors.Join(fanErr, f.applyStatuses(ctx, logger, in, statuses, routes))
		if !errors.Is(err, errStoreTimeout) {
			var evErr error
			out.Events, evErr = f.applyEvents(ctx, payload, routes)
			err = errors.Join(err, evErr)
		}
	}

	if errors.Is(err, errStoreTimeout) {
		// The store is not answering: the trace write would wait out its timeout too. The retry
		// writes it.
		return out, err
	}
	tr.State, tr.Outbound = store.TraceFinished, targets
	if err != nil {
		tr.State, tr.Error = store.TraceRetrying, err.Error()
	}
	if _, terr := storeCall(ctx, func(ctx context.Context) (struct{}, error) { return struct{}{}, f.Traces.PutTrace(ctx, tr) }); terr != nil {
		err = errors.Join(err, terr)
	}
	return out, err
}

// count adds the outcomes of the messages' fan-out to c.
func (c *Counts) count(targets map[string]store.TraceTarget) {
	for _, target := range targets {
		switch target.Status {
		case "created":
			c.Created++
		case "existed":
			c.Existed++
		case traceUnrouted:
			c.Unrouted++
		case traceNoSender:
			c.NoSender++
		case traceIdentityChange:
			c.IdentityChanges++
		}
	}
}

// fanOut creates one outbound task per message, on the queue of the tenant its number routes to,
// a bounded number at a time. It returns the outcome of each enqueue by idempotency key; a
// message no one serves is recorded as unrouted, with no task; so is a message that names no
// sender (no_sender), and an identity change, followed here (identity_change).
func (f *Fanner) fanOut(ctx context.Context, logger *slog.Logger, in tasks.Inbound, msgs []whatsapp.Message, routes map[string]route) (map[string]store.TraceTarget, error) {
	res := &fanResult{targets: make(map[string]store.TraceTarget, len(msgs))}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(f.Limit)
	for _, m := range msgs {
		key := tasks.IdempotencyKey(f.Keyer, m.ID)
		r, t, err := f.messageRoute(ctx, logger, in, m, key, routes)
		if t != nil {
			// No task for this message; the enqueues already started record theirs too.
			res.set(key, *t, err)
			if errors.Is(err, errStoreTimeout) {
				break
			}
			continue
		}
		g.Go(func() error {
			t, err := f.enqueue(gctx, in, m, key, r)
			res.set(key, t, err)
			// One failed enqueue does not stop the others: the retry then has less to do.
			return nil
		})
	}
	_ = g.Wait()
	return res.targets, errors.Join(res.errs...)
}

// fanResult collects the trace targets of a fan-out's messages and its errors, from the
// concurrent enqueues.
type fanResult struct {
	mu      sync.Mutex
	targets map[string]store.TraceTarget
	errs    []error
}

func (r *fanResult) set(key string, t store.TraceTarget, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.targets[key] = t
	if err != nil {
		r.errs = append(r.errs, err)
	}
}

// messageRoute is where message m's task goes; when m makes no task, t is its trace target
// instead: an identity change (followed here), a message that names nobody, a number no one
// serves, or a route that could not be read (err).
func (f *Fanner) messageRoute(ctx context.Context, logger *slog.Logger, in tasks.Inbound, m whatsapp.Message, key string, routes map[string]route) (route, *store.TraceTarget, error) {
	if ch, ok := m.IdentityChange(); ok {
		t, err := f.followIdentity(ctx, logger, routes[m.PhoneNumberID], m, ch)
		return route{}, &t, err
	}
	sender := m.Identity()
	if sender.IsZero() {
		// Nothing may be keyed by an empty identifier, and there is nobody to answer.
		logger.WarnContext(ctx, "message names no sender (no phone number, no business-scoped user id): recorded, not answered",
			"event", "message_no_sender", "phone_number_id", m.PhoneNumberID, "message_type", m.Type, logging.MessageID(m.ID))
		return route{}, &store.TraceTarget{MessageID: m.ID, Status: traceNoSender}, nil
	}
	r, err := f.contactRoute(ctx, routes[m.PhoneNumberID], m.PhoneNumberID, sender, m)
	switch {
	case err != nil:
		return route{}, &store.TraceTarget{MessageID: m.ID, Status: "failed", Error: err.Error()}, err
	case r.unrouted:
		return route{}, &store.TraceTarget{MessageID: m.ID, Status: traceUnrouted}, nil
	case r.chosen:
		return route{}, &store.TraceTarget{MessageID: m.ID, TenantID: r.tenantID, Status: traceChosen}, nil
	case r.ask != nil:
		asked, err := storeCall(ctx, func(ctx context.Context) (bool, error) {
			return f.Choices.Hold(ctx, f.outboundBody(in, m, key, ""), *r.ask)
		})
		if err != nil {
			return route{}, &store.TraceTarget{MessageID: m.ID, Status: "failed", Error: err.Error()}, err
		}
		logger.InfoContext(ctx, "message held until its sender chooses a tenant of the shared number", "event", "held_for_choice",
			"phone_number_id", m.PhoneNumberID, "asked", asked, "tenants", len(r.ask.Choices), logging.MessageID(m.ID))
		return route{}, &store.TraceTarget{MessageID: m.ID, TenantID: r.ask.Host, Status: traceHeld}, nil
	}
	return r, nil, nil
}

// outboundBody is the outbound task body of message m for tenantID.
func (f *Fanner) outboundBody(in tasks.Inbound, m whatsapp.Message, key, tenantID string) tasks.Outbound {
	sender := m.Identity()
	return tasks.Outbound{
		IdempotencyKey: key, CorrelationID: in.CorrelationID, InboundEventID: in.InboundEventID,
		PhoneNumberID: m.PhoneNumberID, To: sender.WaID, UserID: sender.UserID, Message: m,
		ReceivedAt: in.ReceivedAt, TenantID: tenantID,
	}
}

// enqueue creates the outbound task of message m on route r.
func (f *Fanner) enqueue(ctx context.Context, in tasks.Inbound, m whatsapp.Message, key string, r route) (store.TraceTarget, error) {
	t := store.TraceTarget{MessageID: m.ID, TenantID: r.tenantID}
	task, err := tasks.NewTask(f.outboundBody(in, m, key, r.tenantID))
	if err == nil {
		if r.tenantID == "" {
			// The single-tenant default's queue, as the worker names it (OUTBOUND_TASK_QUEUE_NAME).
			task.Queue = f.DefaultQueue
		}
		var res taskqueue.Result
		res, err = f.Tasks.Enqueue(ctx, taskqueue.FromSpec(task))
		t.TaskName, t.Status = res.Name, "created"
		if res.Existed {
			t.Status = "existed"
		}
	}
	if err != nil {
		t.Status, t.Error = "failed", err.Error()
		return t, fmt.Errorf("create outbound task %s: %w", tasks.OutboundTaskID(m.ID), err)
	}
	return t, nil
}

// applyStatuses applies each status to the outbound record it is about, once. It applies first
// and records second: a crash between the two leaves a status unrecorded, and the retry applies it
// again, which the rank guard makes harmless; the other order could leave a status recorded as
// seen but never applied, and a send of unknown outcome never reconciled.
func (f *Fanner) applyStatuses(ctx context.Context, logger *slog.Logger, in tasks.Inbound, statuses []whatsapp.Status, routes map[string]route) error {
	var errs []error
	for _, st := range statuses {
		code, title := 0, ""
		if len(st.Errors) > 0 {
			code, title = st.Errors[0].Code, st.Errors[0].Title
		}
		key := st.DedupeKey()
		seen, err := storeCall(ctx, func(ctx context.Context) (bool, error) { return f.Statuses.StatusSeen(ctx, key) })
		if err != nil {
			errs = append(errs, err)
			if errors.Is(err, errStoreTimeout) {
				break
			}
			continue
		}
		if seen {
			logger.DebugContext(ctx, "status already applied", "event", "status_duplicate", "status", st.Status)
			continue
		}
		res, err := storeCall(ctx, func(ctx context.Context) (store.ApplyResult, error) {
			return f.Outbound.ApplyStatus(ctx, store.StatusUpdate{
				Key:            callbackKey(st.BizOpaqueCallbackData),
				GraphMessageID: st.ID,
				Status:         st.Status,
				ErrorCode:      code,
				PhoneNumberID:  st.PhoneNumberID,
				RecipientPhone: st.RecipientID, RecipientUserID: st.RecipientUserID, RecipientParentUserID: st.RecipientParentUserID,
				RecipientHashes: f.recipientHashes(st),
				TenantID:        routes[st.PhoneNumberID].tenantID,
				SharedWith:      routes[st.PhoneNumberID].sharedWith,
			})
		})
		if err != nil {
			errs = append(errs, err)
			if errors.Is(err, errStoreTimeout) {
				break
			}
			continue
		}
		if res.Mismatch != "" {
			// Another number echoing a record's key (or a status that may not settle it): the
			// record stays as it was. The status is still recorded below, under its own number,
			// so a redelivery is a duplicate.
			logger.WarnContext(ctx, "status does not belong to the record it names: not applied", "event", "status_mismatch",
				"reason", res.Mismatch, "status", st.Status, "phone_number_id", st.PhoneNumberID,
				"tenant_id", routes[st.PhoneNumberID].tenantID, logging.MessageID(st.ID))
			res.Key = ""
		}
		rec := f.statusRecord(in, st, routes[st.PhoneNumberID], res, code, title)
		if err := f.bill(ctx, st, res); err != nil {
			errs = append(errs, err)
			if errors.Is(err, errStoreTimeout) {
				break
			}
			continue
		}
		if _, err := storeCall(ctx, func(ctx context.Context) (bool, error) { return f.Statuses.RecordStatus(ctx, rec) }); err != nil {
			errs = append(errs, err)
			if errors.Is(err, errStoreTimeout) {
				break
			}
			continue
		}
		logStatusApplied(ctx, logger, st, rec.TenantID, res, code, title)
	}
	return errors.Join(errs...)
}

// statusRecord is the record of status st applied with res, on its number's route r.
func (f *Fanner) statusRecord(in tasks.Inbound, st whatsapp.Status, r route, res store.ApplyResult, code int, title string) store.StatusRecord {
	tenantID := r.tenantID
	if len(r.sharedWith) > 0 && res.TenantID != "" {
		// A shared number's status is recorded for the tenant whose record it settled.
		tenantID = res.TenantID
	}
	return store.StatusRecord{
		Key: st.DedupeKey(), GraphMessageID: st.ID, Status: st.Status, Timestamp: st.Timestamp,
		PhoneNumberID: st.PhoneNumberID, TenantID: tenantID, RecipientHash: recipientHash(f.Hasher, st),
		IdempotencyKey: res.Key, ErrorCode: int64(code), ErrorTitle: title,
		InboundEventID: in.InboundEventID, CorrelationID: in.CorrelationID,
	}
}

// bill counts the message a status prices in its tenant's ledger, once (store.Guard.RecordBilled):
// only a message wapipe sent (the status settled one of its records), priced by the rate card on
// the UTC day of the status in the recipient's market (by phone, else by the BSUID's country).
func (f *Fanner) bill(ctx context.Context, st whatsapp.Status, res store.ApplyResult) error {
	if f.Money.Ledger == nil || f.Money.Prices == nil || st.PricingCategory == "" || res.Key == "" || res.TenantID == "" || !paid(st) {
		// A free message (a reply in the window, an entry point's) costs nothing: its statuses,
		// most of them, cost no ledger write either.
		return nil
	}
	sec, err := strconv.ParseInt(st.Timestamp, 10, 64)
	if err != nil || sec <= 0 {
		return nil
	}
	at := time.Unix(sec, 0).UTC()
	market := pricing.MarketOf(st.RecipientID, st.RecipientUserID)
	amount, ok := f.Money.Prices.BillPrice(market, st.PricingCategory, at)
	if !ok {
		logging.FromContext(ctx).WarnContext(ctx, "no price for a billed message: counted at 0", "event", "price_unknown",
			"category", st.PricingCategory, "market", market, "tenant_id", res.TenantID)
	}
	over, err := f.overBudget(ctx, st.PhoneNumberID, res, amount, at)
	if err != nil {
		return err
	}
	changed, err := storeCall(ctx, func(ctx context.Context) (bool, error) {
		return f.Money.Ledger.RecordBilled(ctx, store.BilledMessage{TenantID: res.TenantID, MessageID: st.ID, Category: st.PricingCategory,
			Market: market, Amount: amount, At: at, OverBudget: over})
	})
	if err == nil && changed && amount > 0 && f.Money.Budget != nil {
		if err := f.Money.Budget.Check(ctx, res.TenantID, at); err != nil {
			logging.FromContext(ctx).WarnContext(ctx, "budget thresholds not checked", "event", "budget_check_failed",
				"tenant_id", res.TenantID, "error", err)
		}
	}
	return err
}

// overBudget reports whether a paid message the business sent itself (/v1) went out while its
// tenant's month was past its budget: such sends still go (the business asked), and the ledger
// marks them (usage's over_budget).
func (f *Fanner) overBudget(ctx context.Context, phoneNumberID string, res store.ApplyResult, amount pricing.Amount, at time.Time) (bool, error) {
	if amount == 0 || res.Source != store.SourceAPI || f.Money.Spending == nil {
		return false, nil
	}
	rec, err := storeCall(ctx, func(ctx context.Context) (store.TenantRecord, error) {
		return f.Tenants.GetByPhoneNumber(ctx, phoneNumberID)
	})
	if err != nil || rec.Tenant.ID != res.TenantID {
		// A shared number's record of another tenant: read it no further (not marked).
		return false, err
	}
	return storeCall(ctx, func(ctx context.Context) (bool, error) {
		return budget.Exhausted(ctx, f.Money.Spending, rec.Tenant, at)
	})
}

// paid reports whether Meta charges the message a status prices: pricing.type decides, and
// only a status without it falls back to the deprecated billable.
func paid(st whatsapp.Status) bool {
	switch st.PricingType {
	case "":
		return st.Billable != nil && *st.Billable
	case "free_customer_service", "free_entry_point":
		return false
	}
	return true
}

// applyEvents applies each change of a field other than messages, for the tenant its number
// routes to: routes holds the numbers resolved already (routeAll's), and takes each number first
// resolved here, so a number is resolved once per delivery. Every effect is idempotent, so a
// failure fails the delivery and the retry applies them all again. It returns how many were
// applied.
func (f *Fanner) applyEvents(ctx context.Context, payload *whatsapp.Payload, routes map[string]route) (int, error) {
	if f.Events == nil {
		return 0, nil
	}
	applied := 0
	for _, ev := range whatsapp.Events(payload) {
		tenantIDs := []string{""}
		if ev.PhoneNumberID != "" {
			r, ok := routes[ev.PhoneNumberID]
			var err error
			if !ok {
				if r, err = storeCall(ctx, func(ctx context.Context) (route, error) { return f.route(ctx, ev.PhoneNumberID) }); err != nil {
					return applied, err
				}
				routes[ev.PhoneNumberID] = r
			}
			if tenantIDs, err = f.eventTenants(ctx, r, ev); err != nil {
				return applied, err
			}
		}
		for _, tenantID := range tenantIDs {
			if _, err := storeCall(ctx, func(ctx context.Context) (events.Outcome, error) { return f.Events.Apply(ctx, tenantID, ev) }); err != nil {
				return applied, fmt.Errorf("apply %s event: %w", ev.Field, err)
			}
		}
		applied++
	}
	return applied, nil
}

// eventTenants are the tenants an event on a number with route r is applied for: the number's
// tenant; on a shared number, a contact's marketing preference for every tenant there (Meta
// keeps one per number and contact, and refuses every tenant's marketing after a stop), another
// event with a contact for the contact's tenant, one without for the number's first tenant.
func (f *Fanner) eventTenants(ctx context.Context, r route, ev whatsapp.Event) ([]string, error) {
	switch {
	case len(r.sharedWith) == 0 || ev.Contact.IsZero():
		return []string{r.tenantID}, nil
	case ev.Preference != nil || ev.IdentityChange != nil:
		return r.sharedWith, nil
	}
	cr, err := f.contactRoute(ctx, r, ev.PhoneNumberID, ev.Contact, whatsapp.Message{})
	if err != nil {
		return nil, err
	}
	return []string{cr.tenantID}, nil
}

// logStatusApplied logs a status applied to its record (a mismatch was logged already): a failed
// delivery at ERROR with Meta's code, a reconciled or late-accepted send at WARNING.
func logStatusApplied(ctx context.Context, logger *slog.Logger, st whatsapp.Status, tenantID string, res store.ApplyResult, code int, title string) {
	if res.Mismatch != "" {
		return
	}
	event := "status_applied"
	if res.AcceptedAfterFailure && st.Status != store.DeliveryFailed && !res.Reconciled {
		event = "status_after_failure"
	}
	attrs := []any{"event", event, "status", st.Status, "phone_number_id", st.PhoneNumberID, "tenant_id", tenantID,
		logging.Phone("recipient", st.RecipientID), logging.User("recipient_user", st.RecipientUserID), logging.MessageID(st.ID),
		"matched", res.Matched, "applied", res.Applied,
		"reconciled", res.Reconciled}
	switch {
	case st.Status == store.DeliveryFailed:
		logger.ErrorContext(ctx, "message delivery failed", append(attrs, "meta_error_code", code, "meta_error_title", title)...)
	case res.Reconciled:
		logger.WarnContext(ctx, "status reconciled a send of unknown outcome", attrs...)
	case res.AcceptedAfterFailure:
		logger.WarnContext(ctx, "Meta accepted a send given up as failed: it stays failed and is never sent again", attrs...)
	default:
		logger.InfoContext(ctx, "status applied", attrs...)
	}
}

// recipientHashes are the keyed hashes of the person status st is about, as a record's to_hash
// is made (delivery, outbox): its phone, its business-scoped user id and its parent's.
func (f *Fanner) recipientHashes(st whatsapp.Status) []string {
	var out []string
	for _, h := range []string{f.Hasher.Phone(st.RecipientID), f.Hasher.User(st.RecipientUserID), f.Hasher.User(st.RecipientParentUserID)} {
		if h != "" {
			out = append(out, h)
		}
	}
	return out
}

// callbackKey returns the idempotency key wapipe put in biz_opaque_callback_data, or "" when the
// data is something else (a message sent by another system on the same number).
func callbackKey(data string) string {
	if tasks.IsIdempotencyKey(data) {
		return data
	}
	return ""
}

// Trace statuses of messages that make no task: no one serves the number (no tenant owns it
// and the worker has no default token), the message names no sender, or it announced an
// identity change, followed here.
const (
	traceUnrouted       = "unrouted"
	traceNoSender       = "no_sender"
	traceIdentityChange = "identity_change"
	// traceHeld: held until its sender chooses a tenant of the shared number (package choice);
	// traceChosen: the tap that chose one, its held messages sent to it.
	traceHeld   = "held_for_choice"
	traceChosen = "tenant_chosen"
)

// followIdentity follows the identity change ch that message m announced, in the tenants of its
// number (every tenant of a shared number: the person may be known to any), and returns the
// message's trace target. It is never answered and makes no task.
func (f *Fanner) followIdentity(ctx context.Context, logger *slog.Logger, r route, m whatsapp.Message, ch whatsapp.IdentityChange) (store.TraceTarget, error) {
	t := store.TraceTarget{MessageID: m.ID, Status: traceIdentityChange, TenantID: r.tenantID}
	tenantIDs := r.sharedWith
	if len(tenantIDs) == 0 && r.tenantID != "" {
		tenantIDs = []string{r.tenantID}
	}
	if f.Identities == nil || len(tenantIDs) == 0 {
		logger.InfoContext(ctx, "identity change on a number no tenant owns: recorded", "event", "identity_change_unrouted",
			"type", ch.Type, "phone_number_id", m.PhoneNumberID)
		return t, nil
	}
	_, err := storeCall(ctx, func(ctx context.Context) ([]people.Moved, error) { return f.Identities.Change(ctx, tenantIDs, ch) })
	if err != nil {
		t.Status, t.Error = "failed", err.Error()
		return t, fmt.Errorf("follow the identity change of message %s: %w", f.Hasher.Ref(m.ID), err)
	}
	return t, nil
}

// recipientHash is the keyed reference of a status's recipient kept with it: ph_ of the phone,
// else us_ of the BSUID.
func recipientHash(h *logging.Hasher, st whatsapp.Status) string {
	if st.RecipientID != "" {
		return h.Phone(st.RecipientID)
	}
	return h.User(st.RecipientUserID)
}

// route is where the messages to one business number go.
type route struct {
	// tenantID owns the number; "" is the single-tenant default. It decides the queue of the
	// outbound tasks (tasks.NewTask): the tenant's own, or DefaultQueue.
	tenantID string
	// unrouted: no tenant owns the number and there is no default: nothing is sent.
	unrouted bool
	// sharedWith are the tenants of a shared number (tenantID is the first): the contact of
	// each message decides among them, and a status may be about a record of any of them.
	sharedWith []string
	// ask: the contact is a member of several of the shared number's tenants and chose none:
	// the message is held and they are asked (Fanner.Choices). chosen: the message is the tap
	// that chose tenantID, and makes no task.
	ask    *tenantcache.Question
	chosen bool
}

// routeAll resolves each distinct business number of a delivery (usually one). A lookup that
// fails fails the delivery, so Cloud Tasks retries it: guessing a route would send with the
// wrong token or drop a tenant's message.
func (f *Fanner) routeAll(ctx context.Context, logger *slog.Logger, msgs []whatsapp.Message, statuses []whatsapp.Status) (map[string]route, error) {
	routes := map[string]route{}
	resolve := func(phoneNumberID string) error {
		if _, ok := routes[phoneNumberID]; ok {
			return nil
		}
		r, err := f.route(ctx, phoneNumberID)
		if err != nil {
			return err
		}
		if r.unrouted {
			// phone_number_id is the business's number id, not a person's: fine to log.
			logger.ErrorContext(ctx, "no tenant owns this business number and WHATSAPP_ACCESS_TOKEN is unset: not answering",
				"event", "unrouted_number", "phone_number_id", phoneNumberID)
		}
		routes[phoneNumberID] = r
		return nil
	}
	for _, m := range msgs {
		if err := resolve(m.PhoneNumberID); err != nil {
			return nil, err
		}
	}
	for _, st := range statuses {
		if err := resolve(st.PhoneNumberID); err != nil {
			return nil, err
		}
	}
	return routes, nil
}

// route resolves one business number to its tenant.
func (f *Fanner) route(ctx context.Context, phoneNumberID string) (route, error) {
	rec, err := f.Tenants.GetByPhoneNumber(ctx, phoneNumberID)
	switch {
	case err == nil:
		r := route{tenantID: rec.Tenant.ID}
		if f.Contacts != nil && rec.Tenant.SharesNumber(phoneNumberID) {
			ids, err := f.Contacts.NumberTenants(ctx, phoneNumberID)
			if err != nil && !errors.Is(err, store.ErrNotFound) {
				return route{}, fmt.Errorf("read the tenants of shared number %s: %w", phoneNumberID, err)
			}
			r.sharedWith = ids
		}
		return r, nil
	case errors.Is(err, store.ErrNotFound):
		if f.DefaultQueue != "" {
			return route{}, nil
		}
		return route{unrouted: true}, nil
	default:
		return route{}, fmt.Errorf("resolve the tenant of business number %s: %w", phoneNumberID, err)
	}
}

// contactRoute is the route of message m (zero for an event) from person on its number's
// route r: on a shared number the contact's tenant (ContactRouter.TenantFor), else r.
func (f *Fanner) contactRoute(ctx context.Context, r route, phoneNumberID string, person contact.Identity, m whatsapp.Message) (route, error) {
	if len(r.sharedWith) == 0 {
		return r, nil
	}
	codeHash := ""
	if m.Type == "text" {
		if code, ok := tenant.NormalizeInviteCode(m.Text); ok {
			codeHash = tenant.InviteCodeHash(code)
		}
	}
	if chosen, ok, err := f.choose(ctx, phoneNumberID, person, m); ok || err != nil {
		return route{tenantID: chosen, sharedWith: r.sharedWith, chosen: true}, err
	}
	cr, err := storeCall(ctx, func(ctx context.Context) (tenantcache.Route, error) {
		return f.Contacts.TenantFor(ctx, phoneNumberID, person, codeHash)
	})
	switch {
	case errors.Is(err, store.ErrNotFound):
		// The number stopped being shared since it was resolved: its first tenant answers.
		return r, nil
	case err != nil:
		return route{}, fmt.Errorf("route the contact on shared number %s: %w", phoneNumberID, err)
	case cr.Ask != nil && f.Choices == nil:
		return route{tenantID: cr.Ask.Host, sharedWith: r.sharedWith}, nil
	case cr.Ask != nil:
		return route{sharedWith: r.sharedWith, ask: cr.Ask}, nil
	}
	return route{tenantID: cr.Tenant, sharedWith: r.sharedWith}, nil
}

// choose handles a tap on a row of the list that asks which tenant a message is for: the choice
// is recorded and the messages held for it go to the tenant chosen; the tap itself makes no
// task (ok). A row of a tenant the sender is not a member of there is an ordinary message.
func (f *Fanner) choose(ctx context.Context, phoneNumberID string, person contact.Identity, m whatsapp.Message) (id string, ok bool, err error) {
	if f.Choices == nil || m.Reply == nil || m.Reply.Kind != "list_reply" {
		return "", false, nil
	}
	id, ok = tenantcache.ChosenTenant(m.Reply.ID)
	if !ok {
		return "", false, nil
	}
	ok, err = storeCall(ctx, func(ctx context.Context) (bool, error) { return f.Contacts.Choose(ctx, phoneNumberID, person, id) })
	if err != nil || !ok {
		return "", false, err
	}
	n, err := storeCall(ctx, func(ctx context.Context) (int, error) { return f.Choices.Release(ctx, phoneNumberID, person, id) })
	if err != nil {
		return "", false, fmt.Errorf("release the messages held for the choice: %w", err)
	}
	logging.FromContext(ctx).InfoContext(ctx, "sender chose a tenant of the shared number", "event", "tenant_chosen",
		"phone_number_id", phoneNumberID, "tenant_id", id, "released", n, logging.MessageID(m.ID))
	return id, true, nil
}
