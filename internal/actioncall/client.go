package actioncall

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/wapipe/wapipe/internal/tenant"
)

// DefaultTimeout bounds one call, answer included (the contract's 10 s).
const DefaultTimeout = 10 * time.Second

// MaxAnswerBytes caps how much of an answer is read. A reply is one WhatsApp message; a larger
// body (an error page, a whole record echoed back) is ignored, and the status alone decides.
const MaxAnswerBytes = 64 << 10

// MaxReplyRunes is the longest reply kept: WhatsApp's limit for a text message body. A longer
// reply is cut, so the user gets the start of it rather than nothing.
const MaxReplyRunes = 4096

// UserAgent names wapipe in every call, so a business can tell its calls apart in its logs.
const UserAgent = "wapipe-action/1 (+https://github.com/wapipe/wapipe)"

// Client makes action calls. Build one per process with NewClient and share it; it is safe
// for concurrent use.
type Client struct {
	hc       *http.Client
	timeout  time.Duration
	now      func() time.Time
	dev      bool
	resolver Resolver
	wrap     func(http.RoundTripper) http.RoundTripper
}

// Option configures a Client.
type Option func(*Client)

// WithTimeout bounds each call (answer included) by d instead of DefaultTimeout.
func WithTimeout(d time.Duration) Option { return func(c *Client) { c.timeout = d } }

// WithTransportWrapper wraps the client's transport (for example in an otelhttp transport).
// The wrapper must send through the transport it is given, which holds the address checks;
// redirects stay disabled whatever it does.
func WithTransportWrapper(wrap func(http.RoundTripper) http.RoundTripper) Option {
	return func(c *Client) { c.wrap = wrap }
}

// WithDev lifts the address checks when dev is true (APP_ENV=dev): the local stack's
// business endpoint listens on loopback, over http.
func WithDev(dev bool) Option { return func(c *Client) { c.dev = dev } }

// WithResolver resolves action hosts with r instead of net.DefaultResolver (tests).
func WithResolver(r Resolver) Option { return func(c *Client) { c.resolver = r } }

// WithClock sets the clock that stamps signatures (and reads Retry-After dates).
func WithClock(now func() time.Time) Option { return func(c *Client) { c.now = now } }

