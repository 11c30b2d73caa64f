package delivery_test

import (
	"context"
	"sync"
	"testing"
	"time"

	wacontact "github.com/wapipe/wapipe/internal/contact"
	"github.com/wapipe/wapipe/internal/delivery"
	"github.com/wapipe/wapipe/internal/graph/graphfake"
	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/internal/outgoing"
	"github.com/wapipe/wapipe/internal/store"
)

// A contact who writes by business-scoped user id alone (shared/meta/usernames.md): Meta shares
// no phone for them.
const (
	userID       = "US.13491208655302741918"
	parentUserID = "US.ENT.99887766554433"
)

// TestReplyToAContactKnownOnlyByBSUID: a conversation reply to a contact whose phone Meta never
// shared goes with "recipient" and no "to" (the parent BSUID when that is what the contact is
// reached by); the record carries the contact's keyed us_ reference, never a phone's.
func TestReplyToAContactKnownOnlyByBSUID(t *testing.T) {
	t.Parallel()
	for _, recipient := range []string{userID, parentUserID} {
		t.Run(recipient[:6], func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, token, time.Time{})
			e.d.Windows = windows{last: e.clk.now().Add(-time.Hour)}
			const key = "k-by-recipient"
			res := e.d.Deliver(context.Background(), delivery.Request{Kind: delivery.ConversationReply, Key: key, TenantID: "acme",
				PhoneNumberID: number, Recipient: recipient, ConversationID: conversationID, InboundMessageID: "wamid.in-1",
				Reply: outgoing.Message{Text: "hello"}})
			if res.Status != delivery.Sent {
				t.Fatalf("Deliver: %+v, want sent", res)
			}
			sends := e.fake.Sends()
			if len(sends) != 1 {
				t.Fatalf("%d sends, want 1", len(sends))
			}
			body := sends[0].Body
			if _, hasTo := body["to"]; hasTo || body["recipient"] != recipient || sends[0].Recipient != recipient || body["type"] != "text" {
				t.Errorf("sent %v (recipient %q), want the text with recipient %s and no to", body, sends[0].Recipient, recipient)
			}
			rec, err := e.out.GetOutbound(context.Background(), key)
			if err != nil {
				t.Fatal(err)
			}
			if want := logging.DevHasher().User(recipient); rec.State != store.OutboundSent || rec.ToHash != want {
				t.Errorf("record %s, to_hash %q; want sent, %q", rec.State, rec.ToHash, want)
			}
		})
	}
}

// recordingWindows is windows that remembers which conversations were read.
type recordingWindows struct {
	windows
	mu   sync.Mutex
	read []string
}

func (w *recordingWindows) Get(ctx context.Context, id string) (store.Conversation, error) {
	w.mu.Lock()
	w.read = append(w.read, id)
	w.mu.Unlock()
	return w.windows.Get(ctx, id)
}

// TestWindowIsTheRequestsConversation: the 24-hour window of a reply is the last inbound
// message of Request.ConversationID, whoever the reply goes to: open there, the text goes; a
// request naming another conversation, or none, is outside the window (the reengage template
// goes instead), since the contact's conversation is no longer derived from their phone.
func TestWindowIsTheRequestsConversation(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, conversation string
		read               []string // the conversations read
		template           bool     // the reengage template went instead of the text
	}{
		{"the contact's conversation, open", conversationID, []string{conversationID}, false},
		{"another conversation", "conv_someone_else", []string{"conv_someone_else"}, true},
		{"no conversation", "", nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, token, time.Time{})
			w := &recordingWindows{windows: windows{last: e.clk.now().Add(-time.Hour)}}
			e.d.Windows = w
			res := e.d.Deliver(context.Background(), delivery.Request{Kind: delivery.ConversationReply, Key: "k-window", TenantID: "acme",
				PhoneNumberID: number, Recipient: userID, ConversationID: tc.conversation, Reply: outgoing.Message{Text: "hello"}})
			if res.Status != delivery.Sent {
				t.Fatalf("Deliver: %+v, want sent", res)
			}
			sends := e.fake.Sends()
			if len(sends) != 1 {
				t.Fatalf("%d sends, want 1", len(sends))
			}
			if isTemplate := sends[0].Body["type"] == "template"; isTemplate != tc.template {
				t.Errorf("sent %v; want the reengage template: %v", sends[0].Body, tc.template)
			}
			w.mu.Lock()
			defer w.mu.Unlock()
			if len(w.read) != len(tc.read) || (len(tc.read) > 0 && w.read[0] != tc.read[0]) {
				t.Errorf("conversations read %v, want %v", w.read, tc.read)
			}
		})
	}
}

