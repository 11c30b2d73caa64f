// Package graphfake is a fake WhatsApp Cloud API (Graph API) for worker tests and the local
// stack. It answers POST /{version}/{phone-number-id}/messages (the version segment is
// optional) the way Meta does: a send gets a fresh wamid, a mark-as-read gets
// {"success":true}, a request without a Bearer token gets 401 with code 190. A send goes to a
// phone number ("to") or a business-scoped user id ("recipient"), and is refused like Meta
// refuses it when it names neither, puts a BSUID in "to", or sends an authentication template
// by BSUID (recipient.go). It records every request, can be told to fail the next calls with
// Meta's error bodies, and lets tests wait for sends without sleeping.
//
// The same controls are served as JSON under /_fake/ so a CLI or the local stack can drive a
// fake running in another process:
//
//	GET  /_fake/requests  {"requests":[…]}
//	POST /_fake/reset
//	POST /_fake/fail      {"n":2,"http_status":400,"code":130429,"retry_after":"3"}
//	POST /_fake/revoke_token {"token":"…"}
//	POST /_fake/media     the file as the body, its type as Content-Type → 201 MediaFile
//	POST /_fake/media/expire {"id":"…"}
//
// Media files (AddMedia, or POST /_fake/media) are served like Meta serves a customer's media:
// GET /{version}/{media-id} answers {"url","mime_type","sha256","file_size","id"}, and the url
// (on the fake's own host) answers the bytes; both refuse a wrong token (401, code 190). An
// expired id (ExpireMedia) gets Meta's unknown-object error on lookup and a 404 on download;
// FailWith with Kind KindMedia or KindDownload scripts an error (such as a 5xx) on either.
//
// POST /{version}/{phone-number-id}/media uploads a file as Meta's multipart form (upload.go);
// the id it answers then works in a lookup and download.
//
// GET /debug_token?input_token=… answers Meta's token description: every token is valid, with
// the WhatsApp scopes, unless revoked.
//
// Message templates (templates.go) are listed, created (PENDING) and deleted per WhatsApp
// Business Account; SetTemplateStatus, or POST /_fake/templates/status, approves or rejects one
// and posts Meta's signed message_template_status_update to the SetWebhook URL.
package graphfake

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/wapipe/wapipe/internal/httpserver"
	"github.com/wapipe/wapipe/internal/whatsapp"
)

// Request kinds.
const (
	KindSend  = "send"  // a message send
	KindRead  = "read"  // a mark-as-read
	KindOther = "other" // anything else (wrong path or method, unreadable body)
)

// Request is one call the fake answered.
type Request struct {
	Method string `json:"method"`
	Path   string `json:"path"`
	// Query is the raw query of a template call (a delete's name and hsm_id).
	Query         string `json:"query,omitempty"`
	PhoneNumberID string `json:"phone_number_id,omitempty"`
	Kind          string `json:"kind"`
	// Body is the decoded JSON body (numbers as json.Number); nil when it was not an object.
	Body map[string]any `json:"body,omitempty"`
	// RawBody is the body as received, for decoding into graph.Message.
	RawBody json.RawMessage `json:"-"`
	Time    time.Time       `json:"time"`
	// Status is the HTTP status the fake answered.
	Status int `json:"status"`
	// MessageID is the wamid a successful send returned.
	MessageID string `json:"message_id,omitempty"`
	// Recipient is the business-scoped user id a send named in "recipient" (also in Body), kept
	// apart so a test can tell a send by BSUID without digging in the body; empty when the send
	// named none.
	Recipient string `json:"recipient,omitempty"`
	// Token is the Bearer token the call carried, so a test can tell whose token a send used.
	// Never served by the admin endpoints.
	Token string `json:"-"`
	// MediaID is the id a media lookup or download asked for (media.go).
	MediaID string `json:"media_id,omitempty"`
	// BytesSent is how much of the file a download wrote before it ended or the client left;
	// set once Ended.
	BytesSent int64 `json:"bytes_sent,omitempty"`
	// Ended says a media call's answer is complete (a download's bytes all written or refused).
	Ended bool `json:"ended,omitempty"`
	// AnswerLost: the send was taken (Status 200, MessageID) but the client got a failure
	// instead (Failure.Taken).
	AnswerLost bool `json:"answer_lost,omitempty"`
	// Delayed is how long the answer was held (Failure.Delay).
	Delayed time.Duration `json:"delayed,omitempty"`
}

