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

	"github.com/wapipe/wapipe/internal/fault"
)

// The kinds of Extract failures (fault.Kind). Test with errors.Is; the error itself is an *Error.
var (
	// ErrUnavailable: Vertex AI could not answer now (timeout, network error, HTTP 5xx, 429).
	// Retry the turn later, no sooner than Error.RetryAfter when it is set.
	ErrUnavailable = fault.NewKind(fault.Retryable, "llm_unavailable", "llm unavailable")
	// ErrInvalidResponse: Vertex AI answered, but the answer is not a valid assistant object
	// (not JSON, intent not offered, a value of the wrong type, no reply, blocked or truncated).
	// Asking again may give a valid answer.
	ErrInvalidResponse = fault.NewKind(fault.Invalid, "llm_invalid_response", "llm invalid response")
	// ErrPermanent: the request cannot succeed as it is (HTTP 4xx other than 408 and 429, such as
	// an unknown model, or a request that fails local validation). Do not retry.
	ErrPermanent = fault.NewKind(fault.Permanent, "llm_permanent", "llm permanent error")
)

// Error is an Extract failure: its Kind (one of ErrUnavailable, ErrInvalidResponse,
// ErrPermanent), the HTTP status and Retry-After of Vertex AI's answer (a Retry-After header or a
// google.rpc.RetryInfo detail), and what caused it. Its text never includes the user's text or
// the model's answer.
type Error = fault.Error

// RetryAfter returns the wait Vertex AI asked for, if err carries one.
func RetryAfter(err error) (time.Duration, bool) { return fault.RetryAfter(err) }

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
