// Package actionfake is a fake business endpoint for action calls, for tests and the local
// stack. It checks each call's X-Wapipe-Signature-256 with its secret as a business should
// (actioncall.Verify: the body, the Idempotency-Key and a t at most five minutes from its clock;
// 401 when it does not verify), records every call (headers, raw body, decoded request, verified flag, answer),
// and answers 200 {"reply":"Done: <intent> recorded"} unless told otherwise: the next answers
// can be scripted (status, reply, raw body, delay, Retry-After). With dedupe on it behaves like
// a careful business: the first final answer (2xx, or 4xx other than 408 and 429) for an
// Idempotency-Key is stored and given again to every later call with that key, without running
// the action or using the script; calls with one key are answered one at a time.
//
// The same controls are served as JSON under /_fake/ so the local stack or a black-box test
// can drive a fake running in another process:
//
//	GET  /_fake/calls   {"calls":[…]}
//	POST /_fake/reset   forgets calls, script and stored answers (not the secret or dedupe)
//	POST /_fake/script  {"n":2,"status":500,"delay":"2s","retry_after":"3"}
//	                    or {"answers":[{"status":409,"reply":"Bus 03 is already booked"}]}
//	POST /_fake/config  {"secret":"whsec_…","dedupe":true} (either field may be left out)
//
// It logs one line per call (intent, action_id, status) when given a logger, and never logs
// the secret, the body or the reply.
package actionfake

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/wapipe/wapipe/internal/actioncall"
	"github.com/wapipe/wapipe/internal/httpserver"
)

// maxBodyBytes caps a call's body; action bodies are a few hundred bytes.
const maxBodyBytes = 1 << 20

// Call is one call the fake answered.
type Call struct {
	Method string      `json:"method"`
	Path   string      `json:"path"`
	Header http.Header `json:"header"`
	// Body is the raw body as received.
	Body string `json:"body"`
	// Request is the decoded body; nil when the signature failed or the body is not an action
	// request.
	Request *actioncall.Request `json:"request,omitempty"`
	// IdempotencyKey is the Idempotency-Key header.
	IdempotencyKey string `json:"idempotency_key,omitempty"`
	// Intent is Request.Intent, for quick assertions and the log line.
	Intent string `json:"intent,omitempty"`
	// Verified reports whether the signature verified with the fake's secret.
	Verified bool `json:"verified"`
	// SignatureError says why the signature did not verify ("" when it did): a wrong key, a
	// changed Idempotency-Key or body, a stale t.
	SignatureError string `json:"signature_error,omitempty"`
	// Replayed reports that the answer was the stored answer of an earlier call with the same
	// Idempotency-Key (dedupe on): the action did not run again.
	Replayed bool `json:"replayed,omitempty"`
	// Status and Reply are what the fake answered.
	Status int       `json:"status"`
	Reply  string    `json:"reply,omitempty"`
	Time   time.Time `json:"time"`
}

// Answer is a scripted answer.
type Answer struct {
	// Status is the HTTP status; 0 means 200.
	Status int
	// Reply is sent as {"reply":Reply}; "" sends an empty body.
	Reply string
	// Body, when set, is sent as is instead of Reply (a non-JSON or oversized answer).
	Body string
	// Delay is waited before answering, or until the caller gives up (the answer is still
	// recorded and, with dedupe, stored: the action "ran" but its answer was lost).
	Delay time.Duration
	// RetryAfter, when set, is sent as the Retry-After header.
	RetryAfter string
}

// response is an answer ready to write.
type response struct {
	status     int
	body       []byte
	reply      string
	retryAfter string
	delay      time.Duration
}

// Fake is the fake business endpoint. Build it with New; it is safe for concurrent use.
type Fake struct {
	log *slog.Logger
	now func() time.Time

	mu     sync.Mutex
	secret []byte
	dedupe bool
	calls  []Call
	script []Answer
	stored map[string]response
	// keys serialises the calls of one Idempotency-Key (dedupe on): a channel of capacity 1
	// per key, held while a call of that key is answered.
	keys map[string]chan struct{}
	// changed is closed and replaced whenever calls change, waking every waiter.
	changed chan struct{}
}

