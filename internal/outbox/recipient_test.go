package outbox_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/wapipe/wapipe/internal/contact"
	"github.com/wapipe/wapipe/internal/graph"
	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/internal/outbox"
	"github.com/wapipe/wapipe/internal/refusal"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/tenant"
	"github.com/wapipe/wapipe/internal/testenv"
	"github.com/wapipe/wapipe/tasks"
)

const (
	number = "100"
	phone  = "33612345678"
	// userID is a business-scoped user id (shared/meta/usernames.md), parentUserID a parent one.
	userID       = "US.13491208655302741918"
	parentUserID = "US.ENT.99887766554433"
)

// oldMessage is graph.Message as it was encoded before sends by BSUID: "to" always present
// (no omitempty) between recipient_type and type, and no "recipient". The outer fields hide the
// embedded ones of the same name, and encoding/json writes them first, in this order, then the
// embedded message's other fields in theirs: the old field order.
type oldMessage struct {
	MessagingProduct string `json:"messaging_product"`
	RecipientType    string `json:"recipient_type,omitempty"`
	To               string `json:"to"`
	graph.Message
}

// oldRequestHash is the request hash outbox.Send stored before sends by BSUID:
// sha256(number NUL to NUL json(message)), the message's JSON with its "to" (empty: the api put
// the contact in the record, not in the message).
func oldRequestHash(t *testing.T, number, to string, m graph.Message) string {
	t.Helper()
	if m.Recipient != "" {
		t.Fatal("the old message type had no recipient")
	}
	raw, err := json.Marshal(oldMessage{MessagingProduct: m.MessagingProduct, RecipientType: m.RecipientType, To: m.To, Message: m})
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(append([]byte(number+"\x00"+to+"\x00"), raw...))
	return hex.EncodeToString(sum[:])
}

// TestRequestHashWithoutRecipientIsTheOldOne: a request without recipient hashes exactly as
// before sends by BSUID, whatever its message, so a record stored before the upgrade is found
// by a replay of its Idempotency-Key after it. A recipient makes another request.
func TestRequestHashWithoutRecipientIsTheOldOne(t *testing.T) {
	t.Parallel()
	// The old encoding of a text message, written out, so the test does not rest on oldMessage
	// alone.
	text := graph.Message{Type: "text", Text: &graph.Text{Body: "Your bus leaves at 9"}}
	literal := `{"messaging_product":"","to":"","type":"text","text":{"body":"Your bus leaves at 9"}}`
	sum := sha256.Sum256([]byte(number + "\x00" + phone + "\x00" + literal))
	if got, want := outbox.RequestHash(number, phone, "", mustJSON(t, text)), hex.EncodeToString(sum[:]); got != want {
		t.Fatalf("text message: hash %s, want the old %s", got, want)
	}

	messages := map[string]graph.Message{
		"text":   text,
		"tricky": {Type: "text", Text: &graph.Text{Body: `"to":"x" "type":"text" {"to":""}`, PreviewURL: true}},
		"template": {Type: "template", Template: &graph.Template{Name: "hello_world", Language: graph.Language{Code: "en_US"},
			Components: []graph.Component{{Type: "body", Parameters: []graph.Parameter{{Type: "text", Text: "Budi"}}}}}},
		"individual, quoting": {RecipientType: "individual", Type: "text", Text: &graph.Text{Body: "yes"},
			Context: &graph.Context{MessageID: "wamid.abc"}},
		"with messaging_product": {MessagingProduct: "whatsapp", Type: "reaction", Reaction: &graph.Reaction{MessageID: "wamid.abc", Emoji: "👍"}},
		"location":               {Type: "location", Location: &graph.Location{Name: "Depot", Address: "Jl. Merdeka 1"}},
		"with to in the message": {To: phone, Type: "text", Text: &graph.Text{Body: "console"}},
		// A flow's own data may have a key named "to": it is not the message's.
		"flow data with a to": {Type: "template", Template: &graph.Template{Name: "book", Language: graph.Language{Code: "en"},
			Components: []graph.Component{{Type: "button", SubType: "flow", Index: "0", Parameters: []graph.Parameter{{Type: "action",
				Action: &graph.TemplateAction{FlowToken: "t1", FlowActionData: map[string]any{"to": "Denpasar", "type": "bus"}}}}}}}},
	}
	for name, m := range messages {
		if got, want := outbox.RequestHash(number, phone, "", mustJSON(t, m)), oldRequestHash(t, number, phone, m); got != want {
			t.Errorf("%s: hash %s, want the old %s (message %s)", name, got, want, mustJSON(t, m))
		}
	}

	plain := outbox.RequestHash(number, phone, "", mustJSON(t, text))
	byUser := outbox.RequestHash(number, "", userID, mustJSON(t, text))
	both := outbox.RequestHash(number, phone, userID, mustJSON(t, text))
	other := outbox.RequestHash(number, "", "US.13491208655302741919", mustJSON(t, text))
	if len(map[string]bool{plain: true, byUser: true, both: true, other: true}) != 4 {
		t.Errorf("hashes by phone %s, by BSUID %s, by both %s, by another BSUID %s: want four different requests", plain, byUser, both, other)
	}
	if again := outbox.RequestHash(number, "", userID, mustJSON(t, text)); again != byUser {
		t.Errorf("the same request by BSUID hashed %s then %s", byUser, again)
	}
}

