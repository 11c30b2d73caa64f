package webhook

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"

	"github.com/wapipe/wapipe/internal/dedupe"
	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/internal/taskqueue"
	"github.com/wapipe/wapipe/internal/whatsapp"
	"github.com/wapipe/wapipe/tasks"
)

// MaxBodyBytes caps a webhook body. Meta sends up to 3 MB.
const MaxBodyBytes = 4 << 20

// Path is the webhook route Meta is configured with.
const Path = "/webhooks/whatsapp"

// Deduper is mark_if_new and its follow-ups; *store.Markers implements it.
type Deduper interface {
	Begin(ctx context.Context, eventID, correlationID string) (dedupe.Result, error)
	Complete(ctx context.Context, eventID, taskName string) error
	Release(ctx context.Context, eventID string) error
}

// PayloadStore keeps payloads too large for a task; *store.Payloads implements it.
type PayloadStore interface {
	Put(ctx context.Context, eventID string, body []byte) (string, error)
}

// Enqueuer creates tasks; *taskqueue.Client implements it.
type Enqueuer interface {
	Enqueue(ctx context.Context, t taskqueue.Task) (taskqueue.Result, error)
}

// Deps are the webhook's dependencies.
type Deps struct {
	Dedupe   Deduper
	Payloads PayloadStore
	Tasks    Enqueuer
	Logger   *slog.Logger
	// Now is time.Now when nil.
	Now func() time.Time
	// StoreTimeout bounds each dedupe store call; 5 s when zero. An unreachable store is
	// detected by this deadline.
	StoreTimeout time.Duration
	// InFlightWait is how long a delivery waits for another delivery of the same event that
	// holds the lease; 2 s when zero.
	InFlightWait time.Duration
}

// Server is the webhook service.
type Server struct {
	cfg  *Config
	deps Deps
}

// NewServer returns the webhook service for cfg, which must have been validated.
func NewServer(cfg *Config, deps Deps) *Server {
	if deps.Logger == nil {
		deps.Logger = slog.Default()
	}
	if deps.Now == nil {
		deps.Now = time.Now
	}
	if deps.StoreTimeout == 0 {
		deps.StoreTimeout = 5 * time.Second
	}
	if deps.InFlightWait == 0 {
		deps.InFlightWait = 2 * time.Second
	}
	return &Server{cfg: cfg, deps: deps}
}

// Routes returns the service's handler with its middleware.
func (s *Server) Routes() http.Handler {
	r := chi.NewRouter()
	r.Use(middleware.Recoverer)
	r.Use(s.withLogger)
	r.Get("/healthz", func(w http.ResponseWriter, _ *http.Request) { writeText(w, http.StatusOK, "ok") })
	r.Method(http.MethodGet, Path, s.handleVerify())
	r.Method(http.MethodPost, Path, s.handleEvent())
	return otelhttp.NewHandler(r, "webhook",
		otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string { return r.Method + " " + r.URL.Path }))
}

func (s *Server) withLogger(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(w, r.WithContext(logging.WithLogger(r.Context(), s.deps.Logger)))
	})
}

// handleVerify answers Meta's subscription handshake.
func (s *Server) handleVerify() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		logger := logging.FromContext(r.Context())
		token := q.Get("hub.verify_token")
		if q.Get("hub.mode") != "subscribe" || token == "" ||
			subtle.ConstantTimeCompare([]byte(token), []byte(s.cfg.VerifyToken)) != 1 {
			logger.WarnContext(r.Context(), "subscription handshake refused", "event", "verify_refused", "mode", q.Get("hub.mode"))
			writeText(w, http.StatusForbidden, "forbidden")
			return
		}
		logger.InfoContext(r.Context(), "subscription handshake accepted", "event", "verify_accepted")
		writeText(w, http.StatusOK, q.Get("hub.challenge"))
	})
}