// Option configures a Fake.
type Option func(*Fake)

// WithDedupe answers a repeated Idempotency-Key with its first final answer.
func WithDedupe() Option { return func(f *Fake) { f.dedupe = true } }

// WithLogger logs one line per call: intent, action_id, status, verified, replayed.
func WithLogger(l *slog.Logger) Option { return func(f *Fake) { f.log = l } }

// WithClock sets the clock that stamps calls and that signatures' t are checked against.
func WithClock(now func() time.Time) Option { return func(f *Fake) { f.now = now } }

// New returns a fake that verifies calls with secret, as printed by action-secret. With an
// empty secret every call is answered 401 until SetSecret.
func New(secret string, opts ...Option) *Fake {
	f := &Fake{
		secret: []byte(secret), now: time.Now,
		stored: map[string]response{}, keys: map[string]chan struct{}{},
		changed: make(chan struct{}),
	}
	for _, o := range opts {
		o(f)
	}
	return f
}

// NewTestServer starts the fake on an httptest server (127.0.0.1); any path but /_fake/ is
// the action URL. Close it when done.
func (f *Fake) NewTestServer() *httptest.Server { return httptest.NewServer(f) }

// Serve answers on l until ctx ends, then shuts down gracefully.
func (f *Fake) Serve(ctx context.Context, l net.Listener) error {
	return httpserver.Serve(ctx, l, f, slog.New(slog.DiscardHandler))
}

// SetSecret changes the secret calls are verified with.
func (f *Fake) SetSecret(secret string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.secret = []byte(secret)
}

// SetDedupe turns deduplication by Idempotency-Key on or off.
func (f *Fake) SetDedupe(on bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.dedupe = on
}

// Script queues answers for the next calls that reach the action (verified, well-formed,
// not replayed), after any already queued. When the script is empty the answer is
// 200 {"reply":"Done: <intent> recorded"}.
func (f *Fake) Script(answers ...Answer) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.script = append(f.script, answers...)
}

// Reset forgets every call, scripted answer and stored answer; the secret and dedupe stay.
func (f *Fake) Reset() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls, f.script = nil, nil
	f.stored, f.keys = map[string]response{}, map[string]chan struct{}{}
	f.notifyLocked()
}

// Calls returns every recorded call, in the order they were answered.
func (f *Fake) Calls() []Call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

// Executed returns the calls that ran the action: verified, not replayed, answered 2xx.
func (f *Fake) Executed() []Call {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []Call
	for _, c := range f.calls {
		if c.Verified && !c.Replayed && c.Status >= 200 && c.Status <= 299 {
			out = append(out, c)
		}
	}
	return out
}

// WaitForCalls blocks until at least n calls were answered and returns them all, or returns
// ctx's error with the calls so far.
func (f *Fake) WaitForCalls(ctx context.Context, n int) ([]Call, error) {
	for {
		f.mu.Lock()
		if len(f.calls) >= n {
			out := slices.Clone(f.calls)
			f.mu.Unlock()
			return out, nil
		}
		ch := f.changed
		f.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return f.Calls(), fmt.Errorf("actionfake wait for %d calls: %w", n, ctx.Err())
		}
	}
}

func (f *Fake) notifyLocked() {
	close(f.changed)
	f.changed = make(chan struct{})
}

// ServeHTTP answers an action call, or serves the /_fake/ controls.
func (f *Fake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, "/_fake/") {
		f.serveAdmin(w, r)
		return
	}
	c := Call{
		Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Time: f.now(),
		IdempotencyKey: r.Header.Get(actioncall.HeaderIdempotencyKey),
	}
	release := func() {}
	resp := f.answer(r, &c, &release)
	c.Status, c.Reply = resp.status, resp.reply
	f.mu.Lock()
	f.calls = append(f.calls, c)
	f.notifyLocked()
	f.mu.Unlock()
	// The key is released once the call is recorded, so calls of one key are recorded in the
	// order they were answered.
	release()
	if f.log != nil {
		f.log.InfoContext(r.Context(), "action call", "event", "actionfake.call", "intent", c.Intent,
			"action_id", c.IdempotencyKey, "status", c.Status, "verified", c.Verified, "replayed", c.Replayed)
	}
	if resp.retryAfter != "" {
		w.Header().Set("Retry-After", resp.retryAfter)
	}
	if len(resp.body) > 0 {
		w.Header().Set("Content-Type", "application/json")
	}
	w.WriteHeader(resp.status)
	_, _ = w.Write(resp.body)
}

