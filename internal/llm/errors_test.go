package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"testing"
	"time"

	"google.golang.org/genai"
)

func TestClassify(t *testing.T) {
	t.Parallel()
	retryInfo := []map[string]any{{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "37s"}}
	tests := []struct {
		name       string
		err        error
		hint       time.Duration
		kind       error
		status     int
		retryAfter time.Duration
		alsoIs     error
	}{
		{"500", genai.APIError{Code: 500, Status: "INTERNAL", Message: "Internal error encountered."}, 0, ErrUnavailable, 500, 0, nil},
		{"503", genai.APIError{Code: 503, Status: "UNAVAILABLE"}, 0, ErrUnavailable, 503, 0, nil},
		{"504", genai.APIError{Code: 504, Status: "DEADLINE_EXCEEDED"}, 0, ErrUnavailable, 504, 0, nil},
		{"429 with Retry-After", genai.APIError{Code: 429, Status: "RESOURCE_EXHAUSTED"}, 7 * time.Second, ErrUnavailable, 429, 7 * time.Second, nil},
		{"429 with RetryInfo", genai.APIError{Code: 429, Status: "RESOURCE_EXHAUSTED", Details: retryInfo}, 0, ErrUnavailable, 429, 37 * time.Second, nil},
		{"408", genai.APIError{Code: 408}, 0, ErrUnavailable, 408, 0, nil},
		{"400", genai.APIError{Code: 400, Status: "INVALID_ARGUMENT"}, 0, ErrPermanent, 400, 0, nil},
		{"403", genai.APIError{Code: 403, Status: "PERMISSION_DENIED"}, 0, ErrPermanent, 403, 0, nil},
		{"404 model", genai.APIError{Code: 404, Status: "NOT_FOUND"}, 0, ErrPermanent, 404, 0, nil},
		{"wrapped API error", fmt.Errorf("x: %w", genai.APIError{Code: 502}), 0, ErrUnavailable, 502, 0, nil},
		{"API error pointer", &genai.APIError{Code: 401}, 0, ErrPermanent, 401, 0, nil},
		{"timeout", fmt.Errorf("doRequest: %w", &url.Error{Op: "Post", URL: "u", Err: context.DeadlineExceeded}), 0, ErrUnavailable, 0, 0, context.DeadlineExceeded},
		{"canceled", context.Canceled, 0, ErrUnavailable, 0, 0, context.Canceled},
		{"connection refused", fmt.Errorf("doRequest: %w", &url.Error{Op: "Post", URL: "u", Err: &net.OpError{Op: "dial", Err: errors.New("connection refused")}}), 0, ErrUnavailable, 0, 0, nil},
		{"body not JSON", fmt.Errorf("deserialize: %w", &json.SyntaxError{Offset: 1}), 0, ErrInvalidResponse, 0, 0, nil},
		{"anything else", errors.New("surprise"), 0, ErrUnavailable, 0, 0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var err error = classify(tt.err, tt.hint)
			if !errors.Is(err, tt.kind) {
				t.Errorf("classify(%v) = %v; want kind %v", tt.err, err, tt.kind)
			}
			for _, other := range []error{ErrUnavailable, ErrInvalidResponse, ErrPermanent} {
				if other != tt.kind && errors.Is(err, other) {
					t.Errorf("classify(%v) is also %v", tt.err, other)
				}
			}
			var e *Error
			if !errors.As(err, &e) || e.HTTPStatus != tt.status {
				t.Errorf("HTTPStatus = %d; want %d", e.HTTPStatus, tt.status)
			}
			if d, _ := RetryAfter(err); d != tt.retryAfter {
				t.Errorf("RetryAfter = %s; want %s", d, tt.retryAfter)
			}
			if tt.alsoIs != nil && !errors.Is(err, tt.alsoIs) {
				t.Errorf("%v does not wrap %v", err, tt.alsoIs)
			}
		})
	}
}

func TestErrorTextLeavesOutTheBody(t *testing.T) {
	t.Parallel()
	cause := fmt.Errorf("deserializeUnaryResponse: error unmarshalling response: %w\nbook bus 01 for Pak Agus", &json.SyntaxError{Offset: 3})
	err := classify(cause, 0)
	if got := err.Error(); got != "llm invalid response: response body is not a GenerateContentResponse" {
		t.Errorf("Error() = %q", got)
	}
	apiErr := classify(genai.APIError{Code: 429, Status: "RESOURCE_EXHAUSTED", Message: "Resource exhausted.\nsecond line"}, 3*time.Second)
	if got, want := apiErr.Error(), "llm unavailable (HTTP 429): RESOURCE_EXHAUSTED Resource exhausted. (retry after 3s)"; got != want {
		t.Errorf("Error() = %q; want %q", got, want)
	}
}

func TestParseRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)
	tests := []struct {
		in   string
		want time.Duration
	}{
		{"", 0},
		{"3", 3 * time.Second},
		{" 120 ", 2 * time.Minute},
		{"0", 0},
		{"-5", 0},
		{"soon", 0},
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second},
		{now.Add(-time.Minute).Format(http.TimeFormat), 0},
	}
	for _, tt := range tests {
		if got := parseRetryAfter(tt.in, now); got != tt.want {
			t.Errorf("parseRetryAfter(%q) = %s; want %s", tt.in, got, tt.want)
		}
	}
}
