package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"time"
	"unicode/utf8"

	"github.com/wapipe/wapipe/internal/httpserver"
	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/internal/ratelimit"
	"github.com/wapipe/wapipe/internal/taskqueue"
	"github.com/wapipe/wapipe/internal/whatsapp"
	"github.com/wapipe/wapipe/tasks"
)

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
		// Middleware has checked the caller's correlation id (or made one), answered it in
		// X-Correlation-ID and put it in the context's logger.
		ctx := r.Context()
		correlationID := httpserver.CorrelationID(ctx)

		d, o, release := s.readDelivery(ctx, w, r)
		// The body's bytes stay charged to the budget until the delivery is done with them.
		defer release()
		if o != undecided {
			respond(w, o)
			return
		}
		d.correlationID, d.received = correlationID, received
		ctx, _ = logging.With(ctx, logging.EventID(d.eventID))

		// Meta may give up on this request; the calls still run to their own budget, so a task
		// created just as Meta disconnects is not left half-made.
		respond(w, s.accept(context.WithoutCancel(ctx), d))
	})
}

// readDelivery checks the signature header's form, reads the body under the size cap (its pace
// bounded by s.bodies around this handler, its bytes charged to MAX_INFLIGHT_BODY_BYTES as they
// arrive, and to the client address's share, WEBHOOK_UNVERIFIED_BYTES_PER_ADDRESS, until its
// signature is checked), checks its signature and derives its inbound_event_id. The outcome is
// undecided when the delivery may go on; release gives the charged bytes back (always callable).
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
	// The address as Google's front end saw it (the last X-Forwarded-For entry); in dev, the
	// connection's. Never logged.
	client := ratelimit.ClientAddr(r, !s.cfg.IsDev())
	body, verified, release, err := s.deps.Bodies.ReadAllFrom(w, r, MaxBodyBytes, client)
	if err != nil {
		var tooLong *http.MaxBytesError
		switch {
		case errors.As(err, &tooLong):
			logger.WarnContext(ctx, "body over the size cap", "event", "body_too_large")
			return delivery{}, tooLarge, release
		case errors.Is(err, httpserver.ErrBodyTimeout):
			logger.WarnContext(ctx, "body arrived too slowly: cut off", "event", "body_timeout",
				"content_length", r.ContentLength, "error", err)
			return delivery{}, tooSlow, release
		case errors.Is(err, httpserver.ErrClientOverloaded):
			// Only this address waits: its unverified bodies hold its whole share.
			logger.WarnContext(ctx, "too many unverified body bytes from one address: asking it to redeliver", "event", "body_budget_exhausted",
				"scope", "address", "content_length", r.ContentLength, "unverified_bytes_per_address", s.cfg.UnverifiedBytesPerAddress)
			return delivery{}, overloaded, release
		case errors.Is(err, httpserver.ErrOverloaded):
			logger.WarnContext(ctx, "too many body bytes in flight: asking Meta to redeliver", "event", "body_budget_exhausted",
				"scope", "service", "content_length", r.ContentLength, "max_inflight_body_bytes", s.cfg.MaxInflightBodyBytes)
			return delivery{}, overloaded, release
		}
		logger.WarnContext(ctx, "reading body failed", "event", "body_read_failed", "error", err)
		return delivery{}, unreadable, release
	}
	d, o = s.checkDelivery(ctx, sig, body)
	if o == undecided {
		// Signed by Meta: the body no longer counts against its address's share.
		verified()
	}
	return d, o, release
}

// checkDelivery checks the body's signature and derives its inbound_event_id.
func (s *Server) checkDelivery(ctx context.Context, sig string, body []byte) (delivery, outcome) {
	logger := logging.FromContext(ctx)
	if !whatsapp.VerifySignature(sig, body, s.cfg.AppSecret) {
		logger.WarnContext(ctx, "signature does not match the body", "event", "signature_invalid",
			"signature_present", true, "bytes", len(body))
		return delivery{}, badSignature
	}
	// Only the id is decoded here; the worker parses the payload.
	eventID, err := whatsapp.EventID(body)
	if err != nil {
		logger.WarnContext(ctx, "malformed payload", "event", "payload_malformed", "bytes", len(body), "error", err)
		return delivery{}, malformed
	}
	return delivery{body: body, eventID: eventID}, undecided
}

// accept runs mark_if_new and creates the inbound task, within the call budget: the answer is
// accepted (or duplicate) only once the task exists.
//
// A delivery that finds the event marked creates the task again by its deterministic name: when
// Cloud Tasks answers AlreadyExists the event was queued before (a duplicate); otherwise the
// earlier delivery never created it (its instance died between marker and task, or CreateTask
// failed) and this delivery just did. No completion is written: the task's name is the record.
func (s *Server) accept(ctx context.Context, d delivery) outcome {
	logger := logging.FromContext(ctx)
	start := time.Now()
	deadline := start.Add(s.deps.CallBudget)
	isNew, o := s.claim(ctx, d, start.Add(s.deps.CallBudget*2/3))
	if o != undecided {
		return o
	}
	res, err := s.enqueue(ctx, d, deadline)
	if err != nil {
		// The marker stays: Meta's redelivery finds it and creates the task by name.
		logger.ErrorContext(ctx, "inbound task not created: Meta will redeliver", "event", "enqueue_failed", "error", err)
		return enqueueFailed
	}
	if !isNew && res.Existed {
		logger.InfoContext(ctx, "duplicate delivery dropped", "event", "duplicate_dropped")
		return duplicate
	}
	if !isNew {
		logger.WarnContext(ctx, "event marked earlier but its task was missing: created now", "event", "task_recreated",
			"task_name", res.Name)
	}
	logger.InfoContext(ctx, "webhook accepted", "event", "webhook_accepted",
		"task_name", res.Name, "task_existed", res.Existed, "bytes", len(d.body),
		"duration_ms", time.Since(start).Milliseconds())
	return accepted
}