// answer decides the answer to one call and fills c. With dedupe on it holds the call's
// Idempotency-Key and sets *release to free it for the next call with that key; the caller
// runs *release once the call is recorded.
func (f *Fake) answer(r *http.Request, c *Call, release *func()) response {
	if r.Method != http.MethodPost {
		return errorResponse(http.StatusMethodNotAllowed, "an action call is a POST")
	}
	raw, err := io.ReadAll(io.LimitReader(r.Body, maxBodyBytes))
	if err != nil {
		return errorResponse(http.StatusBadRequest, "unreadable body")
	}
	c.Body = string(raw)
	f.mu.Lock()
	secret, dedupe := f.secret, f.dedupe
	f.mu.Unlock()
	if err := actioncall.Verify(secret, raw, c.IdempotencyKey, r.Header.Get(actioncall.HeaderSignature), c.Time); err != nil {
		c.SignatureError = err.Error()
		if errors.Is(err, actioncall.ErrSignatureStale) {
			return errorResponse(http.StatusUnauthorized, "signature too old")
		}
		return errorResponse(http.StatusUnauthorized, "invalid signature")
	}
	c.Verified = true
	var req actioncall.Request
	if err := json.Unmarshal(raw, &req); err != nil {
		return errorResponse(http.StatusBadRequest, "the body is not an action request")
	}
	c.Request, c.Intent = &req, req.Intent
	switch {
	case c.IdempotencyKey == "":
		return errorResponse(http.StatusBadRequest, "Idempotency-Key is required")
	case c.IdempotencyKey != req.ActionID:
		return errorResponse(http.StatusBadRequest, "Idempotency-Key differs from action_id")
	}

	if dedupe {
		sem := f.keyLock(c.IdempotencyKey)
		// A free key is taken even when the caller has already left: the business runs what it
		// received (select would pick at random between the two ready cases).
		select {
		case sem <- struct{}{}:
		default:
			select {
			case sem <- struct{}{}:
			case <-r.Context().Done():
				return errorResponse(http.StatusServiceUnavailable, "the caller left while waiting")
			}
		}
		*release = func() { <-sem }
		f.mu.Lock()
		stored, ok := f.stored[c.IdempotencyKey]
		f.mu.Unlock()
		if ok {
			c.Replayed = true
			return stored
		}
	}

	resp := f.next(req.Intent)
	if resp.delay > 0 {
		t := time.NewTimer(resp.delay)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
		}
	}
	if dedupe && isFinal(resp.status) {
		f.mu.Lock()
		f.stored[c.IdempotencyKey] = resp
		f.mu.Unlock()
	}
	return resp
}

func (f *Fake) keyLock(key string) chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	sem, ok := f.keys[key]
	if !ok {
		sem = make(chan struct{}, 1)
		f.keys[key] = sem
	}
	return sem
}

// next takes the next scripted answer, or makes the default one.
func (f *Fake) next(intent string) response {
	f.mu.Lock()
	var a Answer
	scripted := len(f.script) > 0
	if scripted {
		a, f.script = f.script[0], f.script[1:]
	}
	f.mu.Unlock()
	if !scripted {
		a = Answer{Status: http.StatusOK, Reply: "Done: " + intent + " recorded"}
	}
	resp := response{status: a.Status, reply: a.Reply, retryAfter: a.RetryAfter, delay: a.Delay}
	if resp.status == 0 {
		resp.status = http.StatusOK
	}
	switch {
	case a.Body != "":
		resp.body, resp.reply = []byte(a.Body), ""
	case a.Reply != "":
		resp.body, _ = json.Marshal(map[string]string{"reply": a.Reply})
	}
	return resp
}

