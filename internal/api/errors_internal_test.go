package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/wapipe/wapipe/internal/outbox"
)

// TestErrorAnswers: every refusal, the api's own and the outbox's, wrapped or not,
// is answered from the one table with the status and code the contract names.
func TestErrorAnswers(t *testing.T) {
	t.Parallel()
	tests := []struct {
		err        error
		wantStatus int
		wantCode   string
	}{
		{refuse(CodeInvalidRequest, "m"), 400, "invalid_request"},
		{refuse(codeUnsupportedMediaType, "m"), 415, "invalid_request"},
		{refuse(codeBodyTooLarge, "m"), 413, "invalid_request"},
		{refuse(codeBodyTimeout, "m"), 408, "invalid_request"},
		{refuse(CodeUnauthenticated, "m"), 401, "unauthenticated"},
		{refuse(CodeNotFound, "m"), 404, "not_found"},
		{refuse(CodeRateLimited, "m"), 429, "rate_limited"},
		{refuse(CodeUnavailable, "m"), 503, "unavailable"},
		{refuse(codeInternal, "m"), 500, "internal"},
		{&outbox.Refusal{Code: outbox.CodeInvalidRequest, Message: "m"}, 400, "invalid_request"},
		{&outbox.Refusal{Code: outbox.CodeReauthRequired, Message: "m"}, 409, "WHATSAPP_REAUTH_REQUIRED"},
		{&outbox.Refusal{Code: outbox.CodeOutsideWindow, Message: "m"}, 422, "outside_customer_service_window"},
		{fmt.Errorf("send: %w", &outbox.Refusal{Code: outbox.CodeIdempotencyKeyReused, Message: "m"}), 422, "idempotency_key_reused"},
	}
	for _, tc := range tests {
		refusal, ok := refusalOf(tc.err)
		if !ok {
			t.Errorf("refusalOf(%v): not a refusal", tc.err)
			continue
		}
		w := httptest.NewRecorder()
		writeRefusal(w, refusal)
		var body struct {
			Error struct{ Code, Message string }
		}
		if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
			t.Fatalf("%v: body %q: %v", tc.err, w.Body, err)
		}
		if w.Code != tc.wantStatus || body.Error.Code != tc.wantCode || body.Error.Message != "m" {
			t.Errorf("%v: answered %d %+v, want %d %s with message m", tc.err, w.Code, body.Error, tc.wantStatus, tc.wantCode)
		}
	}
	if _, ok := refusalOf(fmt.Errorf("firestore: %w", http.ErrHandlerTimeout)); ok {
		t.Error("refusalOf took a dependency's error for a refusal")
	}
}
