// Package geminifake is a fake of Vertex AI Gemini's generateContent for tests and the local
// stack. It answers
//
//	POST /{v1|v1beta1}/projects/{project}/locations/{location}/publishers/google/models/{model}:generateContent
//
// with a GenerateContentResponse exactly as Vertex AI does, so the official genai client
// (Vertex backend, BaseURL = the fake, no credentials) parses it unchanged. The answer's text
// is the JSON object of the assistant contract (intent, confidence, data, missing_fields,
// reply), chosen by scriptable rules that match the last user message; when no rule matches,
// the answer is general_query with a generic reply.
//
// It records every request, can fail the next calls with Vertex AI's error bodies (or answer
// them late, to simulate timeouts), and is safe for concurrent use. The same controls are
// served as JSON under /_fake/ so the local stack or a black-box test can drive a fake running
// in another process:
//
//	GET  /_fake/requests  {"requests":[…]}
//	GET  /_fake/rules     {"rules":[…]} in match order
//	POST /_fake/rules     {"rules":[{"contains":"book","response":{"intent":"create_booking",…}}]}
//	POST /_fake/reset
//	POST /_fake/fail      {"n":2,"status":429,"retry_after":"3","delay":"2s"}
//	POST /_fake/transcripts {"transcripts":[{"sha256":"<hex>","text":"book bus 01 …"}]}
//
// A request's inlineData parts (images, voice notes, documents) are decoded and recorded as
// Media (type, size, SHA-256), never kept: a test compares the hash with its file's. Rules can
// match on them (Rule.MIMEType, Rule.SHA256), and a transcript set for a file's hash is what the
// fake "hears" or "reads" in it: it is added to the text rules match, so a voice note saying
// "book bus 01 for Pak Agus on 1 March" books like the same text would.
package geminifake

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/wapipe/wapipe/internal/httpserver"
)

// GeneralQuery is the intent of the default answer.
const GeneralQuery = "general_query"

// Answer is the assistant object the fake's model answers (the contract's names).
type Answer struct {
	Intent        string         `json:"intent"`
	Confidence    float64        `json:"confidence"`
	Data          map[string]any `json:"data,omitempty"`
	MissingFields []string       `json:"missing_fields,omitempty"`
	Reply         string         `json:"reply"`
	Options       []AnswerOption `json:"options,omitempty"`
}

// AnswerOption is one choice of an answer's options.
type AnswerOption struct {
	ID          string `json:"id"`
	Title       string `json:"title"`
	Description string `json:"description,omitempty"`
}

// Call is what a rule sees of one generateContent request.
type Call struct {
	Model string
	// Text is the last user message (its text parts joined by newlines), followed by the
	// transcripts of its media.
	Text string
	// Media are the last user message's inline attachments.
	Media []Media
	// Intents is the enum of the response schema's "intent" property: the intents the
	// caller offered, general_query included. Nil when the request has no such schema.
	Intents []string
	// Now is the fake's clock.
	Now time.Time
}

// Offers reports whether the request's schema offers intent (true when it has no schema,
// since then anything goes).
func (c Call) Offers(intent string) bool {
	if c.Intents == nil {
		return true
	}
	for _, in := range c.Intents {
		if in == intent {
			return true
		}
	}
	return false
}

// Rule answers the calls whose last user message matches it. A rule with neither Contains nor
// Regexp matches every call; with both, both must match. The answer is RawText when set (for
// invalid-answer tests), else Respond's answer, else Response.
type Rule struct {
	// Name labels the rule in Request.Rule and GET /_fake/rules.
	Name string `json:"name,omitempty"`
	// Contains matches when the message contains it, ignoring case.
	Contains string `json:"contains,omitempty"`
	// Regexp (RE2 syntax) matches when it matches the message; add (?i) to ignore case.
	Regexp string `json:"regexp,omitempty"`
	// MIMEType, when set, matches only a message with an attachment of this type, or of this
	// type's prefix when it ends with "/" ("audio/").
	MIMEType string `json:"mime_type,omitempty"`
	// SHA256, when set, matches only a message with an attachment of this hash (hex).
	SHA256 string `json:"sha256,omitempty"`
	// Response is the answer, marshalled as the model's text.
	Response *Answer `json:"response,omitempty"`
	// RawText, when set, is sent verbatim as the model's text.
	RawText string `json:"raw_text,omitempty"`
	// FinishReason, when set, replaces STOP (e.g. MAX_TOKENS, SAFETY).
	FinishReason string `json:"finish_reason,omitempty"`
	// Respond computes the answer from the call (Go only; not settable over HTTP).
	Respond func(Call) Answer `json:"-"`

	re *regexp.Regexp
}

