package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"time"

	"github.com/wapipe/wapipe/internal/dedupe"
	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/internal/taskqueue"
	"github.com/wapipe/wapipe/internal/whatsapp"
	"github.com/wapipe/wapipe/tasks"
)

var correlationIDPattern = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,128}$`)

// signaturePattern is the only form of X-Hub-Signature-256 Meta sends. A request without it is
// refused before a byte of its body is read, so unsigned uploads cost no memory.
var signaturePattern = regexp.MustCompile(`^sha256=[0-9a-fA-F]{64}$`)

// delivery is one POST from Meta whose signature and shape have been checked.
type delivery struct {
	body          []byte
	eventID       string
	correlationID string
	received      time.Time
}

// handleEvent takes one delivery: read and verify it, claim its event, create its inbound task,
// answer.
func (s *Server) handleEvent() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		received := s.deps.Now().UTC()
		correlationID := r.Header.Get(tasks.HeaderCorrelationID)
		if !correlationIDPattern.MatchString(correlationID) {
			correlationID = newID()
		}
		ctx, _ := logging.With(r.Context(), "correlation_id", correlationID)
		w.Header().Set(tasks.HeaderCorrelationID, correlationID)

		d, o, release := s.readDelivery(ctx, w, r)
		// The body's bytes stay reserved until the delivery is done with them.
		defer release()
		if o != undecided {
			respond(w, o)
			return
		}
		d.correlationID, d.received = correlationID, received
		ctx, _ = logging.With(ctx, logging.EventID(d.eventID))

		// Meta may give up on this request; the event's state must still end consistent, so the
		// rest runs to completion on its own deadline.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		o, complete := s.accept(ctx, d)
		respond(w, o)
		if complete != nil {
			// Meta has its answer; recording it in the marker is not on its clock.
			_ = http.NewResponseController(w).Flush()
			complete()
		}
	})
}

// readDelivery checks the signature header's form, reserves the body's bytes, reads the body under
// the size cap, checks its signature and derives its inbound_event_id. The outcome is undecided
// when the delivery may go on; release gives the reserved bytes back (always callable).
func (s *Server) readDelivery(ctx context.Context, w http.ResponseWriter, r *http.Request) (d delivery, o outcome, release func()) {
	release = func() {}
	logger := logging.FromContext(ctx)
	sig := r.Header.Get(whatsapp.SignatureHeader)
	if !signaturePattern.MatchString(sig) {
		logger.WarnContext(ctx, "signature missing or malformed: body not read", "event", "signature_invalid",
			"signature_present", sig != "", "content_length", r.ContentLength)
		return delivery{}, badSignature, release
	}
	if r.ContentLength > MaxBodyBytes {
		logger.WarnContext(ctx, "body over the size cap", "event", "body_too_large", "content_length", r.ContentLength)
		return delivery{}, tooLarge, release
	}
	release, ok := s.reserveBody(ctx, r.ContentLength)
	if !ok {
		logger.WarnContext(ctx, "too many body bytes in flight: asking Meta to redeliver", "event", "body_budget_exhausted",
			"content_length", r.ContentLength, "max_inflight_body_bytes", s.cfg.MaxInflightBodyBytes)
		return delivery{}, overloaded, release
	}
	body, err := readBody(w, r)
	if err != nil {
		var tooLong *http.MaxBytesError
		if errors.As(err, &tooLong) {
			logger.WarnContext(ctx, "body over the size cap", "event", "body_too_large")
			return delivery{}, tooLarge, release
		}
		logger.WarnContext(ctx, "reading body failed", "event", "body_read_failed", "error", err)
		return delivery{}, unreadable, release
	}
	d, o = s.checkDelivery(ctx, sig, body)
	return d, o, release
}

// reserveBody reserves a body's bytes under MAX_INFLIGHT_BODY_BYTES, waiting up to BodyWait: its
// declared length, or the cap when it is sent chunked. ok is false when the bytes could not be
// reserved in time.
func (s *Server) reserveBody(ctx context.Context, contentLength int64) (release func(), ok bool) {
	n := contentLength
	if n < 0 {
		n = MaxBodyBytes
	}
	ctx, cancel := context.WithTimeout(ctx, s.deps.BodyWait)
	defer cancel()
	if err := s.bodies.Acquire(ctx, n); err != nil {
		return func() {}, false
	}
	return func() { s.bodies.Release(n) }, true
}

// readBody reads the body under the size cap, into one buffer of the declared length when there
// is one (io.ReadAll would grow its buffer to up to twice that).
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	body := http.MaxBytesReader(w, r.Body, MaxBodyBytes)
	if r.ContentLength < 0 {
		return io.ReadAll(body)
	}
	buf := bytes.NewBuffer(make([]byte, 0, r.ContentLength+1))
	_, err := buf.ReadFrom(body)
	return buf.Bytes(), err
}

// checkDelivery checks the body's signature and derives its inbound_event_id.
func (s *Server) checkDelivery(ctx context.Context, sig string, body []byte) (delivery, outcome) {
	logger := logging.FromContext(ctx)
	if !whatsapp.VerifySignature(sig, body, s.cfg.AppSecret) {
		logger.WarnContext(ctx, "signature does not match the body", "event", "signature_invalid",
			"signature_present", true, "bytes", len(body))
		return delivery{}, badSignature
	}
	payload, err := whatsapp.Parse(body)
	if err != nil {
		logger.WarnContext(ctx, "malformed payload", "event", "payload_malformed", "bytes", len(body), "error", err)
		return delivery{}, malformed
	}
	eventID, err := whatsapp.InboundEventID(body, payload)
	if err != nil {
		logger.WarnContext(ctx, "no inbound_event_id", "event", "payload_malformed", "error", err)
		return delivery{}, malformed
	}
	return delivery{body: body, eventID: eventID}, undecided
}

// accept runs mark_if_new and creates the inbound task: the answer is accepted only once the task
// exists. complete, when not nil, completes the marker; it runs after the answer is sent.
func (s *Server) accept(ctx context.Context, d delivery) (o outcome, complete func()) {
	logger := logging.FromContext(ctx)
	start := s.deps.Now()
	owned, o := s.claim(ctx, d)
	if o != undecided {
		return o, nil
	}

	res, err := s.enqueue(ctx, d)
	if err != nil {
		logger.ErrorContext(ctx, "inbound task not created: Meta will redeliver", "event", "enqueue_failed", "error", err)
		if owned {
			if rerr := s.storeCall(ctx, func(ctx context.Context) error { return s.deps.Dedupe.Release(ctx, d.eventID) }); rerr != nil {
				// The lease runs out on its own; the redelivery after it takes over.
				logger.WarnContext(ctx, "marker not released", "event", "marker_release_failed", "error", rerr)
			}
		}
		return enqueueFailed, nil
	}
	logger.InfoContext(ctx, "webhook accepted", "event", "webhook_accepted",
		"task_name", res.Name, "task_existed", res.Existed, "bytes", len(d.body),
		"duration_ms", s.deps.Now().Sub(start).Milliseconds())
	if !owned {
		return accepted, nil
	}
	return accepted, func() {
		if err := s.storeCall(ctx, func(ctx context.Context) error { return s.deps.Dedupe.Complete(ctx, d.eventID, res.Name) }); err != nil {
			// The task exists, so the event is safe; a redelivery after the lease finds the task
			// by name and completes the marker then.
			logger.WarnContext(ctx, "task created but marker not completed", "event", "marker_complete_failed", "error", err)
		}
	}
}

// claim runs mark_if_new. owned is true when this delivery holds the marker; the outcome is
// undecided when the delivery must go on to create the task (owned, or the store is down and
// DEDUPE_FAIL_MODE is open).
func (s *Server) claim(ctx context.Context, d delivery) (owned bool, o outcome) {
	logger := logging.FromContext(ctx)
	deadline := s.deps.Now().Add(s.deps.InFlightWait)
	for wait := 10 * time.Millisecond; ; wait = min(2*wait, 200*time.Millisecond) {
		var res dedupe.Result
		err := s.storeCall(ctx, func(ctx context.Context) error {
			var err error
			res, err = s.deps.Dedupe.Begin(ctx, d.eventID, d.correlationID)
			return err
		})
		if err != nil {
			if s.cfg.DedupeFailMode == FailOpen {
				// Fail open: without the marker the deterministic task name still dedupes
				// within Cloud Tasks' name reservation window.
				logger.ErrorContext(ctx, "dedupe store unreachable: enqueueing without a marker (DEDUPE_FAIL_MODE=open)",
					"event", "dedupe_unavailable", "fail_mode", FailOpen, "error", err)
				return false, undecided
			}
			logger.ErrorContext(ctx, "dedupe store unreachable: refusing so Meta redelivers (DEDUPE_FAIL_MODE=closed)",
				"event", "dedupe_unavailable", "fail_mode", FailClosed, "error", err)
			return false, storeUnavailable
		}
		switch res.Outcome {
		case dedupe.Acquired:
			if res.TakenOver {
				logger.WarnContext(ctx, "marker taken over from an earlier delivery", "event", "marker_taken_over", "attempt", res.Attempt)
			}
			return true, undecided
		case dedupe.Duplicate:
			logger.InfoContext(ctx, "duplicate delivery dropped", "event", "duplicate_dropped", "attempt", res.Attempt)
			return false, duplicate
		}
		// In flight: another delivery holds the lease. Its outcome is this one's answer.
		if !s.deps.Now().Add(wait).Before(deadline) {
			logger.WarnContext(ctx, "event in flight on another delivery: asking Meta to redeliver", "event", "event_in_flight")
			return false, inFlight
		}
		select {
		case <-ctx.Done():
			return false, inFlight
		case <-time.After(wait):
		}
	}
}

func (s *Server) storeCall(ctx context.Context, f func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, s.deps.StoreTimeout)
	defer cancel()
	return f(ctx)
}

// enqueue creates the event's inbound task.
func (s *Server) enqueue(ctx context.Context, d delivery) (taskqueue.Result, error) {
	task, err := s.buildTask(ctx, d)
	if err != nil {
		return taskqueue.Result{}, err
	}
	return s.deps.Tasks.Enqueue(ctx, task)
}

// buildTask makes the inbound task, moving a payload too large for a task out of band.
func (s *Server) buildTask(ctx context.Context, d delivery) (taskqueue.Task, error) {
	in := tasks.Inbound{InboundEventID: d.eventID, CorrelationID: d.correlationID, ReceivedAt: d.received}
	// Compact keeps the task small and readable; the signature was checked on the raw bytes.
	var compact bytes.Buffer
	if err := json.Compact(&compact, d.body); err != nil {
		return taskqueue.Task{}, fmt.Errorf("json.Compact: %w", err)
	}
	in.Payload = compact.Bytes()
	b, err := encodeTask(in)
	if err != nil {
		return taskqueue.Task{}, err
	}
	// The size that counts is the encoded task's, not the body's.
	if len(b) > tasks.MaxTaskBodyBytes {
		var ref string
		err := s.storeCall(ctx, func(ctx context.Context) error {
			var err error
			ref, err = s.deps.Payloads.Put(ctx, d.eventID, d.body)
			return err
		})
		if err != nil {
			return taskqueue.Task{}, fmt.Errorf("store payload out of band: %w", err)
		}
		in.Payload, in.PayloadRef = nil, ref
		if b, err = encodeTask(in); err != nil {
			return taskqueue.Task{}, err
		}
		logging.FromContext(ctx).InfoContext(ctx, "payload stored out of band", "event", "payload_out_of_band", "bytes", len(d.body))
	}
	return taskqueue.Task{
		Queue:         s.cfg.InboundQueue,
		ID:            tasks.InboundTaskID(d.eventID),
		Path:          tasks.ProcessInboundPath,
		Body:          b,
		CorrelationID: d.correlationID,
	}, nil
}

// encodeTask encodes a task body without HTML escaping, which would grow every <, > and & in a
// message to six bytes.
func encodeTask(in tasks.Inbound) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(in); err != nil {
		return nil, fmt.Errorf("encode inbound task: %w", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