// latest returns the later of two times.
func latest(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// claim runs mark_if_new, bounded by deadline. isNew is true when this delivery marked the event;
// the outcome is undecided when the delivery must go on to create the task (always, unless the
// store is down and DEDUPE_FAIL_MODE is closed).
func (s *Server) claim(ctx context.Context, d delivery, deadline time.Time) (isNew bool, o outcome) {
	logger := logging.FromContext(ctx)
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	isNew, err := s.deps.Dedupe.MarkIfNew(ctx, d.eventID, d.correlationID)
	if err == nil {
		return isNew, undecided
	}
	if s.cfg.DedupeFailMode == FailOpen {
		// Fail open: without the marker the deterministic task name still dedupes within Cloud
		// Tasks' name reservation window.
		logger.ErrorContext(ctx, "dedupe store unreachable: enqueueing without a marker (DEDUPE_FAIL_MODE=open)",
			"event", "dedupe_unavailable", "fail_mode", FailOpen, "error", err)
		return true, undecided
	}
	logger.ErrorContext(ctx, "dedupe store unreachable: refusing so Meta redelivers (DEDUPE_FAIL_MODE=closed)",
		"event", "dedupe_unavailable", "fail_mode", FailClosed, "error", err)
	return false, storeUnavailable
}

// enqueue creates the event's inbound task, by deadline. CreateTask always gets a fair share of
// the budget, so fail open still enqueues when the store call took all of its own.
func (s *Server) enqueue(ctx context.Context, d delivery, deadline time.Time) (taskqueue.Result, error) {
	task, err := s.buildTask(ctx, d)
	if err != nil {
		return taskqueue.Result{}, err
	}
	ctx, cancel := context.WithDeadline(ctx, latest(deadline, time.Now().Add(s.deps.CallBudget/3)))
	defer cancel()
	return s.deps.Tasks.Enqueue(ctx, task)
}

// buildTask makes the inbound task, moving a payload too large for a task out of band.
func (s *Server) buildTask(ctx context.Context, d delivery) (taskqueue.Task, error) {
	in := tasks.Inbound{InboundEventID: d.eventID, CorrelationID: d.correlationID, ReceivedAt: d.received}
	b, err := appendInbound(make([]byte, 0, len(d.body)+len(d.eventID)+len(d.correlationID)+128), in, d.body)
	if err != nil {
		return taskqueue.Task{}, err
	}
	// The size that counts is the encoded task's, not the body's.
	if len(b) > tasks.MaxTaskBodyBytes {
		ref, err := s.putPayload(ctx, d)
		if err != nil {
			return taskqueue.Task{}, fmt.Errorf("store payload out of band: %w", err)
		}
		in.PayloadRef = ref
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

// appendInbound appends the inbound task body for in with payload compacted into it: the bytes
// encoding/json would make (without HTML escaping), in one buffer instead of a compacted copy of
// the payload and an encoder's buffer, which validates and compacts the payload once more.
func appendInbound(b []byte, in tasks.Inbound, payload []byte) ([]byte, error) {
	b = append(b, `{"inbound_event_id":`...)
	b = appendString(b, in.InboundEventID)
	b = append(b, `,"correlation_id":`...)
	b = appendString(b, in.CorrelationID)
	b = append(b, `,"received_at":"`...)
	b = in.ReceivedAt.AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","payload":`...)
	// Compact keeps the task small and readable; the signature was checked on the raw bytes.
	buf := bytes.NewBuffer(b)
	if err := json.Compact(buf, payload); err != nil {
		return nil, fmt.Errorf("json.Compact: %w", err)
	}
	return append(buf.Bytes(), '}'), nil
}

// appendString appends s as a JSON string as encoding/json writes it without HTML escaping. The
// strings here are an event id and a correlation id: the loop is short.
func appendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i, r := range s {
		switch {
		case r == utf8.RuneError && invalidAt(s, i):
			b = append(b, `\ufffd`...)
		case r == '"' || r == '\\':
			b = append(b, '\\', byte(r))
		case r == '\n':
			b = append(b, '\\', 'n')
		case r == '\r':
			b = append(b, '\\', 'r')
		case r == '\t':
			b = append(b, '\\', 't')
		case r == '\b':
			b = append(b, '\\', 'b')
		case r == '\f':
			b = append(b, '\\', 'f')
		case r < 0x20 || r == '\u2028' || r == '\u2029':
			b = append(b, '\\', 'u', hex[r>>12&0xF], hex[r>>8&0xF], hex[r>>4&0xF], hex[r&0xF])
		default:
			b = utf8.AppendRune(b, r)
		}
	}
	return append(b, '"')
}

// invalidAt reports whether s holds invalid UTF-8 at i (which encoding/json writes as \ufffd,
// unlike a U+FFFD written in full).
func invalidAt(s string, i int) bool {
	_, n := utf8.DecodeRuneInString(s[i:])
	return n == 1
}

// putPayload stores a payload out of band. Bodies over a megabyte are rare and writing one takes
// longer than the call budget allows, so the write has its own timeout, inside Meta's.
func (s *Server) putPayload(ctx context.Context, d delivery) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, s.deps.PayloadTimeout)
	defer cancel()
	return s.deps.Payloads.Put(ctx, d.eventID, d.body)
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