// compile checks r and compiles its Regexp.
func (r Rule) compile() (Rule, error) {
	if r.RawText == "" && r.Respond == nil && r.Response == nil {
		return r, errors.New("geminifake: a rule needs response, raw_text or Respond")
	}
	if r.Regexp != "" {
		re, err := regexp.Compile(r.Regexp)
		if err != nil {
			return r, fmt.Errorf("geminifake: rule regexp: %w", err)
		}
		r.re = re
	}
	return r, nil
}

func (r *Rule) matches(text string, media []Media) bool {
	if r.MIMEType != "" && !slices.ContainsFunc(media, func(m Media) bool {
		return m.MIMEType == r.MIMEType || strings.HasSuffix(r.MIMEType, "/") && strings.HasPrefix(m.MIMEType, r.MIMEType)
	}) {
		return false
	}
	if r.SHA256 != "" && !slices.ContainsFunc(media, func(m Media) bool { return strings.EqualFold(m.SHA256, r.SHA256) }) {
		return false
	}
	if r.Contains != "" && !strings.Contains(strings.ToLower(text), strings.ToLower(r.Contains)) {
		return false
	}
	return r.re == nil || r.re.MatchString(text)
}

// Failure is a scripted answer to the next call instead of the rule's.
type Failure struct {
	// Status is the HTTP status to answer (e.g. 500, 429, 400). Zero with a Delay answers
	// normally, only late.
	Status int `json:"status"`
	// Message replaces Vertex AI's usual message for Status.
	Message string `json:"message,omitempty"`
	// RetryAfter, when set, is sent as the Retry-After header.
	RetryAfter string `json:"retry_after,omitempty"`
	// Delay holds the answer back this long (or until the client gives up), to simulate a
	// slow or hung model. In JSON a Go duration string such as "2s".
	Delay time.Duration `json:"-"`
}

// Content is one recorded content of a request.
type Content struct {
	Role string `json:"role"`
	Text string `json:"text"`
	// Media are the content's inlineData parts, in order.
	Media []Media `json:"media,omitempty"`
}

// Media is one inlineData part as the fake received it: its declared type and what its bytes
// were (the bytes themselves are not kept).
type Media struct {
	MIMEType string `json:"mime_type"`
	// SHA256 is the hex SHA-256 of the decoded bytes.
	SHA256 string `json:"sha256"`
	Size   int    `json:"size"`
	// Valid is false when the data was not valid base64.
	Valid bool `json:"valid"`
}

// Request is one call the fake answered.
type Request struct {
	Time       time.Time `json:"time"`
	Method     string    `json:"method"`
	Path       string    `json:"path"`
	APIVersion string    `json:"api_version,omitempty"`
	Project    string    `json:"project,omitempty"`
	Location   string    `json:"location,omitempty"`
	Model      string    `json:"model,omitempty"`
	// SystemInstruction is the system instruction's text parts, joined by newlines.
	SystemInstruction string    `json:"system_instruction,omitempty"`
	Contents          []Content `json:"contents,omitempty"`
	// Text is the last user message, the one rules match (without transcripts).
	Text string `json:"text,omitempty"`
	// Media are the last user message's inlineData parts.
	Media []Media `json:"media,omitempty"`
	// GenerationConfig is the request's generationConfig as sent.
	GenerationConfig map[string]any `json:"generation_config,omitempty"`
	// ResponseSchema is generationConfig.responseSchema (or responseJsonSchema), nil when absent.
	ResponseSchema    map[string]any `json:"response_schema,omitempty"`
	HasResponseSchema bool           `json:"has_response_schema"`
	ResponseMIMEType  string         `json:"response_mime_type,omitempty"`
	// Rule is the name of the rule that answered, "default" when none matched, "" when the
	// call failed before a rule was chosen.
	Rule string `json:"rule,omitempty"`
	// Status is the HTTP status answered; 0 when the client gave up during a Delay.
	Status int `json:"status"`
	// PromptTokens and OutputTokens are the answer's usageMetadata (promptTokenCount,
	// candidatesTokenCount); zero when the call failed.
	PromptTokens int `json:"prompt_tokens,omitempty"`
	OutputTokens int `json:"output_tokens,omitempty"`
}