// Failure is a scripted error answer. Zero fields take Meta's usual values for Code.
type Failure struct {
	HTTPStatus int    `json:"http_status"`
	Code       int    `json:"code"`
	Subcode    int    `json:"subcode,omitempty"`
	Type       string `json:"type,omitempty"`
	Message    string `json:"message,omitempty"`
	Details    string `json:"details,omitempty"`
	// RetryAfter, when set, is sent as the Retry-After header (seconds or an HTTP date).
	RetryAfter string `json:"retry_after,omitempty"`
	// Kind, when set (KindSend, KindRead, KindMedia or KindDownload), limits the failure to calls
	// of that kind; other
	// calls pass it by. Empty fails the next call of any kind.
	Kind string `json:"kind,omitempty"`
	// Gateway answers as a front end in Meta's path does when Meta is down: HTTPStatus (502 when
	// zero) with a page, not Meta's error body, so nothing says whether the message was taken.
	Gateway bool `json:"gateway,omitempty"`
	// Taken: Meta took the send (it goes out, with a wamid, and Sends lists it) but its answer is
	// lost: the client gets the failure instead.
	Taken bool `json:"taken,omitempty"`
	// Delay holds the answer this long (the client's context ending stops it): longer than the
	// client's timeout, a timeout-shaped failure.
	Delay time.Duration `json:"delay,omitempty"`
}

// answerOf is the answer fl gives: Meta's error body, or a gateway's page.
func (fl Failure) answerOf() (int, any, map[string]string) {
	h := map[string]string{}
	if fl.RetryAfter != "" {
		h["Retry-After"] = fl.RetryAfter
	}
	if fl.Gateway {
		return fl.HTTPStatus, gatewayPage(fmt.Sprintf("<html><body><h1>%d %s</h1></body></html>", fl.HTTPStatus, http.StatusText(fl.HTTPStatus))), h
	}
	return fl.HTTPStatus, metaError(fl), h
}

// gatewayPage is an answer body that is not JSON.
type gatewayPage string

// Fake is the fake Graph API. Its zero value is not usable; call New. It is safe for
// concurrent use.
type Fake struct {
	token string
	now   func() time.Time

	mu       sync.Mutex
	requests []Request
	failures []Failure
	// changed is closed and replaced whenever requests change, waking every waiter.
	changed chan struct{}
	// revoked are the tokens RevokeToken revoked (debugtoken.go).
	revoked map[string]bool
	// accepted are the tokens AcceptToken added to WithToken's.
	accepted map[string]bool
	// signup is the Embedded Signup and send-rule state (signup.go).
	signup *signupState
	// media are the media files by id (media.go).
	media map[string]*mediaFile
	// tmpl are the message templates (templates.go).
	tmpl *templateState
}

// Option configures a Fake.
type Option func(*Fake)

// WithToken makes the fake accept only this access token (by default any Bearer token).
func WithToken(token string) Option { return func(f *Fake) { f.token = token } }

// AcceptToken makes a fake built WithToken accept token too: one fake serving several tenants,
// each with its own token.
func (f *Fake) AcceptToken(token string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.accepted == nil {
		f.accepted = map[string]bool{}
	}
	f.accepted[token] = true
}

// acceptsToken reports whether a call with tok is authenticated.
func (f *Fake) acceptsToken(tok string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return tok != "" && !f.revoked[tok] && (f.token == "" || tok == f.token || f.accepted[tok])
}

// WithClock sets the clock that stamps requests.
func WithClock(now func() time.Time) Option { return func(f *Fake) { f.now = now } }

// New returns a fake with no requests and no scripted failures.
func New(opts ...Option) *Fake {
	f := &Fake{now: time.Now, changed: make(chan struct{})}
	for _, o := range opts {
		o(f)
	}
	return f
}

// NewTestServer starts the fake on an httptest server; its URL is the base URL for the
// client, e.g. srv.URL + "/" + graph.Version. Close it when done.
func (f *Fake) NewTestServer() *httptest.Server { return httptest.NewServer(f) }

// Serve answers on l until ctx ends, then shuts down gracefully.
func (f *Fake) Serve(ctx context.Context, l net.Listener) error {
	return httpserver.Serve(ctx, l, f, slog.New(slog.DiscardHandler))
}

// Requests returns every recorded request, oldest first.
func (f *Fake) Requests() []Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Request(nil), f.requests...)
}