func mustJSON(t *testing.T, m graph.Message) []byte {
	t.Helper()
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// outboxWorld is a tenant with one number, the send records and the conversations (the
// windows) in the Firestore emulator, and an Outbox over them.
type outboxWorld struct {
	db       *store.DB
	sends    *store.Sends
	convs    *store.ConversationStore
	contacts *store.Contacts
	q        *enqueued
	ob       *outbox.Outbox
}

func newOutboxWorld(t *testing.T) *outboxWorld {
	t.Helper()
	ctx := context.Background()
	db, _ := testenv.Store(t)
	tenants := store.NewTenants(db, store.Options{})
	tn := &tenant.Tenant{ID: "acme-bus", Name: "Acme", Language: "en", Audience: tenant.AudiencePublic,
		PhoneNumbers: []tenant.PhoneNumber{{PhoneNumberID: number, WABAID: "200"}}}
	tn.ApplyDefaults()
	if _, err := tenants.Apply(ctx, tn, false); err != nil {
		t.Fatal(err)
	}
	w := &outboxWorld{db: db, sends: store.NewSends(db, store.Options{}), convs: store.NewConversationStore(db, store.Options{}),
		contacts: store.NewContacts(db, store.Options{}), q: &enqueued{}}
	w.ob = &outbox.Outbox{Tenants: tenants, Sends: w.sends, Windows: w.convs, Tasks: w.q, Hasher: logging.DevHasher()}
	return w
}

// wrote records a message from the person id names at at, as the worker does: it resolves the
// tenant's contact of the person and touches their conversation on the number. It returns the
// conversation's id.
func (w *outboxWorld) wrote(t *testing.T, id contact.Identity, at time.Time) string {
	t.Helper()
	ctx := context.Background()
	res, err := w.contacts.Resolve(ctx, "acme-bus", id)
	if err != nil {
		t.Fatal(err)
	}
	convID, err := w.convs.Locate(ctx, "acme-bus", number, res.Contact)
	if err != nil {
		t.Fatal(err)
	}
	conv, ok, err := w.convs.Acquire(ctx, convID, "test", time.Minute, &store.Touch{TenantID: "acme-bus", PhoneNumberID: number,
		ContactID: res.Contact.ID, Contact: id.WaID, UserID: id.UserID + id.ParentUserID, InboundAt: at})
	if err != nil || !ok {
		t.Fatalf("acquire: %v %v", ok, err)
	}
	if err := w.convs.Release(ctx, convID, conv.Lease); err != nil {
		t.Fatal(err)
	}
	return convID
}

// TestIdempotencyKeyReplayAcrossTheUpgrade: a send stored before sends by BSUID, under the
// request hash of then, is found by a replay of its Idempotency-Key with the same body after the
// upgrade: a replay, nothing new stored; the same key with a recipient added is another body.
func TestIdempotencyKeyReplayAcrossTheUpgrade(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newOutboxWorld(t)
	w.wrote(t, contact.Identity{WaID: phone}, time.Now().Add(-time.Hour))
	msg := graph.Message{Type: "text", Text: &graph.Text{Body: "Your bus leaves at 9"}}
	id := w.ob.MessageID("acme-bus", "order-42")
	old := store.OutboundRecord{IdempotencyKey: tasks.SendKey(id), Source: store.SourceAPI, APIMessageID: id,
		RequestHash: oldRequestHash(t, number, phone, msg), TenantID: "acme-bus", PhoneNumberID: number, To: phone,
		Message: `{"messaging_product":"","to":"","type":"text","text":{"body":"Your bus leaves at 9"}}`, MessageType: "text"}
	if _, _, err := w.sends.CreateSend(ctx, old); err != nil {
		t.Fatal(err)
	}
	req := outbox.Request{TenantID: "acme-bus", To: phone, Message: msg, IdempotencyKey: "order-42"}
	res, err := w.ob.Send(ctx, req)
	if err != nil || res.ID != id || !res.Replay {
		t.Fatalf("replay after the upgrade: id %s replay %v (%v), want %s, a replay", res.ID, res.Replay, err, id)
	}
	withRecipient := req
	withRecipient.Recipient = userID
	var refused *refusal.Error
	if _, err := w.ob.Send(ctx, withRecipient); !errors.As(err, &refused) || refused.Code != refusal.IdempotencyKeyReused {
		t.Errorf("the same key with a recipient added: %v, want %s", err, refusal.IdempotencyKeyReused)
	}
}

// TestSendByRecipient: a person who wrote by BSUID alone opens the window for a send by
// recipient, which is stored with Recipient, no To, the person's conversation and the keyed us_
// reference; a replay by recipient is a replay. A BSUID that never wrote has no window: only a
// template goes.
func TestSendByRecipient(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newOutboxWorld(t)
	for _, recipient := range []string{userID, parentUserID} {
		id := contact.Identity{UserID: recipient}
		if contact.ValidParentUserID(recipient) {
			id = contact.Identity{ParentUserID: recipient}
		}
		convID := w.wrote(t, id, time.Now().Add(-time.Hour))
		req := outbox.Request{TenantID: "acme-bus", Recipient: recipient, Message: graph.Message{Type: "text", Text: &graph.Text{Body: "hi"}},
			IdempotencyKey: "by-" + recipient}
		res, err := w.ob.Send(ctx, req)
		if err != nil || res.Replay {
			t.Fatalf("text by recipient %s inside the window: %+v %v, want accepted", recipient, res, err)
		}
		rec, err := w.sends.GetSend(ctx, res.IdempotencyKey)
		if err != nil {
			t.Fatal(err)
		}
		if rec.To != "" || rec.Recipient != recipient || rec.ConversationID != convID || rec.ToHash != logging.DevHasher().User(recipient) ||
			rec.State != store.OutboundPending || strings.Contains(rec.Message, recipient) {
			t.Errorf("record %+v: want by recipient %s alone, conversation %s, keyed us_, pending, the id not in the message", rec, recipient, convID)
		}
		if again, err := w.ob.Send(ctx, req); err != nil || !again.Replay || again.ID != res.ID {
			t.Errorf("replay by recipient: %+v %v, want a replay of %s", again, err, res.ID)
		}
	}
	stranger := outbox.Request{TenantID: "acme-bus", Recipient: "US.55555555555", Message: graph.Message{Type: "text", Text: &graph.Text{Body: "hi"}}}
	var refused *refusal.Error
	if _, err := w.ob.Send(ctx, stranger); !errors.As(err, &refused) || refused.Code != refusal.OutsideWindow {
		t.Errorf("text to a BSUID that never wrote: %v, want %s", err, refusal.OutsideWindow)
	}
	stranger.Message = graph.Message{Type: "template", Template: &graph.Template{Name: "hello_world", Language: graph.Language{Code: "en_US"}}}
	if _, err := w.ob.Send(ctx, stranger); err != nil {
		t.Errorf("template to a BSUID that never wrote: %v, want accepted", err)
	}
	// A window 25 hours old is closed for a send by recipient as for one by phone.
	w.wrote(t, contact.Identity{UserID: "US.66666666666"}, time.Now().Add(-25*time.Hour))
	late := outbox.Request{TenantID: "acme-bus", Recipient: "US.66666666666", Message: graph.Message{Type: "text", Text: &graph.Text{Body: "hi"}}}
	if _, err := w.ob.Send(ctx, late); !errors.As(err, &refused) || refused.Code != refusal.OutsideWindow {
		t.Errorf("text by recipient 25 h after the last message: %v, want %s", err, refusal.OutsideWindow)
	}
	if _, err := w.ob.Send(ctx, outbox.Request{TenantID: "acme-bus", Message: graph.Message{Type: "template",
		Template: &graph.Template{Name: "hello_world", Language: graph.Language{Code: "en_US"}}}}); !errors.As(err, &refused) || refused.Code != refusal.InvalidRequest {
		t.Errorf("a send to nobody: %v, want %s", err, refusal.InvalidRequest)
	}
}

// TestToWinsForTheWindow: with both to and recipient the message goes to to, so the window is
// the phone's contact's, even when the recipient names another, older contact: its window
// neither opens nor closes the send. When the tenant does not know the phone, the recipient's
// contact's window counts (the phone may be theirs, not yet shared).
func TestToWinsForTheWindow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	text := graph.Message{Type: "text", Text: &graph.Text{Body: "hi"}}
	for _, tc := range []struct {
		name                    string
		phoneWrote, bsuidWrote  bool // who wrote in the last 24 hours (the BSUID's contact is older)
		bsuidKnown, phoneKnown  bool
		wantAccepted            bool
		wantConversationOfPhone bool
	}{
		{"the phone's window open, the older recipient's closed", true, false, true, true, true, true},
		{"the phone's window closed, the older recipient's open", false, true, true, true, false, true},
		{"an unknown phone, the recipient's window open", false, true, true, false, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := newOutboxWorld(t)
			at := func(wrote bool) time.Time {
				if wrote {
					return time.Now().Add(-time.Hour)
				}
				return time.Now().Add(-48 * time.Hour)
			}
			var bsuidConv, phoneConv string
			if tc.bsuidKnown {
				bsuidConv = w.wrote(t, contact.Identity{UserID: userID}, at(tc.bsuidWrote))
			}
			if tc.phoneKnown {
				phoneConv = w.wrote(t, contact.Identity{WaID: phone}, at(tc.phoneWrote))
			}
			res, err := w.ob.Send(ctx, outbox.Request{TenantID: "acme-bus", To: phone, Recipient: userID, Message: text})
			var refused *refusal.Error
			switch {
			case tc.wantAccepted && err != nil:
				t.Fatalf("Send: %v, want accepted", err)
			case !tc.wantAccepted && (!errors.As(err, &refused) || refused.Code != refusal.OutsideWindow):
				t.Fatalf("Send: %+v %v, want %s", res, err, refusal.OutsideWindow)
			case !tc.wantAccepted:
				return
			}
			want := bsuidConv
			if tc.wantConversationOfPhone {
				want = phoneConv
			}
			if res.Record.To != phone || res.Record.Recipient != userID || res.Record.ConversationID != want || res.Record.ToHash != logging.DevHasher().Phone(phone) {
				t.Errorf("record to %q recipient %q conversation %q to_hash %q; want both, conversation %q, the phone's hash",
					res.Record.To, res.Record.Recipient, res.Record.ConversationID, res.Record.ToHash, want)
			}
		})
	}
}
