package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"google.golang.org/genai"
)

// The kinds of Extract failures. Test with errors.Is; the error itself is an *Error.
var (
	// ErrUnavailable: Vertex AI could not answer now (timeout, network error, HTTP 5xx, 429).
	// Retry the turn later, no sooner than Error.RetryAfter when it is set.
	ErrUnavailable = errors.New("llm unavailable")
	// ErrInvalidResponse: Vertex AI answered, but the answer is not a valid assistant object
	// (not JSON, intent not offered, a value of the wrong type, no reply, blocked or truncated).
	// Asking again may give a valid answer.
	ErrInvalidResponse = errors.New("llm invalid response")
	// ErrPermanent: the request cannot succeed as it is (HTTP 4xx other than 408 and 429, such as
	// an unknown model, or a request that fails local validation). Do not retry.
	ErrPermanent = errors.New("llm permanent error")
)

// Error is an Extract failure: its Kind (one of ErrUnavailable, ErrInvalidResponse,
// ErrPermanent) and what caused it.
type Error struct {
	// Kind is ErrUnavailable, ErrInvalidResponse or ErrPermanent.
	Kind error
	// HTTPStatus is the status Vertex AI answered, 0 when there was no HTTP answer (timeout,
	// network error) or the answer was a 2xx.
	HTTPStatus int
	// RetryAfter is how long Vertex AI asked us to wait (the Retry-After header or a
	// google.rpc.RetryInfo detail); 0 when it did not say.
	RetryAfter time.Duration
	// Reason says what failed without quoting the message or the model's answer.
	Reason string
	// Err is the underlying error, if any, for errors.Is and errors.As (for example
	// context.DeadlineExceeded or genai.APIError). Its text may quote the HTTP body, so
	// Error() leaves it out.
	Err error
}

// Error describes the failure; it never includes the user's text or the model's answer.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Kind.Error())
	if e.HTTPStatus != 0 {
		fmt.Fprintf(&b, " (HTTP %d)", e.HTTPStatus)
	}
	if e.Reason != "" {
		b.WriteString(": ")
		b.WriteString(e.Reason)
	}
	if e.RetryAfter > 0 {
		fmt.Fprintf(&b, " (retry after %s)", e.RetryAfter)
	}
	return b.String()
}

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// Is reports whether target is e's kind, so errors.Is(err, llm.ErrUnavailable) works.
func (e *Error) Is(target error) bool { return target == e.Kind }

// RetryAfter returns the wait Vertex AI asked for, if err carries one.
func RetryAfter(err error) (time.Duration, bool) {
	var e *Error
	if errors.As(err, &e) && e.RetryAfter > 0 {
		return e.RetryAfter, true
	}
	return 0, false
}

func invalidf(format string, args ...any) *Error {
	return &Error{Kind: ErrInvalidResponse, Reason: fmt.Sprintf(format, args...)}
}

func permanentf(format string, args ...any) *Error {
	return &Error{Kind: ErrPermanent, Reason: fmt.Sprintf(format, args...)}
}

// classify turns an error from the genai client into an *Error. hint is the Retry-After the
// transport saw on the failed response, if any.
func classify(err error, hint time.Duration) *Error {
	var apiErr genai.APIError
	var apiErrPtr *genai.APIError
	switch {
	case errors.As(err, &apiErr):
		return fromAPIError(apiErr, hint, err)
	case errors.As(err, &apiErrPtr) && apiErrPtr != nil:
		return fromAPIError(*apiErrPtr, hint, err)
	case errors.Is(err, context.DeadlineExceeded):
		return &Error{Kind: ErrUnavailable, Reason: "timed out", Err: err}
	case errors.Is(err, context.Canceled):
		return &Error{Kind: ErrUnavailable, Reason: "canceled", Err: err}
	}
	var synErr *json.SyntaxError
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &synErr) || errors.As(err, &typeErr) {
		// A 2xx whose body is not a GenerateContentResponse: the genai error quotes the body,
		// so only the kind is kept in the text.
		return &Error{Kind: ErrInvalidResponse, Reason: "response body is not a GenerateContentResponse", Err: err}
	}
	var netErr net.Error
	var urlErr *url.Error
	if errors.As(err, &netErr) || errors.As(err, &urlErr) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return &Error{Kind: ErrUnavailable, Reason: "network error", Err: err}
	}
	// Anything else is most likely transient too; retrying a permanent error costs a few
	// attempts, while dropping a transient one loses the user's turn.
	return &Error{Kind: ErrUnavailable, Reason: "generateContent failed", Err: err}
}

func fromAPIError(a genai.APIError, hint time.Duration, err error) *Error {
	e := &Error{HTTPStatus: a.Code, Err: err, RetryAfter: hint}
	if e.RetryAfter == 0 {
		e.RetryAfter = retryInfoDelay(a.Details)
	}
	switch {
	case a.Code == http.StatusTooManyRequests, a.Code == http.StatusRequestTimeout, a.Code >= 500, a.Code == 0:
		e.Kind = ErrUnavailable
	default:
		e.Kind = ErrPermanent
	}
	e.Reason = strings.TrimSpace(a.Status + " " + firstLine(a.Message))
	return e
}

// retryInfoDelay reads google.rpc.RetryInfo's retryDelay ("37s") from an error's details.
func retryInfoDelay(details []map[string]any) time.Duration {
	for _, d := range details {
		if t, _ := d["@type"].(string); !strings.HasSuffix(t, "google.rpc.RetryInfo") {
			continue
		}
		if s, ok := d["retryDelay"].(string); ok {
			if d, err := time.ParseDuration(s); err == nil && d > 0 {
				return d
			}
		}
	}
	return 0
}

// parseRetryAfter reads a Retry-After header: delay-seconds or an HTTP date.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if n, err := strconv.Atoi(v); err == nil {
		if n > 0 {
			return time.Duration(n) * time.Second
		}
		return 0
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// firstLine keeps error messages to one short line.
func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	const maxLen = 200
	if len(s) > maxLen {
		s = strings.ToValidUTF8(s[:maxLen], "") + "…"
	}
	return s
}