var correlationIDPattern = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,128}$`)

// handleEvent takes one delivery: verify, parse, dedupe, enqueue, answer.
func (s *Server) handleEvent() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		received := s.deps.Now().UTC()
		correlationID := r.Header.Get(tasks.HeaderCorrelationID)
		if !correlationIDPattern.MatchString(correlationID) {
			correlationID = newID()
		}
		ctx, logger := logging.With(r.Context(), "correlation_id", correlationID)
		w.Header().Set(tasks.HeaderCorrelationID, correlationID)

		if r.ContentLength > MaxBodyBytes {
			logger.WarnContext(ctx, "body over the size cap", "event", "body_too_large", "content_length", r.ContentLength)
			writeJSON(w, http.StatusRequestEntityTooLarge, statusBody{Status: "error", Error: "body_too_large"})
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
		if err != nil {
			var tooLarge *http.MaxBytesError
			if errors.As(err, &tooLarge) {
				logger.WarnContext(ctx, "body over the size cap", "event", "body_too_large")
				writeJSON(w, http.StatusRequestEntityTooLarge, statusBody{Status: "error", Error: "body_too_large"})
				return
			}
			logger.WarnContext(ctx, "reading body failed", "event", "body_read_failed", "error", err)
			writeJSON(w, http.StatusBadRequest, statusBody{Status: "error", Error: "body_unreadable"})
			return
		}
		if !VerifySignature(r.Header.Get("X-Hub-Signature-256"), body, s.cfg.AppSecret) {
			logger.WarnContext(ctx, "signature missing or wrong", "event", "signature_invalid",
				"signature_present", r.Header.Get("X-Hub-Signature-256") != "", "bytes", len(body))
			writeJSON(w, http.StatusUnauthorized, statusBody{Status: "error", Error: "invalid_signature"})
			return
		}
		payload, err := whatsapp.Parse(body)
		if err != nil {
			logger.WarnContext(ctx, "malformed payload", "event", "payload_malformed", "bytes", len(body), "error", err)
			writeJSON(w, http.StatusBadRequest, statusBody{Status: "error", Error: "malformed_payload"})
			return
		}
		eventID, err := whatsapp.InboundEventID(body, payload)
		if err != nil {
			logger.WarnContext(ctx, "no inbound_event_id", "event", "payload_malformed", "error", err)
			writeJSON(w, http.StatusBadRequest, statusBody{Status: "error", Error: "malformed_payload"})
			return
		}
		ctx, logger = logging.With(ctx, "inbound_event_id", eventID)

		// Meta may give up on this request; the event's state must still end consistent, so the
		// rest runs to completion on its own deadline.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		code, resp, after := s.accept(ctx, logger, eventID, correlationID, received, body)
		writeJSON(w, code, resp)
		if after != nil {
			// Meta has its answer; recording it in the marker is not on its clock.
			_ = http.NewResponseController(w).Flush()
			after()
		}
	})
}

type statusBody struct {
	Status string `json:"status"`
	Error  string `json:"error,omitempty"`
}

// accept runs mark_if_new and creates the inbound task. It answers 200 only once the task exists;
// the returned function, when not nil, completes the marker and runs after the answer is sent.
func (s *Server) accept(ctx context.Context, logger *slog.Logger, eventID, correlationID string, received time.Time, body []byte) (int, statusBody, func()) {
	start := s.deps.Now()
	owned, code, resp := s.claim(ctx, logger, eventID, correlationID)
	if code != 0 {
		return code, resp, nil
	}

	task, err := s.buildTask(ctx, logger, eventID, correlationID, received, body)
	if err == nil {
		var res taskqueue.Result
		res, err = s.deps.Tasks.Enqueue(ctx, task)
		if err == nil {
			logger.InfoContext(ctx, "webhook accepted", "event", "webhook_accepted",
				"task_name", res.Name, "task_existed", res.Existed, "bytes", len(body),
				"duration_ms", s.deps.Now().Sub(start).Milliseconds())
			complete := func() {
				if !owned {
					return
				}
				if err := s.storeCall(ctx, func(ctx context.Context) error { return s.deps.Dedupe.Complete(ctx, eventID, res.Name) }); err != nil {
					// The task exists, so the event is safe; a redelivery after the lease
					// finds the task by name and completes the marker then.
					logger.WarnContext(ctx, "task created but marker not completed", "event", "marker_complete_failed", "error", err)
				}
			}
			return http.StatusOK, statusBody{Status: "accepted"}, complete
		}
	}

	logger.ErrorContext(ctx, "inbound task not created: Meta will redeliver", "event", "enqueue_failed", "error", err)
	if owned {
		if rerr := s.storeCall(ctx, func(ctx context.Context) error { return s.deps.Dedupe.Release(ctx, eventID) }); rerr != nil {
			// The lease runs out on its own; the redelivery after it takes over.
			logger.WarnContext(ctx, "marker not released", "event", "marker_release_failed", "error", rerr)
		}
	}
	return http.StatusServiceUnavailable, statusBody{Status: "error", Error: "enqueue_failed"}, nil
}

// claim runs mark_if_new. It returns owned=true when this delivery holds the marker, or a non-zero
// status code when the answer is already known.
func (s *Server) claim(ctx context.Context, logger *slog.Logger, eventID, correlationID string) (owned bool, code int, resp statusBody) {
	deadline := s.deps.Now().Add(s.deps.InFlightWait)
	for wait := 10 * time.Millisecond; ; wait = min(2*wait, 200*time.Millisecond) {
		var res dedupe.Result
		err := s.storeCall(ctx, func(ctx context.Context) error {
			var err error
			res, err = s.deps.Dedupe.Begin(ctx, eventID, correlationID)
			return err
		})
		if err != nil {
			if s.cfg.DedupeFailMode == FailOpen {
				// Fail open: without the marker the deterministic task name still dedupes
				// within Cloud Tasks' name reservation window.
				logger.ErrorContext(ctx, "dedupe store unreachable: enqueueing without a marker (DEDUPE_FAIL_MODE=open)",
					"event", "dedupe_unavailable", "fail_mode", FailOpen, "error", err)
				return false, 0, statusBody{}
			}
			logger.ErrorContext(ctx, "dedupe store unreachable: refusing so Meta redelivers (DEDUPE_FAIL_MODE=closed)",
				"event", "dedupe_unavailable", "fail_mode", FailClosed, "error", err)
			return false, http.StatusInternalServerError, statusBody{Status: "error", Error: "dedupe_unavailable"}
		}
		switch res.Outcome {
		case dedupe.Acquired:
			if res.TakenOver {
				logger.WarnContext(ctx, "marker taken over from an earlier delivery", "event", "marker_taken_over", "attempt", res.Attempt)
			}
			return true, 0, statusBody{}
		case dedupe.Duplicate:
			logger.InfoContext(ctx, "duplicate delivery dropped", "event", "duplicate_dropped", "attempt", res.Attempt)
			return false, http.StatusOK, statusBody{Status: "duplicate"}
		}
		// In flight: another delivery holds the lease. Its outcome is this one's answer.
		if !s.deps.Now().Add(wait).Before(deadline) {
			logger.WarnContext(ctx, "event in flight on another delivery: asking Meta to redeliver", "event", "event_in_flight")
			return false, http.StatusServiceUnavailable, statusBody{Status: "error", Error: "event_in_flight"}
		}
		select {
		case <-ctx.Done():
			return false, http.StatusServiceUnavailable, statusBody{Status: "error", Error: "event_in_flight"}
		case <-time.After(wait):
		}
	}
}

func (s *Server) storeCall(ctx context.Context, f func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, s.deps.StoreTimeout)
	defer cancel()
	return f(ctx)
}

// buildTask makes the inbound task, moving a payload too large for a task out of band.
func (s *Server) buildTask(ctx context.Context, logger *slog.Logger, eventID, correlationID string, received time.Time, body []byte) (taskqueue.Task, error) {
	in := tasks.Inbound{InboundEventID: eventID, CorrelationID: correlationID, ReceivedAt: received}
	// Compact keeps the task small and readable; the signature was checked on the raw bytes.
	var compact bytes.Buffer
	if err := json.Compact(&compact, body); err != nil {
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
			ref, err = s.deps.Payloads.Put(ctx, eventID, body)
			return err
		})
		if err != nil {
			return taskqueue.Task{}, fmt.Errorf("store payload out of band: %w", err)
		}
		in.Payload, in.PayloadRef = nil, ref
		if b, err = encodeTask(in); err != nil {
			return taskqueue.Task{}, err
		}
		logger.InfoContext(ctx, "payload stored out of band", "event", "payload_out_of_band", "bytes", len(body))
	}
	return taskqueue.Task{
		Queue:         s.cfg.InboundQueue,
		ID:            tasks.InboundTaskID(eventID),
		Path:          tasks.ProcessInboundPath,
		Body:          b,
		CorrelationID: correlationID,
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

// VerifySignature checks X-Hub-Signature-256 ("sha256=<hex>") over the raw body in constant time.
func VerifySignature(header string, body []byte, secret string) bool {
	hexSig, ok := strings.CutPrefix(header, "sha256=")
	if !ok {
		return false
	}
	got, err := hex.DecodeString(hexSig)
	if err != nil || len(got) != sha256.Size {
		return false
	}
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	return hmac.Equal(got, mac.Sum(nil))
}

// Sign returns the X-Hub-Signature-256 value Meta would send for body.
func Sign(body []byte, secret string) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

func newID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func writeText(w http.ResponseWriter, code int, s string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(code)
	_, _ = io.WriteString(w, s)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		code, b = http.StatusInternalServerError, []byte(`{"status":"error","error":"internal"}`)
	}
	b = append(b, '\n')
	w.Header().Set("Content-Type", "application/json")
	// A declared length lets the client finish reading before the handler returns.
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(code)
	_, _ = w.Write(b)
}
