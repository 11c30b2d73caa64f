package graph

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Kind says what a caller should do about a failed call.
type Kind int

const (
	// KindNone is the Kind of a nil error.
	KindNone Kind = iota
	// Permanent: the same request will fail again (bad parameters, undeliverable, outside the
	// 24-hour window, unsupported media…). Do not retry.
	Permanent
	// Temporary: Meta or the network failed; the same request may succeed later.
	Temporary
	// Throttled: a rate limit was hit; retry later, after RetryAfter when Meta gave one.
	Throttled
	// Auth: the access token is invalid, expired or lacks a permission. Retrying will not help
	// until an operator fixes the token, so it is not retryable, but it is kept apart from
	// Permanent because it fails every message, not just this one.
	Auth
)

func (k Kind) String() string {
	switch k {
	case KindNone:
		return "none"
	case Permanent:
		return "permanent"
	case Temporary:
		return "temporary"
	case Throttled:
		return "throttled"
	case Auth:
		return "auth"
	default:
		return "Kind(" + strconv.Itoa(int(k)) + ")"
	}
}

// Error is a failed Graph API call: Meta's error body when it sent one, the HTTP status, and
// the classification.
type Error struct {
	// HTTPStatus is the response status; 0 when no response arrived (network error, timeout).
	HTTPStatus int
	// Code, Subcode, Type, Message, Details and FBTraceID are Meta's error fields. Code is 0
	// when the response had no Meta error body.
	Code      int
	Subcode   int
	Type      string
	Message   string
	Details   string
	FBTraceID string
	// RetryAfter is the response's Retry-After, 0 when absent.
	RetryAfter time.Duration
	// Kind is the classification; see Classify.
	Kind Kind
	// NotSent is true when the request provably never left (no connection could be made: DNS,
	// dial or TLS handshake failed); see NotSent.
	NotSent bool

	// err is the underlying cause for transport failures and undecodable responses.
	err error
}

// Error describes the failure for logs: HTTP status, Meta's code, subcode, type and message,
// and the fbtrace_id Meta support asks for. Meta's message names the error ("(#131026)
// Message undeliverable"); long digit runs and what has the shape of a business-scoped user id
// are masked in it, in case it ever echoes a phone number or a BSUID, and Details, which can
// quote request parameters, is left out.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("graph api: ")
	if e.HTTPStatus == 0 {
		b.WriteString("no response")
	} else {
		fmt.Fprintf(&b, "HTTP %d", e.HTTPStatus)
	}
	if e.Code != 0 || e.Type != "" {
		fmt.Fprintf(&b, ", code %d", e.Code)
		if e.Subcode != 0 {
			fmt.Fprintf(&b, "/%d", e.Subcode)
		}
		if e.Type != "" {
			fmt.Fprintf(&b, " (%s)", e.Type)
		}
	}
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(maskDigits(maskUserIDs(e.Message)))
	}
	if e.err != nil {
		b.WriteString(": ")
		b.WriteString(e.err.Error())
	}
	fmt.Fprintf(&b, " [%s", e.Kind)
	if e.NotSent {
		b.WriteString(", not sent")
	}
	if e.RetryAfter > 0 {
		fmt.Fprintf(&b, ", retry after %s", e.RetryAfter)
	}
	if e.FBTraceID != "" {
		fmt.Fprintf(&b, ", fbtrace_id=%s", e.FBTraceID)
	}
	b.WriteString("]")
	return b.String()
}

// Unwrap returns the transport or decoding error behind e, if any.
func (e *Error) Unwrap() error { return e.err }

// userIDs finds what has the shape of a BSUID or parent BSUID ("US.1349…", "US.ENT.ab12…")
// with a digit in it, as the log checks do: a person's id belongs in no log line, and Meta's
// messages about sends by "recipient" may quote it.
var userIDs = regexp.MustCompile(`\b[A-Z]{2}\.(?:ENT\.)?[A-Za-z0-9]*[0-9][A-Za-z0-9]*`)

// maskUserIDs hides what looks like a BSUID in s.
func maskUserIDs(s string) string { return userIDs.ReplaceAllString(s, "[redacted]") }

var longDigits = regexp.MustCompile(`\+?[0-9][0-9 ()-]{6,}[0-9]`)

// maskDigits hides runs of 8 or more digits (phone numbers are 8–15). Meta's own codes are at
// most 6 digits, so "(#131026)" stays readable.
func maskDigits(s string) string {
	return longDigits.ReplaceAllStringFunc(s, func(m string) string {
		n := 0
		for _, c := range m {
			if c >= '0' && c <= '9' {
				n++
			}
		}
		if n < 8 {
			return m
		}
		return "[redacted]"
	})
}