// isFinal reports whether a business would store this answer for its Idempotency-Key: the
// action ran (2xx) or was refused (4xx), not "come back later".
func isFinal(status int) bool {
	return (status >= 200 && status <= 299) ||
		(status >= 400 && status <= 499 && status != http.StatusRequestTimeout && status != http.StatusTooManyRequests)
}

func errorResponse(status int, msg string) response {
	b, _ := json.Marshal(map[string]string{"error": msg})
	return response{status: status, body: b}
}

// answerJSON is Answer in the /_fake/script body, with the delay as a Go duration string.
type answerJSON struct {
	Status     int    `json:"status"`
	Reply      string `json:"reply,omitempty"`
	Body       string `json:"body,omitempty"`
	Delay      string `json:"delay,omitempty"`
	RetryAfter string `json:"retry_after,omitempty"`
}

func (a answerJSON) answer() (Answer, error) {
	out := Answer{Status: a.Status, Reply: a.Reply, Body: a.Body, RetryAfter: a.RetryAfter}
	if a.Delay != "" {
		d, err := time.ParseDuration(a.Delay)
		if err != nil || d < 0 {
			return Answer{}, fmt.Errorf("delay %q is not a duration such as 2s", a.Delay)
		}
		out.Delay = d
	}
	if a.Status != 0 && (a.Status < 200 || a.Status > 599) {
		return Answer{}, fmt.Errorf("status %d is not 200 to 599", a.Status)
	}
	return out, nil
}

// serveAdmin serves the /_fake/ controls.
func (f *Fake) serveAdmin(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path == "/_fake/calls" && r.Method == http.MethodGet:
		calls := f.Calls()
		if calls == nil {
			calls = []Call{}
		}
		writeJSON(w, http.StatusOK, map[string]any{"calls": calls})
	case r.URL.Path == "/_fake/reset" && r.Method == http.MethodPost:
		f.Reset()
		writeJSON(w, http.StatusOK, map[string]any{"status": "ok"})
	case r.URL.Path == "/_fake/script" && r.Method == http.MethodPost:
		var in struct {
			N       int          `json:"n"`
			Answers []answerJSON `json:"answers"`
			answerJSON
		}
		if !decodeStrict(w, r, &in) {
			return
		}
		var src []answerJSON
		switch {
		case len(in.Answers) > 0 && in.N == 0:
			src = in.Answers
		case len(in.Answers) == 0 && in.N >= 1:
			src = slices.Repeat([]answerJSON{in.answerJSON}, in.N)
		default:
			writeJSON(w, http.StatusBadRequest, map[string]any{"error": `want {"n":N,"status":…} or {"answers":[…]}`})
			return
		}
		answers := make([]Answer, 0, len(src))
		for _, a := range src {
			ans, err := a.answer()
			if err != nil {
				writeJSON(w, http.StatusBadRequest, map[string]any{"error": err.Error()})
				return
			}
			answers = append(answers, ans)
		}
		f.Script(answers...)
		writeJSON(w, http.StatusOK, map[string]any{"status": "ok"})
	case r.URL.Path == "/_fake/config" && r.Method == http.MethodPost:
		var in struct {
			Secret *string `json:"secret"`
			Dedupe *bool   `json:"dedupe"`
		}
		if !decodeStrict(w, r, &in) {
			return
		}
		if in.Secret != nil {
			f.SetSecret(*in.Secret)
		}
		if in.Dedupe != nil {
			f.SetDedupe(*in.Dedupe)
		}
		writeJSON(w, http.StatusOK, map[string]any{"status": "ok"})
	default:
		writeJSON(w, http.StatusNotFound, map[string]any{"error": "unknown fake control"})
	}
}

// decodeStrict decodes one JSON object into v, answering 400 itself when it cannot: a typo in
// a test script should fail loudly.
func decodeStrict(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(io.LimitReader(r.Body, 1<<20))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": "want one JSON object with known fields"})
		return false
	}
	return true
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":"encode response"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