// Sends returns the message sends the fake accepted (status 200), oldest first: the messages
// that "went out". Failed attempts are in Requests.
func (f *Fake) Sends() []Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.sendsLocked()
}

func (f *Fake) sendsLocked() []Request {
	var out []Request
	for _, r := range f.requests {
		if r.Kind == KindSend && r.Status == http.StatusOK {
			out = append(out, r)
		}
	}
	return out
}

// Reset forgets every request and scripted failure.
func (f *Fake) Reset() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests, f.failures = nil, nil
	f.notifyLocked()
}

// FailNext makes the next n API calls (sends and reads) fail with httpStatus and Meta's error
// body for metaCode.
func (f *Fake) FailNext(n, httpStatus, metaCode int) {
	f.FailWith(n, Failure{HTTPStatus: httpStatus, Code: metaCode})
}

// FailWith makes the next n API calls fail with fl. Failures queue up after earlier ones.
func (f *Fake) FailWith(n int, fl Failure) {
	fl = fl.withDefaults()
	f.mu.Lock()
	defer f.mu.Unlock()
	for range n {
		f.failures = append(f.failures, fl)
	}
}

// WaitForSends blocks until at least n sends were accepted (see Sends) and returns them, or
// returns ctx's error with the sends so far.
func (f *Fake) WaitForSends(ctx context.Context, n int) ([]Request, error) {
	return f.wait(ctx, func() []Request {
		if s := f.sendsLocked(); len(s) >= n {
			return s
		}
		return nil
	}, f.Sends)
}

// WaitForRequests blocks until at least n requests of any kind were answered.
func (f *Fake) WaitForRequests(ctx context.Context, n int) ([]Request, error) {
	return f.wait(ctx, func() []Request {
		if len(f.requests) >= n {
			return append([]Request(nil), f.requests...)
		}
		return nil
	}, f.Requests)
}

func (f *Fake) wait(ctx context.Context, done func() []Request, sofar func() []Request) ([]Request, error) {
	for {
		f.mu.Lock()
		if rs := done(); rs != nil {
			f.mu.Unlock()
			return rs, nil
		}
		ch := f.changed
		f.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return sofar(), fmt.Errorf("graphfake wait: %w", ctx.Err())
		}
	}
}

func (f *Fake) notifyLocked() {
	close(f.changed)
	f.changed = make(chan struct{})
}

// record appends r and returns its index.
func (f *Fake) record(r Request) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests = append(f.requests, r)
	f.notifyLocked()
	return len(f.requests) - 1
}

// nextFailure takes the first queued failure that applies to a call of this kind.
func (f *Fake) nextFailure(kind string) (Failure, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, fl := range f.failures {
		if fl.Kind == "" || fl.Kind == kind {
			f.failures = append(f.failures[:i:i], f.failures[i+1:]...)
			return fl, true
		}
	}
	return Failure{}, false
}

// messagesPath matches /{version}/{phone_number_id}/messages and /{phone_number_id}/messages.
var messagesPath = regexp.MustCompile(`^(?:/v[0-9]+(?:\.[0-9]+)?)?/([^/]+)/messages/?$`)

// ServeHTTP answers like the Graph API, and serves the /_fake/ controls.
func (f *Fake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, "/_fake/") {
		f.serveAdmin(w, r)
		return
	}
	if f.serveDebugToken(w, r) || f.serveSignup(w, r) || f.serveUpload(w, r) || f.serveMedia(w, r) || f.serveTemplates(w, r) {
		return
	}
	rec := Request{Method: r.Method, Path: r.URL.Path, Kind: KindOther, Time: f.now()}
	status, resp, header := f.answer(r, &rec)
	rec.Status = status
	if rec.AnswerLost {
		// Meta took it: it went out, whatever the client hears.
		rec.Status = http.StatusOK
	}
	f.record(rec)
	if rec.Delayed > 0 {
		select {
		case <-time.After(rec.Delayed):
		case <-r.Context().Done():
			return
		}
	}
	for k, v := range header {
		w.Header().Set(k, v)
	}
	if page, ok := resp.(gatewayPage); ok {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, string(page))
		return
	}
	writeJSON(w, status, resp)
}