// Server is the fake. Its zero value is not usable; call New. It is safe for concurrent use.
type Server struct {
	now    func() time.Time
	models map[string]bool

	mu       sync.Mutex
	base     []Rule // from WithRules, kept by Reset
	rules    []Rule // added by AddRule, checked before base
	failures []Failure
	requests []Request
	// transcripts are what the fake finds in a media file, by hex SHA-256 (SetTranscript).
	transcripts map[string]string
	// changed is closed and replaced whenever requests change, waking every waiter.
	changed chan struct{}
}

// Option configures a Server.
type Option func(*Server)

// WithRules sets the base rules (for example DefaultRules()), which Reset keeps. Rules added
// later with AddRule are checked first. It panics on an invalid rule, like regexp.MustCompile.
func WithRules(rules ...Rule) Option {
	return func(s *Server) {
		for _, r := range rules {
			r, err := r.compile()
			if err != nil {
				panic(err)
			}
			s.base = append(s.base, r)
		}
	}
}

// WithTranscripts sets transcripts by hex SHA-256 (see SetTranscript), for example
// mediasample.Transcripts().
func WithTranscripts(transcripts map[string]string) Option {
	return func(s *Server) {
		for sum, text := range transcripts {
			s.SetTranscript(sum, text)
		}
	}
}

// WithClock sets the clock that stamps requests and that rules see as Call.Now.
func WithClock(now func() time.Time) Option { return func(s *Server) { s.now = now } }

// WithModels limits the models the fake knows; others get Vertex AI's 404 NOT_FOUND. By
// default every model exists.
func WithModels(models ...string) Option {
	return func(s *Server) {
		s.models = map[string]bool{}
		for _, m := range models {
			s.models[m] = true
		}
	}
}

// New returns a fake with no requests, no scripted failures and the rules of opts.
func New(opts ...Option) *Server {
	s := &Server{now: time.Now, changed: make(chan struct{})}
	for _, o := range opts {
		o(s)
	}
	return s
}

// NewTestServer starts the fake on an httptest server; its URL is the client's BaseURL.
// Close it when done.
func (s *Server) NewTestServer() *httptest.Server { return httptest.NewServer(s) }

// ListenAndServe answers on addr (host:port) until ctx ends, for the local stack.
func (s *Server) ListenAndServe(ctx context.Context, addr string) error {
	var lc net.ListenConfig
	l, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("geminifake listen: %w", err)
	}
	return s.Serve(ctx, l)
}

// Serve answers on l until ctx ends, then shuts down gracefully.
func (s *Server) Serve(ctx context.Context, l net.Listener) error {
	return httpserver.Serve(ctx, l, s, slog.New(slog.DiscardHandler))
}

// AddRule adds a rule after the rules added before it and ahead of the base rules.
func (s *Server) AddRule(r Rule) error {
	r, err := r.compile()
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rules = append(s.rules, r)
	return nil
}

// SetTranscript makes the fake find text in the media file whose hex SHA-256 is sha256Hex: a
// call carrying it is matched (and answered by Respond rules) as if text followed the message.
// Reset keeps transcripts.
func (s *Server) SetTranscript(sha256Hex, text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.transcripts == nil {
		s.transcripts = map[string]string{}
	}
	s.transcripts[strings.ToLower(sha256Hex)] = text
}