// Meta's error codes by what to do about them
// (https://developers.facebook.com/docs/whatsapp/cloud-api/support/error-codes).
var (
	throttledCodes = map[int]bool{
		4:      true, // API Too Many Calls: app-level rate limit
		80007:  true, // Rate limit issues: WABA rate limit
		130429: true, // Rate limit hit: Cloud API throughput reached
		131056: true, // (Business, Consumer) pair rate limit hit: too many messages to one user
		133016: true, // Account register/deregister rate limit exceeded
		// Spam rate limit hit: Meta restricts how many messages the number may send until its
		// quality recovers. The message is not at fault, so it is retried, with longBackoffs.
		131048: true,
	}
	// longBackoffs are the least a caller waits before retrying a throttled code whose limit
	// lifts slowly, when Meta's answer carries no Retry-After: retrying 131048 on the queue's
	// usual backoff (seconds) would only burn attempts against a limit that lasts hours.
	longBackoffs = map[int]time.Duration{
		131048: 10 * time.Minute,
	}
	temporaryCodes = map[int]bool{
		1:      true, // API Unknown: "invalid request or possible server error"; Meta says retry
		2:      true, // API Service: temporary downtime or overload
		131000: true, // Something went wrong: unknown error, "try again"
		131016: true, // Service unavailable
		131057: true, // Business account is in maintenance mode
		133004: true, // Server temporarily unavailable
	}
	authCodes = map[int]bool{
		0:      true, // AuthException
		3:      true, // API Method: capability or permission issue
		10:     true, // Permission denied
		190:    true, // Access token has expired / is invalid
		131005: true, // Access denied: permission not granted or removed
	}
	// permanentCodes are those that stay permanent even when Meta answers them with a 5xx:
	// they describe the request or the recipient, not Meta's health. Other codes answered with
	// 4xx are permanent too; this list only matters for 5xx.
	permanentCodes = map[int]bool{
		100:    true, // Invalid parameter
		131008: true, // Required parameter is missing
		131009: true, // Parameter value is not valid
		131021: true, // Recipient cannot be sender
		131026: true, // Message undeliverable
		131047: true, // Re-engagement message: more than 24 hours since the last reply
		131051: true, // Unsupported message type
		131052: true, // Media download error
		131053: true, // Media upload error
		// Business-scoped user id not allowed for this message: an authentication template with
		// a one-tap, zero-tap or copy-code button was sent by "recipient" (a BSUID). It goes
		// only to a phone number (see RequiresPhone), so resending it the same way cannot help.
		131062: true,
		132000: true, // Template parameter count mismatch
		132001: true, // Template does not exist
		132015: true, // Template is paused (low quality)
		132016: true, // Template is disabled
		368:    true, // Temporarily blocked for policy violations
	}
)

// classify decides the Kind of a Graph API error response: Meta's code first (Meta answers
// throttling such as 130429 and 131056 with HTTP 400, and permission errors with 400 too), the
// HTTP status when the code says nothing. hasCode is false when the body was not Meta's error
// object (then code 0 means nothing, not AuthException).
func classify(httpStatus, code int, hasCode bool) Kind {
	if hasCode {
		switch {
		case throttledCodes[code]:
			return Throttled
		case temporaryCodes[code]:
			return Temporary
		case authCodes[code], code >= 200 && code <= 299: // 200–299: API permission errors
			return Auth
		case permanentCodes[code]:
			return Permanent
		}
	}
	switch {
	case httpStatus == http.StatusTooManyRequests:
		return Throttled
	case httpStatus >= 500:
		return Temporary
	case !hasCode && (httpStatus == http.StatusUnauthorized || httpStatus == http.StatusForbidden):
		return Auth
	case httpStatus == http.StatusRequestTimeout:
		return Temporary
	default:
		return Permanent
	}
}

// Classify returns what kind of failure err is: the Kind of a *Error in its chain; Temporary
// for timeouts, cancellations and network errors (the request may not have reached Meta, or
// its answer was lost); Permanent for anything else, such as an invalid message rejected
// before sending; KindNone for nil.
func Classify(err error) Kind {
	if err == nil {
		return KindNone
	}
	var ge *Error
	if errors.As(err, &ge) {
		return ge.Kind
	}
	if isTransient(err) {
		return Temporary
	}
	return Permanent
}

// IsRetryable reports whether retrying the same call later may succeed: Throttled or
// Temporary.
func IsRetryable(err error) bool {
	k := Classify(err)
	return k == Throttled || k == Temporary
}

// RetryAfter returns how long to wait before retrying err: the Retry-After Meta sent with it, or,
// when Meta sent none, the long backoff its code calls for (10 minutes for 131048, the spam rate
// limit); 0 when neither says.
func RetryAfter(err error) time.Duration {
	var ge *Error
	if !errors.As(err, &ge) {
		return 0
	}
	if ge.RetryAfter > 0 || ge.Kind != Throttled {
		return ge.RetryAfter
	}
	return longBackoffs[ge.Code]
}

func isTransient(err error) bool {
	var ne net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return true
	case errors.As(err, &ne): // *net.OpError, *url.Error, DNS errors, timeouts
		return true
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return true
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		// The connection closed mid-response.
		return true
	}
	return false
}

// parseRetryAfter reads a Retry-After header: delay-seconds or an HTTP date.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs <= 0 {
			return 0
		}
		return time.Duration(min(secs, int64(24*time.Hour/time.Second))) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			// Capped as delay-seconds are: a date decades ahead is no reason to wait decades.
			return min(d.Round(time.Second), 24*time.Hour)
		}
	}
	return 0
}
