package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"
	"golang.org/x/sync/errgroup"

	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/taskqueue"
	"github.com/wapipe/wapipe/internal/whatsapp"
	"github.com/wapipe/wapipe/tasks"
)

// TraceRecords keep one trace per inbound event; the store's traces implement it.
type TraceRecords interface {
	// WriteTrace writes an attempt's trace once the attempt is over: one write per attempt.
	WriteTrace(ctx context.Context, t store.Trace) error
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

// handleProcessInbound normalises one delivery, records its statuses and creates one outbound
// task per message. It answers 503 when anything must be retried: already-created outbound tasks
// deduplicate by name, already-recorded statuses by key.
func (s *Server) handleProcessInbound() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := s.deps.Now()
		t, in, o, ok := s.readInbound(r)
		if !ok {
			respond(w, o)
			return
		}
		ctx, logger := logging.With(r.Context(), logging.EventID(in.InboundEventID), "correlation_id", in.CorrelationID)
		counts, err := s.processInbound(ctx, logger, t, in)
		if err != nil {
			respond(w, s.fail(ctx, t, err))
			return
		}
		logger.InfoContext(ctx, "inbound event fanned out", "event", "inbound_fanout",
			"messages", counts.Messages, "statuses", counts.Statuses, "tasks_created", counts.Created,
			"tasks_existed", counts.Existed, "unrouted", counts.Unrouted, "duration_ms", s.deps.Now().Sub(start).Milliseconds())
		respond(w, outcome{kind: fannedOut, fanOut: counts})
	})
}

// readInbound decodes and checks an inbound task. When ok is false, o ends the attempt: a retry
// for a body that could not be read, a dead letter for a malformed one.
func (s *Server) readInbound(r *http.Request) (t *task, in tasks.Inbound, o outcome, ok bool) {
	t, o, ok, err := s.readTask(r, tasks.ProcessInboundPath, &in)
	if !ok {
		return t, in, o, false
	}
	in.CorrelationID = t.correlate(in.CorrelationID)
	t.inboundEventID = in.InboundEventID
	if err == nil {
		err = validateInbound(in)
	}
	if err != nil {
		// Retrying cannot fix a malformed task: keep it as a dead letter instead.
		return t, in, s.deadLetter(r.Context(), t, permanentFailure(fmt.Errorf("malformed inbound task: %w", err))), false
	}
	return t, in, outcome{}, true
}

// validateInbound checks what the webhook always writes: an event id, and either the payload (a
// JSON object) or a payload_ref of the one form the payload store makes.
func validateInbound(in tasks.Inbound) error {
	var errs []error
	if in.InboundEventID == "" {
		errs = append(errs, errors.New("inbound_event_id is empty"))
	}
	switch {
	case len(in.Payload) == 0 && in.PayloadRef == "":
		errs = append(errs, errors.New("neither payload nor payload_ref is set"))
	case len(in.Payload) > 0 && in.PayloadRef != "":
		errs = append(errs, errors.New("both payload and payload_ref are set"))
	case in.PayloadRef != "":
		if _, err := store.CheckPayloadRef(in.PayloadRef); err != nil {
			errs = append(errs, fmt.Errorf("payload_ref: %w", err))
		}
	case in.Payload[0] != '{':
		// json.RawMessage holds the value as sent, without leading space: "null", an array or a
		// string is not a delivery.
		errs = append(errs, errors.New("payload is not a JSON object"))
	}
	return errors.Join(errs...)
}

// processInbound reads the payload, fans out and applies the statuses, then writes the trace.
func (s *Server) processInbound(ctx context.Context, logger *slog.Logger, t *task, in tasks.Inbound) (fanOutCounts, error) {
	payloadBytes := []byte(in.Payload)
	if in.PayloadRef != "" {
		b, err := storeCall(ctx, func(ctx context.Context) ([]byte, error) { return s.deps.Payloads.Get(ctx, in.PayloadRef) })
		if errors.Is(err, store.ErrBadRef) {
			return fanOutCounts{}, permanentFailure(fmt.Errorf("load payload out of band: %w", err))
		}
		if err != nil {
			return fanOutCounts{}, fmt.Errorf("load payload out of band: %w", err)
		}
		payloadBytes = b
	}
	payload, err := whatsapp.Parse(payloadBytes)
	if err != nil {
		// The webhook parsed it before enqueueing, so this is a defect, not bad luck: retrying
		// will not help, and the dead letter keeps the payload.
		return fanOutCounts{}, permanentFailure(fmt.Errorf("parse payload: %w", err))
	}
	msgs, statuses := whatsapp.Normalize(payload)

	traceID := ""
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		traceID = sc.TraceID().String()
	}
	// The trace is written once, when the attempt is over, whatever its outcome.
	tr := store.Trace{
		InboundEventID: in.InboundEventID,
		EventRef:       s.deps.Hasher.Ref(in.InboundEventID),
		CorrelationID:  in.CorrelationID,
		TaskName:       t.name,
		TraceID:        traceID,
		Attempt:        int64(t.retryCount) + 1,
		Messages:       int64(len(msgs)),
		Statuses:       int64(len(statuses)),
		ReceivedAt:     in.ReceivedAt,
		StartedAt:      s.deps.Now(),
	}

	out := fanOutCounts{Messages: len(msgs), Statuses: len(statuses)}
	routes, err := s.routeAll(ctx, logger, msgs, statuses)
	var targets map[string]store.TraceTarget
	if err == nil {
		var fanErr error
		targets, fanErr = s.fanOut(ctx, in, msgs, routes)
		for _, target := range targets {
			switch target.Status {
			case "created":
				out.Created++
			case "existed":
				out.Existed++
			case traceUnrouted:
				out.Unrouted++
			}
		}
		err = errors.Join(fanErr, s.applyStatuses(ctx, logger, in, statuses, routes))
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
	if _, terr := storeCall(ctx, func(ctx context.Context) (struct{}, error) { return struct{}{}, s.deps.Traces.WriteTrace(ctx, tr) }); terr != nil {
		err = errors.Join(err, terr)
	}
	return out, err
}