// answer decides the response to one API call and fills rec.
func (f *Fake) answer(r *http.Request, rec *Request) (int, any, map[string]string) {
	m := messagesPath.FindStringSubmatch(r.URL.Path)
	if m == nil {
		return http.StatusBadRequest, metaError(Failure{Code: 100, Type: "GraphMethodException",
			Message: "Unsupported " + strings.ToLower(r.Method) + " request. Object does not exist or does not support this operation"}), nil
	}
	rec.PhoneNumberID = m[1]
	if r.Method != http.MethodPost {
		return http.StatusBadRequest, metaError(Failure{Code: 100, Type: "GraphMethodException",
			Message: "Unsupported " + strings.ToLower(r.Method) + " request"}), nil
	}
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	rec.Token = tok
	if !ok || !f.acceptsToken(tok) {
		fl := Failure{HTTPStatus: http.StatusUnauthorized, Code: 190}.withDefaults()
		if !ok || tok == "" {
			fl.Message = "An active access token must be used to query information about the current user."
		}
		return fl.HTTPStatus, metaError(fl), nil
	}
	raw, err := io.ReadAll(io.LimitReader(r.Body, 4<<20))
	if err != nil {
		return http.StatusBadRequest, metaError(Failure{Code: 100, Message: "(#100) Could not read the request body"}.withDefaults()), nil
	}
	rec.RawBody = raw
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.UseNumber()
	if err := dec.Decode(&rec.Body); err != nil || rec.Body == nil {
		rec.Body = nil
		return http.StatusBadRequest, metaError(Failure{Code: 100, Message: "(#100) Invalid parameter",
			Details: "The request body must be a JSON object"}.withDefaults()), nil
	}
	if rec.Body["status"] == "read" {
		rec.Kind = KindRead
	} else {
		rec.Kind = KindSend
		rec.Recipient, _ = rec.Body["recipient"].(string)
	}
	var lost *Failure
	if fl, ok := f.nextFailure(rec.Kind); ok {
		rec.Delayed = fl.Delay
		if !fl.Taken || rec.Kind != KindSend {
			return fl.answerOf()
		}
		lost = &fl
	}
	if fl, ok := f.sendRule(rec.PhoneNumberID, tok, rec.Body); ok && rec.Kind == KindSend { // signup.go
		return fl.HTTPStatus, metaError(fl), nil
	}
	if rec.Body["messaging_product"] != "whatsapp" {
		return http.StatusBadRequest, metaError(Failure{Code: 100, Message: "(#100) The parameter messaging_product is required."}.withDefaults()), nil
	}
	if rec.Kind == KindRead {
		if id, _ := rec.Body["message_id"].(string); id == "" {
			return http.StatusBadRequest, metaError(Failure{Code: 100, Message: "(#100) The parameter message_id is required."}.withDefaults()), nil
		}
		return http.StatusOK, map[string]any{"success": true}, nil
	}
	addr, fl, refused := sendAddress(rec.Body) // recipient.go
	if refused {
		return fl.HTTPStatus, metaError(fl), nil
	}
	if fl, refused := f.userIDRule(addr, rec.Body); refused {
		return fl.HTTPStatus, metaError(fl), nil
	}
	rec.MessageID = whatsapp.NewMessageID()
	if lost != nil {
		rec.AnswerLost = true
		return lost.answerOf()
	}
	return http.StatusOK, map[string]any{
		"messaging_product": "whatsapp",
		"contacts":          addr.contacts(),
		"messages":          []any{map[string]any{"id": rec.MessageID}},
	}, nil
}

// waID is the WhatsApp id Meta reports for an input number: its digits.
func waID(to string) string {
	var b strings.Builder
	for _, c := range to {
		if c >= '0' && c <= '9' {
			b.WriteRune(c)
		}
	}
	return b.String()
}