// heard is text followed by the transcripts of media.
func (s *Server) heard(text string, media []Media) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range media {
		if tr, ok := s.transcripts[m.SHA256]; ok {
			text = strings.TrimSpace(text + "\n" + tr)
		}
	}
	return text
}

// Rules returns the rules in match order.
func (s *Server) Rules() []Rule {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append(append([]Rule(nil), s.rules...), s.base...)
}

// FailNext makes the next n calls answer f instead. Failures queue up after earlier ones.
func (s *Server) FailNext(n int, f Failure) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for range n {
		s.failures = append(s.failures, f)
	}
}

// Reset forgets every request, scripted failure and added rule; the base rules stay.
func (s *Server) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rules, s.failures, s.requests = nil, nil, nil
	s.notifyLocked()
}

// Requests returns every recorded request, oldest first.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// WaitForRequests blocks until at least n requests were answered and returns them, or returns
// ctx's error with the requests so far.
func (s *Server) WaitForRequests(ctx context.Context, n int) ([]Request, error) {
	for {
		s.mu.Lock()
		if len(s.requests) >= n {
			rs := append([]Request(nil), s.requests...)
			s.mu.Unlock()
			return rs, nil
		}
		ch := s.changed
		s.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return s.Requests(), fmt.Errorf("geminifake wait: %w", ctx.Err())
		}
	}
}

func (s *Server) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

func (s *Server) record(r Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, r)
	s.notifyLocked()
}

func (s *Server) nextFailure() (Failure, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.failures) == 0 {
		return Failure{}, false
	}
	f := s.failures[0]
	s.failures = s.failures[1:]
	return f, true
}

// choose returns the first rule that matches text and media, or nil.
func (s *Server) choose(text string, media []Media) *Rule {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, list := range [][]Rule{s.rules, s.base} {
		for i := range list {
			if list[i].matches(text, media) {
				r := list[i]
				return &r
			}
		}
	}
	return nil
}

// generatePath matches Vertex AI's generateContent path.
var generatePath = regexp.MustCompile(`^/(v1|v1beta1)/projects/([^/]+)/locations/([^/]+)/publishers/google/models/([^/:]+):generateContent$`)

// ServeHTTP answers like Vertex AI, and serves the /_fake/ controls.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, "/_fake/") {
		s.serveAdmin(w, r)
		return
	}
	rec := Request{Time: s.now(), Method: r.Method, Path: r.URL.Path}
	status, body, header := s.answer(r, &rec)
	rec.Status = status
	s.record(rec)
	if status == 0 {
		return // the client is gone
	}
	for k, v := range header {
		w.Header().Set(k, v)
	}
	writeJSON(w, status, body)
}

// wireRequest is the part of a GenerateContentRequest the fake reads.
type wireRequest struct {
	Contents          []wireContent  `json:"contents"`
	SystemInstruction *wireContent   `json:"systemInstruction"`
	GenerationConfig  map[string]any `json:"generationConfig"`
}

type wireContent struct {
	Role  string     `json:"role"`
	Parts []wirePart `json:"parts"`
}

type wirePart struct {
	Text       string    `json:"text"`
	Thought    bool      `json:"thought"`
	InlineData *wireBlob `json:"inlineData"`
}

type wireBlob struct {
	MIMEType string `json:"mimeType"`
	Data     string `json:"data"`
}

// media describes c's inlineData parts.
func (c *wireContent) media() []Media {
	var out []Media
	for _, p := range c.Parts {
		if p.InlineData == nil {
			continue
		}
		b, err := base64.StdEncoding.DecodeString(p.InlineData.Data)
		sum := sha256.Sum256(b)
		out = append(out, Media{MIMEType: p.InlineData.MIMEType, SHA256: hex.EncodeToString(sum[:]), Size: len(b), Valid: err == nil})
	}
	return out
}

func (c *wireContent) text() string {
	var texts []string
	for _, p := range c.Parts {
		if p.Text != "" && !p.Thought {
			texts = append(texts, p.Text)
		}
	}
	return strings.Join(texts, "\n")
}

