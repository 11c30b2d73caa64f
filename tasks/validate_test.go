package tasks_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/wapipe/wapipe/internal/keyedid"
	"github.com/wapipe/wapipe/internal/whatsapp"
	"github.com/wapipe/wapipe/tasks"
)

// TestOutboundValidate: an outbound task names its key, its number, its sender (by phone or
// BSUID, in the message or the task) and its message.
func TestOutboundValidate(t *testing.T) {
	t.Parallel()
	key := tasks.IdempotencyKey(keyedid.Dev(), "wamid.A")
	ok := tasks.Outbound{IdempotencyKey: key, PhoneNumberID: "1001", To: "15550001111", Message: whatsapp.Message{ID: "wamid.A"}}
	tests := []struct {
		name    string
		change  func(o *tasks.Outbound)
		wantErr string
	}{
		{"complete", func(*tasks.Outbound) {}, ""},
		{"known by BSUID alone", func(o *tasks.Outbound) { o.To, o.UserID = "", "US.13491208655302741918" }, ""},
		{"no key", func(o *tasks.Outbound) { o.IdempotencyKey = "" }, "idempotency_key"},
		{"no number", func(o *tasks.Outbound) { o.PhoneNumberID = "" }, "phone_number_id"},
		{"nobody", func(o *tasks.Outbound) { o.To = "" }, "names nobody"},
		{"no message id", func(o *tasks.Outbound) { o.Message.ID = "" }, "message.id"},
	}
	for _, tc := range tests {
		o := ok
		tc.change(&o)
		err := o.Validate()
		if (err == nil) != (tc.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("%s: Validate() = %v, want an error naming %q", tc.name, err, tc.wantErr)
		}
	}
}

// TestDecodeBody: one JSON object, nothing after it, at most MaxBodyBytes (the body kept is cut
// there).
func TestDecodeBody(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		body    string
		wantErr bool
	}{
		{"an object", `{"idempotency_key":"k"}`, false},
		{"an object and a newline", "{}\n", false},
		{"two objects", `{}{}`, true},
		{"not JSON", `nope`, true},
	}
	for _, tc := range tests {
		var s tasks.Send
		if _, err := tasks.DecodeBody([]byte(tc.body), &s); (err != nil) != tc.wantErr {
			t.Errorf("%s: DecodeBody error = %v, want error %v", tc.name, err, tc.wantErr)
		}
	}
	big := []byte(`{"x":"` + strings.Repeat("a", tasks.MaxBodyBytes) + `"}`)
	kept, err := tasks.DecodeBody(big, &map[string]any{})
	if !errors.Is(err, tasks.ErrBodyTooLarge) || len(kept) != tasks.MaxBodyBytes {
		t.Errorf("an oversized body: error %v, kept %d bytes; want ErrBodyTooLarge and %d bytes", err, len(kept), tasks.MaxBodyBytes)
	}
}