// knownErrors are Meta's messages for the codes tests script most.
var knownErrors = map[int]struct {
	status  int
	message string
	details string
}{
	1:      {http.StatusInternalServerError, "An unknown error occurred", "Invalid request or possible server error."},
	2:      {http.StatusServiceUnavailable, "Service temporarily unavailable", "Temporary due to downtime or due to being overloaded."},
	4:      {http.StatusBadRequest, "(#4) Application request limit reached", "The app has reached its API call rate limit."},
	10:     {http.StatusForbidden, "(#10) Application does not have permission for this action", "Permission is either not granted or has been removed."},
	100:    {http.StatusBadRequest, "(#100) Invalid parameter", "The request included one or more unsupported or misspelled parameters."},
	190:    {http.StatusUnauthorized, "Error validating access token: Session has expired.", "The access token has expired."},
	80007:  {http.StatusBadRequest, "(#80007) Rate limit issues", "The WhatsApp Business Account has reached its rate limit."},
	130429: {http.StatusBadRequest, "(#130429) Rate limit hit", "Cloud API message throughput has been reached."},
	131000: {http.StatusInternalServerError, "(#131000) Something went wrong", "Message failed to send due to an unknown error."},
	131016: {http.StatusServiceUnavailable, "(#131016) Service unavailable", "A service is temporarily unavailable."},
	131026: {http.StatusBadRequest, "(#131026) Message undeliverable", "Unable to deliver message."},
	131047: {http.StatusBadRequest, "(#131047) Re-engagement message", "More than 24 hours have passed since the recipient last replied to the sender number."},
	131051: {http.StatusBadRequest, "(#131051) Unsupported message type", "Unsupported message type."},
	131052: {http.StatusBadRequest, "(#131052) Media download error", "Unable to download the media sent by the user."},
	131053: {http.StatusBadRequest, "(#131053) Media upload error", "Unable to upload the media used in the message."},
	131062: {http.StatusBadRequest, errUserIDNotAllowed.Message, errUserIDNotAllowed.Details},
	131056: {http.StatusBadRequest, "(#131056) (Business Account, Consumer Account) pair rate limit hit", "Too many messages sent from the sender phone number to the same recipient phone number in a short period of time."},
	133004: {http.StatusServiceUnavailable, "(#133004) Server temporarily unavailable", "Server is temporarily unavailable."},
}

func (fl Failure) withDefaults() Failure {
	if fl.Gateway && fl.HTTPStatus == 0 {
		fl.HTTPStatus = http.StatusBadGateway
	}
	k, ok := knownErrors[fl.Code]
	if fl.HTTPStatus == 0 {
		fl.HTTPStatus = http.StatusBadRequest
		if ok {
			fl.HTTPStatus = k.status
		}
	}
	if fl.Type == "" {
		fl.Type = "OAuthException"
	}
	if fl.Message == "" {
		fl.Message = fmt.Sprintf("(#%d) Error", fl.Code)
		if ok {
			fl.Message = k.message
		}
	}
	if fl.Details == "" && ok {
		fl.Details = k.details
	}
	return fl
}

// metaError is Meta's error body for fl.
func metaError(fl Failure) map[string]any {
	e := map[string]any{
		"message":    fl.Message,
		"type":       fl.Type,
		"code":       fl.Code,
		"fbtrace_id": newTraceID(),
	}
	if fl.Subcode != 0 {
		e["error_subcode"] = fl.Subcode
	}
	if fl.Details != "" {
		e["error_data"] = map[string]any{"messaging_product": "whatsapp", "details": fl.Details}
	}
	return map[string]any{"error": e}
}

func newTraceID() string {
	var b [18]byte
	_, _ = rand.Read(b[:]) // never fails
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// serveAdmin serves the /_fake/ controls.
func (f *Fake) serveAdmin(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path == "/_fake/requests" && r.Method == http.MethodGet:
		rs := f.Requests()
		if rs == nil {
			rs = []Request{}
		}
		writeJSON(w, http.StatusOK, map[string]any{"requests": rs})
	case r.URL.Path == "/_fake/reset" && r.Method == http.MethodPost:
		f.Reset()
		writeJSON(w, http.StatusOK, map[string]any{"status": "ok"})
	case r.URL.Path == "/_fake/fail" && r.Method == http.MethodPost:
		var in struct {
			N int `json:"n"`
			Failure
		}
		dec := json.NewDecoder(io.LimitReader(r.Body, 1<<20))
		dec.DisallowUnknownFields() // a typo in a test script should fail loudly
		if err := dec.Decode(&in); err != nil || in.N < 1 {
			writeJSON(w, http.StatusBadRequest, map[string]any{"error": "want a JSON object with n >= 1, http_status, code"})
			return
		}
		f.FailWith(in.N, in.Failure)
		writeJSON(w, http.StatusOK, map[string]any{"status": "ok"})
	case r.URL.Path == "/_fake/media" || r.URL.Path == "/_fake/media/expire":
		f.serveMediaAdmin(w, r)
	case strings.HasPrefix(r.URL.Path, "/_fake/templates"):
		f.serveTemplateAdmin(w, r)
	case r.URL.Path == "/_fake/revoke_token":
		f.serveRevoke(w, r)
	default:
		writeJSON(w, http.StatusNotFound, map[string]any{"error": "unknown fake control"})
	}
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