// answer decides the response to one call and fills rec.
func (s *Server) answer(r *http.Request, rec *Request) (int, any, map[string]string) {
	m := generatePath.FindStringSubmatch(r.URL.Path)
	if m == nil {
		return http.StatusNotFound, googleError(http.StatusNotFound, "The requested URL "+r.URL.Path+" was not found on this server."), nil
	}
	rec.APIVersion, rec.Project, rec.Location, rec.Model = m[1], m[2], m[3], m[4]
	if r.Method != http.MethodPost {
		return http.StatusNotFound, googleError(http.StatusNotFound, "Method not found."), nil
	}
	if s.models != nil && !s.models[rec.Model] {
		return http.StatusNotFound, googleError(http.StatusNotFound, fmt.Sprintf(
			"Publisher Model `projects/%s/locations/%s/publishers/google/models/%s` was not found or your project does not have access to it.",
			rec.Project, rec.Location, rec.Model)), nil
	}
	// Room for a 15 MiB attachment, base64-encoded (Vertex AI takes requests up to about 30 MB).
	raw, err := io.ReadAll(io.LimitReader(r.Body, 32<<20))
	if err != nil {
		return http.StatusBadRequest, googleError(http.StatusBadRequest, "Could not read the request body."), nil
	}
	var req wireRequest
	if err := json.Unmarshal(raw, &req); err != nil {
		return http.StatusBadRequest, googleError(http.StatusBadRequest, "Invalid JSON payload received."), nil
	}
	for i := range req.Contents {
		c := &req.Contents[i]
		rec.Contents = append(rec.Contents, Content{Role: c.Role, Text: c.text(), Media: c.media()})
		if c.Role == "user" || c.Role == "" {
			rec.Text, rec.Media = c.text(), c.media()
		}
	}
	if req.SystemInstruction != nil {
		rec.SystemInstruction = req.SystemInstruction.text()
	}
	rec.GenerationConfig = req.GenerationConfig
	rec.ResponseMIMEType, _ = req.GenerationConfig["responseMimeType"].(string)
	rec.ResponseSchema, _ = req.GenerationConfig["responseSchema"].(map[string]any)
	if rec.ResponseSchema == nil {
		rec.ResponseSchema, _ = req.GenerationConfig["responseJsonSchema"].(map[string]any)
	}
	rec.HasResponseSchema = rec.ResponseSchema != nil
	if len(req.Contents) == 0 {
		return http.StatusBadRequest, googleError(http.StatusBadRequest,
			"Unable to submit request because it must include at least one parts field, which describes the prompt input."), nil
	}

	if f, ok := s.nextFailure(); ok {
		if f.Delay > 0 {
			t := time.NewTimer(f.Delay)
			defer t.Stop()
			select {
			case <-t.C:
			case <-r.Context().Done():
				return 0, nil, nil
			}
		}
		if f.Status != 0 {
			h := map[string]string{}
			if f.RetryAfter != "" {
				h["Retry-After"] = f.RetryAfter
			}
			msg := f.Message
			if msg == "" {
				msg = defaultMessage(f.Status)
			}
			return f.Status, googleError(f.Status, msg), h
		}
	}

	for _, m := range rec.Media {
		if !m.Valid || m.MIMEType == "" {
			return http.StatusBadRequest, googleError(http.StatusBadRequest,
				"Invalid value at 'contents.parts.inline_data': the data must be base64 with a mime type."), nil
		}
	}
	heard := s.heard(rec.Text, rec.Media)
	call := Call{Model: rec.Model, Text: heard, Media: rec.Media, Intents: schemaIntents(rec.ResponseSchema), Now: s.now()}
	text, finish := "", "STOP"
	rec.Rule = "default"
	rule := s.choose(heard, rec.Media)
	switch {
	case rule == nil:
		text = marshalAnswer(defaultAnswer())
	case rule.RawText != "":
		text = rule.RawText
	case rule.Respond != nil:
		text = marshalAnswer(rule.Respond(call))
	default:
		text = marshalAnswer(*rule.Response)
	}
	if rule != nil {
		rec.Rule = rule.Name
		if rec.Rule == "" {
			rec.Rule = "unnamed"
		}
		if rule.FinishReason != "" {
			finish = rule.FinishReason
		}
	}
	return http.StatusOK, s.response(rec, text, finish), nil
}

