package graph

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const (
	testUserID   = "US.13491208655302741918"
	testParentID = "US.ENT.11815799212886844830"
)

// TestSendAddress: a message goes to a phone number (to), a BSUID (recipient) or both as given,
// and a message Meta would refuse for who it names is refused before any call, permanently.
func TestSendAddress(t *testing.T) {
	t.Parallel()
	text := &Text{Body: "hi"}
	cases := []struct {
		name    string
		m       Message
		wantErr error
		// wantTo and wantRecipient are the body's "to" and "recipient"; nil when absent.
		wantTo, wantRecipient any
	}{
		{name: "phone", m: Message{To: testTo, Type: "text", Text: text}, wantTo: testTo},
		{name: "phone as people write it", m: Message{To: "+1 (650) 555-1234", Type: "text", Text: text}, wantTo: "+1 (650) 555-1234"},
		{name: "BSUID alone: no to at all", m: Message{Recipient: testUserID, Type: "text", Text: text}, wantRecipient: testUserID},
		{name: "parent BSUID alone", m: Message{Recipient: testParentID, Type: "text", Text: text}, wantRecipient: testParentID},
		{name: "both: sent as given, Meta lets to win", m: Message{To: testTo, Recipient: testUserID, Type: "text", Text: text},
			wantTo: testTo, wantRecipient: testUserID},
		{name: "neither", m: Message{Type: "text", Text: text}, wantErr: ErrNoAddress},
		{name: "BSUID in to", m: Message{To: testUserID, Type: "text", Text: text}, wantErr: ErrToNotPhone},
		{name: "parent BSUID in to", m: Message{To: testParentID, Type: "text", Text: text}, wantErr: ErrToNotPhone},
		{name: "BSUID in to, beside a recipient", m: Message{To: testUserID, Recipient: testUserID, Type: "text", Text: text}, wantErr: ErrToNotPhone},
		{name: "username in to", m: Message{To: "@lucky_shrub", Type: "text", Text: text}, wantErr: ErrToNotPhone},
		{name: "phone in recipient", m: Message{Recipient: testTo, Type: "text", Text: text}, wantErr: ErrRecipientNotUserID},
		{name: "no type", m: Message{Recipient: testUserID, Text: text}, wantErr: ErrInvalidMessage},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv, got := endpoint(t, http.StatusOK, sendOK, nil)
			_, err := newTestClient(t, srv.URL).Send(context.Background(), testPNID, tc.m)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) || !errors.Is(err, ErrInvalidMessage) || Classify(err) != Permanent || IsRetryable(err) {
					t.Errorf("Send = %v (%s); want %v, invalid message, permanent", err, Classify(err), tc.wantErr)
				}
				if got().Method != "" {
					t.Error("a refused message reached Graph")
				}
				for _, personal := range []string{testUserID, testParentID, testTo} {
					if err != nil && strings.Contains(err.Error(), personal) {
						t.Errorf("error %q quotes %s", err, personal)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("Send: %v", err)
			}
			body := got().Body
			to, hasTo := body["to"]
			recipient, hasRecipient := body["recipient"]
			if diff := cmp.Diff([]any{tc.wantTo, tc.wantRecipient}, []any{to, recipient}); diff != "" {
				t.Errorf("to, recipient (-want, +got):\n%s", diff)
			}
			if hasTo != (tc.wantTo != nil) || hasRecipient != (tc.wantRecipient != nil) {
				t.Errorf("body %v: to present %v, recipient present %v", body, hasTo, hasRecipient)
			}
		})
	}
}

// TestHelpersSendToPhone: the helpers that take a to put it in "to" and refuse a BSUID there.
func TestHelpersSendToPhone(t *testing.T) {
	t.Parallel()
	srv, got := endpoint(t, http.StatusOK, sendOK, nil)
	c := newTestClient(t, srv.URL)
	ctx := context.Background()
	tmpl := Template{Name: "hello_world", Language: Language{Code: "en_US"}}
	buttons := Buttons{Body: "b", Buttons: []Button{{ID: "y", Title: "Yes"}}}
	list := List{Body: "b", ButtonText: "x", Sections: []Section{{Rows: []Row{{ID: "1", Title: "One"}}}}}
	sends := map[string]func(to string) error{
		"text":     func(to string) error { return second(c.SendText(ctx, testPNID, to, Text{Body: "x"}, SendOptions{})) },
		"buttons":  func(to string) error { return second(c.SendButtons(ctx, testPNID, to, buttons, SendOptions{})) },
		"list":     func(to string) error { return second(c.SendList(ctx, testPNID, to, list, SendOptions{})) },
		"template": func(to string) error { return second(c.SendTemplate(ctx, testPNID, to, tmpl, SendOptions{})) },
	}
	for name, send := range sends {
		if err := send(testTo); err != nil {
			t.Errorf("%s to a phone: %v", name, err)
		} else if b := got().Body; b["to"] != testTo || b["recipient"] != nil {
			t.Errorf("%s to a phone: body %v", name, b)
		}
		if err := send(testUserID); !errors.Is(err, ErrToNotPhone) {
			t.Errorf("%s to a BSUID = %v; want ErrToNotPhone", name, err)
		}
	}
}

