package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/wapipe/wapipe/internal/refusal"
)

// TestErrorAnswers: every error a handler answers, the api's own refusals, the outbox's, wrapped
// or not, and a dependency's failure, is answered by fail from the one table with the status,
// code, message and headers the contract names.
func TestErrorAnswers(t *testing.T) {
	t.Parallel()
	tests := []struct {
		err         error
		wantStatus  int
		wantCode    string
		wantMessage string // "m" when empty
		wantHeader  string // a header the answer must carry
	}{
		{refusal.New(refusal.InvalidRequest, "m"), 400, "invalid_request", "", ""},
		{refusal.New(codeWrongContentType, "m"), 415, "invalid_request", "", ""},
		{refusal.New(codeBodyTooLarge, "m"), 413, "invalid_request", "", ""},
		{refusal.New(codeBodyTimeout, "m"), 408, "invalid_request", "", ""},
		{refusal.New(refusal.Unauthenticated, "m"), 401, "unauthenticated", msgUnauthenticated, "WWW-Authenticate"},
		{errUnauthenticated, 401, "unauthenticated", msgUnauthenticated, "WWW-Authenticate"},
		{refusal.New(refusal.NotFound, "m"), 404, "not_found", "", ""},
		{refusal.New(refusal.RateLimited, "m"), 429, "rate_limited", "", ""},
		{refusal.New(refusal.Unavailable, "m"), 503, "unavailable", msgUnavailable, "Retry-After"},
		{refusal.New(refusal.Internal, "m"), 500, "internal", "", ""},
		{refusal.New(refusal.Forbidden, "m"), 403, "forbidden", "", ""},
		{refusal.New(refusal.BadGateway, "m"), 502, "bad_gateway", "", ""},
		{refusal.New(refusal.InvalidRequest, "m"), 400, "invalid_request", "", ""},
		{refusal.New(refusal.ReauthRequired, "m"), 409, "WHATSAPP_REAUTH_REQUIRED", "", ""},
		{refusal.New(refusal.OutsideWindow, "m"), 422, "outside_customer_service_window", "", ""},
		{fmt.Errorf("send: %w", refusal.New(refusal.IdempotencyKeyReused, "m")), 422, "idempotency_key_reused", "", ""},
		{refusal.New(refusal.TenantNotFound, "m"), 401, "unauthenticated", msgUnauthenticated, "WWW-Authenticate"},
		{fmt.Errorf("firestore: %w", errors.New("connection refused")), 503, "unavailable", msgUnavailable, "Retry-After"},
	}
	for _, tc := range tests {
		w := httptest.NewRecorder()
		fail(w, httptest.NewRequest(http.MethodGet, "/v1/messages", nil), tc.err)
		var body struct {
			Error struct{ Code, Message string }
		}
		if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
			t.Fatalf("%v: body %q: %v", tc.err, w.Body, err)
		}
		wantMessage := tc.wantMessage
		if wantMessage == "" {
			wantMessage = "m"
		}
		if w.Code != tc.wantStatus || body.Error.Code != tc.wantCode || body.Error.Message != wantMessage {
			t.Errorf("%v: answered %d %+v, want %d %s with message %q", tc.err, w.Code, body.Error, tc.wantStatus, tc.wantCode, wantMessage)
		}
		if tc.wantHeader != "" && w.Header().Get(tc.wantHeader) == "" {
			t.Errorf("%v: no %s header", tc.err, tc.wantHeader)
		}
	}
	if _, ok := refusal.As(fmt.Errorf("firestore: %w", http.ErrHandlerTimeout)); ok {
		t.Error("refusal.As took a dependency's error for a refusal")
	}
}