// response is a GenerateContentResponse as Vertex AI sends it.
func (s *Server) response(rec *Request, text, finish string) map[string]any {
	promptChars := len(rec.SystemInstruction)
	for _, c := range rec.Contents {
		promptChars += len(c.Text)
	}
	prompt, out := tokens(promptChars), tokens(len(text))
	details := []any{map[string]any{"modality": "TEXT", "tokenCount": prompt}}
	if audio := audioTokens(rec.Media); audio > 0 {
		details = append(details, map[string]any{"modality": "AUDIO", "tokenCount": audio})
		prompt += audio
	}
	rec.PromptTokens, rec.OutputTokens = prompt, out
	return map[string]any{
		"candidates": []any{map[string]any{
			"content": map[string]any{
				"role":  "model",
				"parts": []any{map[string]any{"text": text}},
			},
			"finishReason": finish,
			"avgLogprobs":  -0.05,
		}},
		"usageMetadata": map[string]any{
			"promptTokenCount":        prompt,
			"candidatesTokenCount":    out,
			"totalTokenCount":         prompt + out,
			"trafficType":             "ON_DEMAND",
			"promptTokensDetails":     details,
			"candidatesTokensDetails": []any{map[string]any{"modality": "TEXT", "tokenCount": out}},
		},
		"modelVersion": rec.Model,
		"createTime":   s.now().UTC().Format(time.RFC3339Nano),
		"responseId":   newResponseID(),
	}
}

// audioTokens approximates Vertex AI's count of the audio files of a request: 32 tokens a
// second, a voice note being about 2 KB a second (16 kbit/s Opus).
func audioTokens(media []Media) int {
	n := 0
	for _, m := range media {
		if strings.HasPrefix(m.MIMEType, "audio/") {
			n += m.Size * 32 / 2000
		}
	}
	return n
}

// tokens approximates a token count: about four characters a token.
func tokens(chars int) int { return chars/4 + 1 }

func defaultAnswer() Answer {
	return Answer{Intent: GeneralQuery, Confidence: 0.9, Reply: "Hello! How can I help you?"}
}

func marshalAnswer(a Answer) string {
	b, err := json.Marshal(a)
	if err != nil {
		// Only a Data value that JSON cannot hold gets here: answer something the client
		// will reject, as a broken model would.
		return `{"error":"geminifake: cannot marshal the scripted answer"}`
	}
	return string(b)
}