// locatingWindows is windows that also finds a person's conversation, as
// *store.ConversationStore does: only person's, which is conversationID.
type locatingWindows struct {
	windows
	person wacontact.Identity
	mu     sync.Mutex
	asked  []wacontact.Identity
}

func (w *locatingWindows) ConversationOf(_ context.Context, tenantID, phoneNumberID string, id wacontact.Identity) (string, bool, error) {
	w.mu.Lock()
	w.asked = append(w.asked, id)
	w.mu.Unlock()
	if tenantID != "acme" || phoneNumberID != number || !id.Matches(w.person) {
		return "", false, nil
	}
	return conversationID, true, nil
}

// TestStoredSendWithoutConversation: a record made before records named their conversation (an
// api send accepted, or parked, before contacts) is sent in the window of its contact's
// conversation, found by the record's phone or BSUID: not refused as if the contact had never
// written. A contact the tenant does not know has no window.
func TestStoredSendWithoutConversation(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		to, user  string
		person    wacontact.Identity
		want      delivery.Status
		sendCalls int
	}{
		{"by phone", contact, "", wacontact.Identity{WaID: contact}, delivery.Sent, 1},
		{"by BSUID", "", userID, wacontact.Identity{UserID: userID}, delivery.Sent, 1},
		{"by parent BSUID", "", parentUserID, wacontact.Identity{ParentUserID: parentUserID}, delivery.Sent, 1},
		{"an unknown contact", contact, "", wacontact.Identity{WaID: "33699999999"}, delivery.Refused, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, token, time.Time{})
			w := &locatingWindows{windows: windows{last: e.clk.now().Add(-time.Hour)}, person: tc.person}
			e.d.Windows = w
			ctx := context.Background()
			const key = "k-before-contacts"
			if _, _, err := e.sends.CreateSend(ctx, store.OutboundRecord{IdempotencyKey: key, Source: store.SourceAPI, TenantID: "acme",
				PhoneNumberID: number, To: tc.to, Recipient: tc.user, Message: `{"type":"text","text":{"body":"hello"}}`,
				MessageType: "text"}); err != nil {
				t.Fatal(err)
			}
			res := e.d.DeliverStored(ctx, delivery.Stored{Key: key, TenantID: "acme"})
			if res.Status != tc.want || e.sendCalls() != tc.sendCalls {
				t.Fatalf("DeliverStored: %+v with %d send calls, want %v with %d", res, e.sendCalls(), tc.want, tc.sendCalls)
			}
			w.mu.Lock()
			defer w.mu.Unlock()
			want := wacontact.Identity{WaID: tc.to, UserID: tc.user}
			if wacontact.ValidParentUserID(tc.user) {
				want.UserID, want.ParentUserID = "", tc.user
			}
			if len(w.asked) != 1 || w.asked[0] != want {
				t.Errorf("conversation looked up by %+v, want once by the record's identifiers %+v", w.asked, want)
			}
			if tc.want != delivery.Sent {
				return
			}
			body := e.fake.Sends()[0].Body
			if body["type"] != "text" || body["to"] != nilIfEmpty(tc.to) || body["recipient"] != nilIfEmpty(tc.user) {
				t.Errorf("sent %v, want the text to %q / recipient %q", body, tc.to, tc.user)
			}
		})
	}
}