// fanOut creates one outbound task per message, on the queue of the tenant its number routes to,
// a bounded number at a time. It returns the outcome of each enqueue by idempotency key; a
// message no one serves is recorded as unrouted, with no task.
func (s *Server) fanOut(ctx context.Context, in tasks.Inbound, msgs []whatsapp.Message, routes map[string]route) (map[string]store.TraceTarget, error) {
	var mu sync.Mutex
	targets := make(map[string]store.TraceTarget, len(msgs))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(s.deps.FanOut)
	var errs []error
	for _, m := range msgs {
		key := tasks.IdempotencyKey(m.ID)
		r := routes[m.PhoneNumberID]
		if r.unrouted {
			targets[key] = store.TraceTarget{MessageID: m.ID, Status: traceUnrouted}
			continue
		}
		g.Go(func() error {
			body, err := json.Marshal(tasks.Outbound{
				IdempotencyKey: key,
				CorrelationID:  in.CorrelationID,
				InboundEventID: in.InboundEventID,
				PhoneNumberID:  m.PhoneNumberID,
				To:             m.From,
				Message:        m,
				ReceivedAt:     in.ReceivedAt,
				TenantID:       r.tenantID,
			})
			t := store.TraceTarget{MessageID: m.ID, TenantID: r.tenantID}
			if err == nil {
				var res taskqueue.Result
				res, err = s.deps.Tasks.Enqueue(gctx, taskqueue.Task{
					Queue:         r.queue,
					ID:            tasks.OutboundTaskID(m.ID),
					Path:          tasks.ProcessOutboundPath,
					Body:          body,
					CorrelationID: in.CorrelationID,
				})
				t.TaskName = res.Name
				t.Status = "created"
				if res.Existed {
					t.Status = "existed"
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				t.Status, t.Error = "failed", err.Error()
				errs = append(errs, fmt.Errorf("create outbound task %s: %w", tasks.OutboundTaskID(m.ID), err))
			}
			targets[key] = t
			// One failed enqueue does not stop the others: the retry then has less to do.
			return nil
		})
	}
	_ = g.Wait()
	return targets, errors.Join(errs...)
}

// applyStatuses applies each status to the outbound record it is about, once. It applies first
// and records second: a crash between the two leaves a status unrecorded, and the retry applies it
// again, which the rank guard makes harmless; the other order could leave a status recorded as
// seen but never applied, and a send of unknown outcome never reconciled.
func (s *Server) applyStatuses(ctx context.Context, logger *slog.Logger, in tasks.Inbound, statuses []whatsapp.Status, routes map[string]route) error {
	var errs []error
	for _, st := range statuses {
		code, title := 0, ""
		if len(st.Errors) > 0 {
			code, title = st.Errors[0].Code, st.Errors[0].Title
		}
		key := st.DedupeKey()
		seen, err := storeCall(ctx, func(ctx context.Context) (bool, error) { return s.deps.Statuses.StatusSeen(ctx, key) })
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
			return s.deps.Outbound.ApplyStatus(ctx, store.StatusUpdate{
				Key:            callbackKey(st.BizOpaqueCallbackData),
				GraphMessageID: st.ID,
				Status:         st.Status,
				ErrorCode:      code,
				PhoneNumberID:  st.PhoneNumberID,
				TenantID:       routes[st.PhoneNumberID].tenantID,
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
		rec := store.StatusRecord{
			Key:            key,
			GraphMessageID: st.ID,
			Status:         st.Status,
			Timestamp:      st.Timestamp,
			PhoneNumberID:  st.PhoneNumberID,
			TenantID:       routes[st.PhoneNumberID].tenantID,
			RecipientHash:  s.deps.Hasher.Phone(st.RecipientID),
			IdempotencyKey: res.Key,
			ErrorCode:      int64(code),
			ErrorTitle:     title,
			InboundEventID: in.InboundEventID,
			CorrelationID:  in.CorrelationID,
		}
		if _, err := storeCall(ctx, func(ctx context.Context) (bool, error) { return s.deps.Statuses.RecordStatus(ctx, rec) }); err != nil {
			errs = append(errs, err)
			if errors.Is(err, errStoreTimeout) {
				break
			}
			continue
		}
		logStatusApplied(ctx, logger, st, routes[st.PhoneNumberID].tenantID, res, code, title)
	}
	return errors.Join(errs...)
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
		logging.Phone("recipient", st.RecipientID), logging.MessageID(st.ID), "matched", res.Matched, "applied", res.Applied,
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

// callbackKey returns the idempotency key wapipe put in biz_opaque_callback_data, or "" when the
// data is something else (a message sent by another system on the same number).
func callbackKey(data string) string {
	if tasks.IsIdempotencyKey(data) {
		return data
	}
	return ""
}