// schemaIntents reads the enum of the schema's "intent" property.
func schemaIntents(schema map[string]any) []string {
	props, _ := schema["properties"].(map[string]any)
	intent, _ := props["intent"].(map[string]any)
	enum, ok := intent["enum"].([]any)
	if !ok {
		return nil
	}
	out := make([]string, 0, len(enum))
	for _, e := range enum {
		if s, ok := e.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// googleStatus is the canonical status Google APIs pair with an HTTP status.
var googleStatus = map[int]string{
	400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND",
	409: "ABORTED", 429: "RESOURCE_EXHAUSTED", 499: "CANCELLED", 500: "INTERNAL", 501: "UNIMPLEMENTED",
	503: "UNAVAILABLE", 504: "DEADLINE_EXCEEDED",
}

func defaultMessage(status int) string {
	switch status {
	case http.StatusTooManyRequests:
		return "Resource exhausted. Please try again later."
	case http.StatusInternalServerError:
		return "Internal error encountered."
	case http.StatusServiceUnavailable:
		return "The service is currently unavailable."
	case http.StatusGatewayTimeout:
		return "Deadline exceeded."
	case http.StatusBadRequest:
		return "Request contains an invalid argument."
	}
	return http.StatusText(status)
}

// googleError is the error body of Google APIs.
func googleError(status int, message string) map[string]any {
	st, ok := googleStatus[status]
	if !ok {
		st = "UNKNOWN"
	}
	return map[string]any{"error": map[string]any{"code": status, "message": message, "status": st}}
}

func newResponseID() string {
	var b [12]byte
	_, _ = rand.Read(b[:]) // never fails
	return hex.EncodeToString(b[:])
}

// serveAdmin serves the /_fake/ controls.
func (s *Server) serveAdmin(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path == "/_fake/requests" && r.Method == http.MethodGet:
		rs := s.Requests()
		if rs == nil {
			rs = []Request{}
		}
		writeJSON(w, http.StatusOK, map[string]any{"requests": rs})
	case r.URL.Path == "/_fake/rules" && r.Method == http.MethodGet:
		rs := s.Rules()
		if rs == nil {
			rs = []Rule{}
		}
		writeJSON(w, http.StatusOK, map[string]any{"rules": rs})
	case r.URL.Path == "/_fake/rules" && r.Method == http.MethodPost:
		var in struct {
			Rules []Rule `json:"rules"`
		}
		if err := decodeStrict(r, &in); err != nil || len(in.Rules) == 0 {
			writeJSON(w, http.StatusBadRequest, map[string]any{"error": `want {"rules":[{"contains"|"regexp", "response"|"raw_text"}]}`})
			return
		}
		compiled := make([]Rule, 0, len(in.Rules))
		for _, rule := range in.Rules {
			c, err := rule.compile()
			if err != nil {
				writeJSON(w, http.StatusBadRequest, map[string]any{"error": err.Error()})
				return
			}
			compiled = append(compiled, c)
		}
		s.mu.Lock()
		s.rules = append(s.rules, compiled...) // all or nothing
		s.mu.Unlock()
		writeJSON(w, http.StatusOK, map[string]any{"status": "ok"})
	case r.URL.Path == "/_fake/transcripts" && r.Method == http.MethodPost:
		var in struct {
			Transcripts []struct {
				SHA256 string `json:"sha256"`
				Text   string `json:"text"`
			} `json:"transcripts"`
		}
		if err := decodeStrict(r, &in); err != nil || len(in.Transcripts) == 0 {
			writeJSON(w, http.StatusBadRequest, map[string]any{"error": `want {"transcripts":[{"sha256":"<hex>","text":"…"}]}`})
			return
		}
		for _, tr := range in.Transcripts {
			if b, err := hex.DecodeString(tr.SHA256); err != nil || len(b) != sha256.Size {
				writeJSON(w, http.StatusBadRequest, map[string]any{"error": "sha256 must be 64 hex digits"})
				return
			}
		}
		for _, tr := range in.Transcripts {
			s.SetTranscript(tr.SHA256, tr.Text)
		}
		writeJSON(w, http.StatusOK, map[string]any{"status": "ok"})
	case r.URL.Path == "/_fake/reset" && r.Method == http.MethodPost:
		s.Reset()
		writeJSON(w, http.StatusOK, map[string]any{"status": "ok"})
	case r.URL.Path == "/_fake/fail" && r.Method == http.MethodPost:
		var in struct {
			N int    `json:"n"`
			D string `json:"delay"`
			Failure
		}
		err := decodeStrict(r, &in)
		if err == nil && in.D != "" {
			in.Delay, err = time.ParseDuration(in.D)
		}
		if err != nil || in.N < 1 || (in.Status == 0 && in.Delay <= 0) || (in.Status != 0 && (in.Status < 400 || in.Status > 599)) {
			writeJSON(w, http.StatusBadRequest, map[string]any{"error": `want {"n":>=1, "status":400-599 and/or "delay":"2s", "message", "retry_after"}`})
			return
		}
		s.FailNext(in.N, in.Failure)
		writeJSON(w, http.StatusOK, map[string]any{"status": "ok"})
	default:
		writeJSON(w, http.StatusNotFound, map[string]any{"error": "unknown fake control"})
	}
}

// decodeStrict decodes one JSON object and rejects unknown fields: a typo in a test script
// should fail loudly.
func decodeStrict(r *http.Request, v any) error {
	dec := json.NewDecoder(io.LimitReader(r.Body, 1<<20))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":"encode response"}`)
	}
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