// TestTemplateNeedsNoConversationLookup: a template goes whatever the window, so a record of one
// that names no conversation (a template to a contact wapipe never met) costs no lookup.
func TestTemplateNeedsNoConversationLookup(t *testing.T) {
	t.Parallel()
	e := newEnv(t, token, time.Time{})
	w := &locatingWindows{windows: windows{last: e.clk.now().Add(-time.Hour)}, person: wacontact.Identity{WaID: contact}}
	e.d.Windows = w
	ctx := context.Background()
	const key = "k-template"
	if _, _, err := e.sends.CreateSend(ctx, store.OutboundRecord{IdempotencyKey: key, Source: store.SourceAPI, TenantID: "acme",
		PhoneNumberID: number, Recipient: userID, Message: `{"type":"template","template":{"name":"hello_again","language":{"code":"en"}}}`,
		MessageType: "template"}); err != nil {
		t.Fatal(err)
	}
	if res := e.d.DeliverStored(ctx, delivery.Stored{Key: key, TenantID: "acme"}); res.Status != delivery.Sent {
		t.Fatalf("DeliverStored: %+v, want sent", res)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.asked) != 0 {
		t.Errorf("conversation looked up %d times for a template, want none", len(w.asked))
	}
}

// nilIfEmpty is what a decoded JSON body holds for a field that is s: nothing when s is empty
// (left out), else s.
func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// TestAuthenticationTemplateByBSUIDFailsForGood: Meta refuses an authentication template sent
// by "recipient" alone with 131062 (a one-tap, zero-tap or copy-code button goes only to a phone
// number); the send fails for good after that one call, never retried: the same send would be
// refused again. The same template to the phone goes.
func TestAuthenticationTemplateByBSUIDFailsForGood(t *testing.T) {
	t.Parallel()
	const otp = `{"type":"template","template":{"name":"login_code","language":{"code":"en"},"components":[` +
		`{"type":"body","parameters":[{"type":"text","text":"123456"}]},` +
		`{"type":"button","sub_type":"url","index":"0","parameters":[{"type":"text","text":"123456"}]}]}}`
	for _, tc := range []struct {
		name, to, recipient string
		want                delivery.Status
		state               string
	}{
		{"by BSUID alone: 131062", "", userID, delivery.Refused, store.OutboundFailed},
		{"to the phone", contact, userID, delivery.Sent, store.OutboundSent},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, token, time.Time{})
			e.d.Windows = windows{last: e.clk.now().Add(-time.Hour)}
			e.fake.AddTemplate("login_code")
			e.fake.PutTemplate(graphfake.Template{WABAID: "900", Name: "login_code", Language: "en", Status: "APPROVED", Category: "AUTHENTICATION"})
			ctx := context.Background()
			const key = "k-otp"
			if _, _, err := e.sends.CreateSend(ctx, store.OutboundRecord{IdempotencyKey: key, Source: store.SourceAPI, TenantID: "acme",
				PhoneNumberID: number, To: tc.to, Recipient: tc.recipient, ConversationID: conversationID, Message: otp,
				MessageType: "template"}); err != nil {
				t.Fatal(err)
			}
			res := e.d.DeliverStored(ctx, delivery.Stored{Key: key, TenantID: "acme"})
			rec, err := e.out.GetOutbound(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != tc.want || rec.State != tc.state || e.sendCalls() != 1 {
				t.Fatalf("DeliverStored: %+v, record %s, %d send calls; want %v, %s, 1", res, rec.State, e.sendCalls(), tc.want, tc.state)
			}
			if tc.want != delivery.Refused {
				if body := e.fake.Sends()[0].Body; body["to"] != contact {
					t.Errorf("sent %v, want it to the phone (to wins)", body)
				}
				return
			}
			if res.Code != 131062 || rec.LastErrorCode != 131062 || rec.FailureReason != delivery.ReasonRefused || res.RetryAfter != 0 {
				t.Errorf("result %+v, record code %d reason %q; want Meta's 131062, %s, no retry", res, rec.LastErrorCode, rec.FailureReason, delivery.ReasonRefused)
			}
			// A second delivery of the record sends nothing more.
			if again := e.d.DeliverStored(ctx, delivery.Stored{Key: key, TenantID: "acme"}); again.Status != delivery.Settled || e.sendCalls() != 1 {
				t.Errorf("second delivery: %+v and %d send calls, want settled and 1", again, e.sendCalls())
			}
		})
	}
}