// NewClient returns a client with DefaultTimeout that never follows redirects and, unless
// WithDev(true), calls only https:// URLs of public addresses: every address it connects to is
// checked (CheckAddr) at connection time, after its own DNS resolution, so neither the URL nor
// a DNS answer can point a call at the metadata server or the internal network.
func NewClient(opts ...Option) *Client {
	c := &Client{timeout: DefaultTimeout, now: time.Now}
	for _, o := range opts {
		o(c)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if !c.dev {
		// A proxy would be the address checked, not the business's.
		tr.Proxy = nil
		tr.DialContext = newPublicDialer(c.resolver).DialContext
	}
	var rt http.RoundTripper = tr
	if c.wrap != nil {
		rt = c.wrap(rt)
	}
	c.hc = &http.Client{
		Transport: rt,
		// The call carries a signature and the user's data: a redirect would replay both
		// to another address, so the 3xx itself is the answer (Failed).
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return c
}

// Call posts req to actionURL signed with secret and classifies the answer (see Kind).
//
// err is nil when the business answered Done or Refused, and an *Error (errors.Is
// ErrRetryable or ErrPermanent) exactly when the Kind is Retry or Failed; the Result is
// filled in every case. The Go transport may resend the request on its own when a reused
// connection turns out dead before any answer; the Idempotency-Key makes that harmless.
func (c *Client) Call(ctx context.Context, actionURL string, secret []byte, req Request) (Result, error) {
	u, msg := checkURL(actionURL)
	if msg != "" {
		return failed(&Error{Kind: ErrPermanent, Reason: msg, Err: ErrInvalidURL})
	}
	if !c.dev {
		if err := checkPublicForm(u); err != nil {
			return failed(notPublicError(err))
		}
	}
	if len(secret) == 0 {
		return failed(&Error{Kind: ErrPermanent, Reason: "the action secret is empty", Err: ErrInvalidRequest})
	}
	if msg := req.validate(); msg != "" {
		return failed(&Error{Kind: ErrPermanent, Reason: msg, Err: ErrInvalidRequest})
	}
	body, err := req.MarshalJSON()
	if err != nil {
		return failed(&Error{Kind: ErrPermanent, Reason: "data cannot be encoded as JSON",
			Err: fmt.Errorf("%w: %w", ErrInvalidRequest, err)})
	}

	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(body))
	if err != nil {
		return failed(&Error{Kind: ErrPermanent, Reason: "build request", Err: fmt.Errorf("%w: %w", ErrInvalidURL, err)})
	}
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set("User-Agent", UserAgent)
	hr.Header.Set(HeaderIdempotencyKey, req.ActionID)
	hr.Header.Set(HeaderSignature, Sign(secret, c.now(), req.ActionID, body))

	resp, err := c.hc.Do(hr)
	if errors.Is(err, ErrNotPublic) {
		// Asking again would resolve to the same kind of address: permanent, so the worker
		// dead-letters the action and tells the user instead of retrying it.
		return failed(notPublicError(err))
	}
	if err != nil {
		return Result{Kind: Retry}, &Error{Kind: ErrRetryable, Reason: transportReason(err, c.timeout), Err: err}
	}
	defer resp.Body.Close()

	res := Result{Kind: classifyStatus(resp.StatusCode), HTTPStatus: resp.StatusCode}
	switch res.Kind {
	case Done, Refused:
		res.Reply, res.Note = readReply(resp.Body)
		return res, nil
	case Retry:
		res.RetryAfter = parseRetryAfter(resp.Header.Get("Retry-After"), c.now())
		return res, &Error{Kind: ErrRetryable, HTTPStatus: resp.StatusCode, RetryAfter: res.RetryAfter,
			Reason: "the business could not answer now"}
	default:
		e := &Error{Kind: ErrPermanent, HTTPStatus: resp.StatusCode,
			Reason: "the answer's status means nothing to wapipe", Err: ErrUnexpectedStatus}
		if resp.StatusCode >= 300 && resp.StatusCode <= 399 {
			e.Reason, e.Err = "redirects are not followed: set action_url to the final URL", ErrRedirect
		}
		return res, e
	}
}

func failed(e *Error) (Result, error) { return Result{Kind: Failed}, e }

// notPublicError is the Failed error of a refused address, with the refusal's own text: err
// may be a *url.Error, which quotes the URL's query.
func notPublicError(err error) *Error {
	reason := "the address is not public"
	var ae *addrError
	if errors.As(err, &ae) {
		reason = ae.reason
	}
	return &Error{Kind: ErrPermanent, Reason: reason, Err: ErrNotPublic}
}

// transportReason describes a failed round trip without the URL that *url.Error quotes.
func transportReason(err error, timeout time.Duration) string {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Sprintf("no answer within %s", timeout)
	case errors.Is(err, context.Canceled):
		return "canceled"
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return "network error: " + err.Error()
}

// readReply reads the {"reply":"…"} of a Done or Refused answer. Anything else in the body is
// ignored, and a body that is not such an object gives no reply: the status has decided.
func readReply(body io.Reader) (reply, note string) {
	raw, err := io.ReadAll(io.LimitReader(body, MaxAnswerBytes+1))
	switch {
	case err != nil:
		return "", "answer body unreadable: ignored"
	case len(raw) > MaxAnswerBytes:
		return "", fmt.Sprintf("answer over %d KiB: ignored", MaxAnswerBytes>>10)
	case len(bytes.TrimSpace(raw)) == 0:
		return "", ""
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return "", "answer is not a JSON object: ignored"
	}
	r, ok := obj["reply"]
	if !ok || string(r) == "null" {
		return "", ""
	}
	if err := json.Unmarshal(r, &reply); err != nil {
		return "", "reply is not a string: ignored"
	}
	reply = strings.TrimSpace(reply)
	if utf8.RuneCountInString(reply) > MaxReplyRunes {
		n := 0
		for i := range reply {
			if n == MaxReplyRunes {
				reply = reply[:i]
				break
			}
			n++
		}
		note = fmt.Sprintf("reply cut to %d characters", MaxReplyRunes)
	}
	return reply, note
}

// CheckURL reports whether raw has the form of an action URL: an absolute https:// URL, or
// http:// to a loopback host (127.0.0.1, ::1, localhost) for local development, with no user
// or password. The error wraps ErrInvalidURL and does not quote raw. Outside dev the address
// must also be public (CheckPublicURL).
func CheckURL(raw string) error {
	if _, msg := checkURL(raw); msg != "" {
		return fmt.Errorf("%w: %s", ErrInvalidURL, msg)
	}
	return nil
}

// checkURL parses an action URL (tenant.ParseActionURL, the one check a tenant file and a call
// share) and returns what is wrong with it, or "".
func checkURL(raw string) (*url.URL, string) {
	u, err := tenant.ParseActionURL(raw)
	if err != nil {
		return nil, err.Error()
	}
	return u, ""
}