// TestSendAnswerContacts: Meta names who it sent to by wa_id or, for a send by BSUID, by user_id;
// neither is required.
func TestSendAnswerContacts(t *testing.T) {
	t.Parallel()
	const wamid = "wamid.HBgLMTY1MDU1NTEyMzQVAgARGBI5QTNDQTVCM0Q0Q0Q2RTY3RTcA"
	cases := []struct {
		name     string
		contacts string
		want     SendResult
	}{
		{"to a phone", `[{"input":"16505551234","wa_id":"16505551234"}]`, SendResult{MessageID: wamid, WaID: testTo}},
		{"to a BSUID", `[{"input":"` + testUserID + `","user_id":"` + testUserID + `"}]`, SendResult{MessageID: wamid, UserID: testUserID}},
		{"both named", `[{"input":"16505551234","wa_id":"16505551234","user_id":"` + testUserID + `"}]`,
			SendResult{MessageID: wamid, WaID: testTo, UserID: testUserID}},
		{"no contacts", `[]`, SendResult{MessageID: wamid}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			answer := `{"messaging_product":"whatsapp","contacts":` + tc.contacts + `,"messages":[{"id":"` + wamid + `"}]}`
			srv, _ := endpoint(t, http.StatusOK, answer, nil)
			got, err := newTestClient(t, srv.URL).Send(context.Background(), testPNID, Message{Recipient: testUserID, Type: "text", Text: &Text{Body: "hi"}})
			if err != nil {
				t.Fatalf("Send: %v", err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("result (-want, +got):\n%s", diff)
			}
		})
	}
}

// TestMessageJSON: an empty to or recipient is left out of the body (Meta refuses an empty
// "to"), and a body with "recipient" decodes into Message.
func TestMessageJSON(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		m    Message
		want string
	}{
		{"to only", Message{MessagingProduct: "whatsapp", To: testTo, Type: "text", Text: &Text{Body: "hi"}},
			`{"messaging_product":"whatsapp","to":"16505551234","type":"text","text":{"body":"hi"}}`},
		{"recipient only", Message{MessagingProduct: "whatsapp", Recipient: testUserID, Type: "text", Text: &Text{Body: "hi"}},
			`{"messaging_product":"whatsapp","recipient":"` + testUserID + `","type":"text","text":{"body":"hi"}}`},
		{"both", Message{MessagingProduct: "whatsapp", To: testTo, Recipient: testUserID, Type: "text", Text: &Text{Body: "hi"}},
			`{"messaging_product":"whatsapp","to":"16505551234","recipient":"` + testUserID + `","type":"text","text":{"body":"hi"}}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b, err := json.Marshal(tc.m)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, string(b)); diff != "" {
				t.Errorf("encoding (-want, +got):\n%s", diff)
			}
			var back Message
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.m, back, cmp.AllowUnexported(Coordinate{})); diff != "" {
				t.Errorf("round trip (-want, +got):\n%s", diff)
			}
		})
	}
}

// TestRequiresPhone: an authentication template needs the phone whatever its OTP button, as its
// send body cannot say which; nothing else does, and an unknown category is left to Meta.
func TestRequiresPhone(t *testing.T) {
	t.Parallel()
	// otp is Meta's send body of an authentication template, the same for copy-code, one-tap and
	// zero-tap buttons: the code in the body and as the url button's parameter.
	otp := &Template{Name: "auth_code", Language: Language{Code: "en_US"}, Components: []Component{
		{Type: "body", Parameters: []Parameter{{Type: "text", Text: "482913"}}},
		{Type: "button", SubType: "url", Index: "0", Parameters: []Parameter{{Type: "text", Text: "482913"}}},
	}}
	// coupon is a marketing template's copy-code button: a coupon, not a one-time password.
	coupon := &Template{Name: "spring_sale", Language: Language{Code: "en_US"}, Components: []Component{
		{Type: "button", SubType: "copy_code", Index: "0", Parameters: []Parameter{{Type: "coupon_code", CouponCode: "SPRING25"}}},
	}}
	cases := []struct {
		name     string
		m        Message
		category string
		want     bool
	}{
		{"authentication template", Message{Type: "template", Template: otp}, "AUTHENTICATION", true},
		{"category in lower case", Message{Type: "template", Template: otp}, "authentication", true},
		{"authentication template without its components", Message{Type: "template", Template: &Template{Name: "auth_code"}}, CategoryAuthentication, true},
		{"same body, utility template", Message{Type: "template", Template: otp}, "UTILITY", false},
		{"same body, category unknown", Message{Type: "template", Template: otp}, "", false},
		{"marketing copy-code coupon", Message{Type: "template", Template: coupon}, "MARKETING", false},
		{"not a template", Message{Type: "text", Text: &Text{Body: "482913"}}, CategoryAuthentication, false},
		{"template type without a template", Message{Type: "template"}, CategoryAuthentication, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := RequiresPhone(tc.m, tc.category); got != tc.want {
				t.Errorf("RequiresPhone = %v; want %v", got, tc.want)
			}
		})
	}
}

// TestErrorStringHidesUserIDs: Meta's message about a send by BSUID may quote the id; the
// error text, which goes to logs, does not.
func TestErrorStringHidesUserIDs(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, message, want string
	}{
		{"BSUID", "(#131062) Business-scoped user id not allowed for this message: " + testUserID,
			"(#131062) Business-scoped user id not allowed for this message: [redacted]"},
		{"BSUID with letters", "recipient US.ab12Cd is not valid", "recipient [redacted] is not valid"},
		{"parent BSUID", "recipient " + testParentID + " is not valid", "recipient [redacted] is not valid"},
		{"no id", "(#100) Invalid parameter", "(#100) Invalid parameter"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := &Error{HTTPStatus: 400, Code: 131062, Type: "OAuthException", Message: tc.message, Kind: Permanent}
			want := fmt.Sprintf("graph api: HTTP 400, code 131062 (OAuthException): %s [permanent]", tc.want)
			if diff := cmp.Diff(want, e.Error()); diff != "" {
				t.Errorf("Error() (-want, +got):\n%s", diff)
			}
		})
	}
}
