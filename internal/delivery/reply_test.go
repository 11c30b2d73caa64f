package delivery

import (
	"errors"
	"testing"
	"time"

	"github.com/wapipe/wapipe/internal/store"
)

// TestReplyOutcome: what a conversation acts on for each end of a reply's delivery: the Graph id
// of a sent reply; nothing, so the conversation goes on, for a reply settled unsent for good; an
// error that holds up the task (retried, or permanent for a dead letter) otherwise.
func TestReplyOutcome(t *testing.T) {
	t.Parallel()
	cause := errors.New("meta said no")
	tests := []struct {
		name          string
		res           Result
		wantID        string
		wantErr       bool
		wantPermanent bool
		wantAfter     time.Duration
	}{
		{"sent", Result{Status: Sent, MessageID: "wamid.S"}, "wamid.S", false, false, 0},
		{"sent by an earlier attempt", Result{Status: Settled, Record: store.OutboundRecord{GraphMessageID: "wamid.E"}}, "wamid.E", false, false, 0},
		{"settled failed by an earlier attempt", Result{Status: Settled}, "", false, false, 0},
		{"throttled", Result{Status: Retry, Err: cause, Code: 130429, RetryAfter: 7 * time.Second, Class: "throttled"}, "", true, false, 7 * time.Second},
		{"an earlier send's outcome still unknown", Result{Status: Retry, Reason: RetryAwaitingReconciliation}, "", true, false, 0},
		{"refused, the record failed", Result{Status: Refused, Err: cause, Code: 131026}, "", false, false, 0},
		{"refused for the token, the task kept", Result{Status: Refused, Err: cause, Code: 190, DeadLetter: true, Class: "auth"}, "", true, true, 0},
		{"given up, the record its own dead letter", Result{Status: OutcomeUnknown, Err: ErrOutcomeUnknown, DeadLetterID: "dl1"}, "", false, false, 0},
		{"held on its record", Result{Status: Held}, "", false, false, 0},
		{"unsendable, the task kept", Result{Status: Unsendable, Err: cause, DeadLetter: true}, "", true, true, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			id, err := replyOutcome(tc.res)
			if id != tc.wantID || (err != nil) != tc.wantErr {
				t.Fatalf("replyOutcome = %q, %v; want %q, error %v", id, err, tc.wantID, tc.wantErr)
			}
			var re *ReplyError
			if errors.As(err, &re) {
				if re.Permanent != tc.wantPermanent || re.RetryAfter != tc.wantAfter || re.Code != tc.res.Code || !errors.Is(err, tc.res.Err) {
					t.Errorf("ReplyError = %+v, want permanent %v, retry after %s, code %d, wrapping %v",
						*re, tc.wantPermanent, tc.wantAfter, tc.res.Code, tc.res.Err)
				}
			} else if tc.wantPermanent {
				t.Errorf("error %v is no ReplyError", err)
			}
		})
	}
}
