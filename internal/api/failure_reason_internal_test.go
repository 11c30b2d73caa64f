package api

import (
	"testing"

	"github.com/wapipe/wapipe/internal/store"
)

// TestFailureReason: the api shows a failed record's reason code from its failure_reason, and
// reads the reason records written before that field existed carried in last_error; never the
// raw error text.
func TestFailureReason(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		rec  store.OutboundRecord
		want string
	}{
		{"the code field", store.OutboundRecord{FailureReason: "no_token", LastError: "tenant acme has no access token"}, "no_token"},
		{"the code field wins over the text", store.OutboundRecord{FailureReason: "outcome_unknown", LastError: "no_token: x"}, "outcome_unknown"},
		{"a record from before the field", store.OutboundRecord{LastError: "outside_customer_service_window: Meta answered 131047"}, "outside_customer_service_window"},
		{"old text that is not a known reason", store.OutboundRecord{LastError: "graph api: HTTP 400, code 131026: undeliverable"}, "whatsapp_permanent_error"},
		{"nothing", store.OutboundRecord{}, "whatsapp_permanent_error"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := failureReason(tc.rec); got != tc.want {
				t.Errorf("failureReason = %q, want %q", got, tc.want)
			}
		})
	}
}
