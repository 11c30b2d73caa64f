package whatsapp

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/wapipe/wapipe/internal/contact"
)

// The people of the bsuid_*.json payloads. Ana shares her phone; Bo has a username and no phone
// this business may see. Every identifier is invented, in the forms usernames.md gives.
const (
	bizPhone = "15550783881"

	anaPhone    = "16505551234"
	anaUser     = "US.7305518822604419"
	anaParent   = "US.ENT.9012846650172233"
	anaNewPhone = "16505559876"
	anaNewUser  = "US.8841260937715502"

	boUser      = "CO.5581920374461120"
	boParent    = "CO.ENT.4471902288135506"
	boNewUser   = "CO.6690314852207719"
	boNewParent = "CO.ENT.5582013399246617"
)

// bsuidRows are the testdata payloads of the table of shared/meta/usernames.md, one or more per
// row; FuzzNormalize seeds from them too.
var bsuidRows = []string{
	"bsuid_text_phone_parent.json",
	"bsuid_text_username_only.json",
	"bsuid_status_sent.json",
	"bsuid_status_delivered.json",
	"bsuid_status_read.json",
	"bsuid_status_failed.json",
	"bsuid_status_parent_old_spelling.json",
	"bsuid_status_parent_new_spelling.json",
	"bsuid_echo.json",
	"bsuid_user_preferences.json",
	"bsuid_calls.json",
	"bsuid_call_status.json",
	"bsuid_revoke.json",
	"bsuid_edit.json",
	"bsuid_call_permission_reply.json",
	"bsuid_user_changed_number.json",
	"bsuid_user_changed_number_before_20260811.json",
	"bsuid_user_changed_user_id.json",
	"bsuid_user_id_update.json",
	"bsuid_no_identifier.json",
	"bsuid_batch_several_senders.json",
}

// identityView is everything the parser says about one body: what Normalize and Events give,
// and who each message, status and change names.
type identityView struct {
	Messages   []Message
	Senders    []contact.Identity // Message.Identity of each message
	Changes    []IdentityChange   // Message.IdentityChange of the messages that announce one
	Statuses   []Status
	Recipients []contact.Identity // Status.Recipient of each status
	Events     []Event
}

func viewOf(t testing.TB, body []byte) identityView {
	t.Helper()
	p, err := Parse(body)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	var v identityView
	v.Messages, v.Statuses = Normalize(p)
	v.Events = Events(p)
	for _, m := range v.Messages {
		v.Senders = append(v.Senders, m.Identity())
		if ch, ok := m.IdentityChange(); ok {
			v.Changes = append(v.Changes, ch)
		}
	}
	for _, s := range v.Statuses {
		v.Recipients = append(v.Recipients, s.Recipient())
	}
	return v
}

// viewOpts ignore Raw (TestNormalizeMessages checks it) and nil against empty slices.
var viewOpts = cmp.Options{cmpopts.IgnoreFields(Message{}, "Raw"), cmpopts.EquateEmpty()}

// TestBSUIDWebhooks walks the table of shared/meta/usernames.md: every payload, phone or no
// phone, gives its messages, statuses and events, each naming the person by every identifier
// Meta sent and by none it did not.
func TestBSUIDWebhooks(t *testing.T) {
	t.Parallel()
	msg := func(id, ts, typ string, f func(*Message)) Message {
		m := Message{ID: id, PhoneNumberID: testPNID, DisplayPhoneNumber: testDisp, Timestamp: ts, Type: typ}
		f(&m)
		return m
	}
	// fromBo is a message from Bo as Meta sends it for a username user: no phone anywhere, his
	// profile attached through contacts[].user_id.
	fromBo := func(m *Message) { m.FromUserID, m.ContactName, m.Username = boUser, "Bo Rivera", "bo_rivera" }
	bo := contact.Identity{UserID: boUser, Username: "bo_rivera", Name: "Bo Rivera"}
	no := false
	event := func(field string, f func(*Event)) Event {
		e := Event{Field: field, WABAID: "102290129340398", PhoneNumberID: testPNID}
		f(&e)
		return e
	}
	boStatus := func(status, ts string, f func(*Status)) Status {
		s := Status{ID: "wamid.bsuid-out-1", Status: status, Timestamp: ts, RecipientUserID: boUser, PhoneNumberID: testPNID,
			BizOpaqueCallbackData: "idem-7c41d0"}
		f(&s)
		return s
	}

	tests := []struct {
		file string
		want identityView
	}{{
		file: "bsuid_text_phone_parent.json",
		want: identityView{
			Messages: []Message{msg("wamid.bsuid-text-phone-parent", "1784541600", "text", func(m *Message) {
				m.From, m.FromUserID, m.FromParentUserID, m.ContactName = anaPhone, anaUser, anaParent, "Ana Lima"
				m.Text = "Is the store open on Sunday?"
			})},
			Senders: []contact.Identity{{WaID: anaPhone, UserID: anaUser, ParentUserID: anaParent, Name: "Ana Lima"}},
		},
	}, {
		// The username arrives with its "@"; the identity keeps the name without it.
		file: "bsuid_text_username_only.json",
		want: identityView{
			Messages: []Message{msg("wamid.bsuid-text-username-only", "1784541601", "text", func(m *Message) {
				fromBo(m)
				m.Text = "Hi, I found you by your username"
			})},
			Senders: []contact.Identity{bo},
		},
	}, {
		// A status names its recipient by the status's own fields; the contacts[] beside it is
		// accepted and adds nothing a status carries.
		file: "bsuid_status_sent.json",
		want: identityView{
			Statuses: []Status{boStatus("sent", "1784541700", func(s *Status) {
				s.ConversationID, s.PricingCategory, s.PricingType, s.Billable = "0b6f3e1a9c2d4e5f8a7b6c5d4e3f2a1b", "service", "free_customer_service", &no
			})},
			Recipients: []contact.Identity{{UserID: boUser}},
		},
	}, {
		file: "bsuid_status_delivered.json",
		want: identityView{
			Statuses: []Status{boStatus("delivered", "1784541702", func(s *Status) {
				s.ConversationID = "0b6f3e1a9c2d4e5f8a7b6c5d4e3f2a1b"
			})},
			Recipients: []contact.Identity{{UserID: boUser}},
		},
	}, {
		file: "bsuid_status_read.json",
		want: identityView{
			Statuses:   []Status{boStatus("read", "1784541760", func(*Status) {})},
			Recipients: []contact.Identity{{UserID: boUser}},
		},
	}, {
		file: "bsuid_status_failed.json",
		want: identityView{
			Statuses: []Status{{ID: "wamid.bsuid-out-2", Status: "failed", Timestamp: "1784541800", RecipientUserID: boUser,
				PhoneNumberID: testPNID, Errors: []Error{{Code: 131026, Title: "Message undeliverable", Message: "Message undeliverable",
					Details: "Message Undeliverable."}}}},
			Recipients: []contact.Identity{{UserID: boUser}},
		},
	}, {
		// parent_recipient_user_id is the spelling of some older payloads.
		file: "bsuid_status_parent_old_spelling.json",
		want: identityView{
			Statuses: []Status{{ID: "wamid.bsuid-out-3", Status: "delivered", Timestamp: "1784541900", RecipientID: anaPhone,
				RecipientUserID: anaUser, RecipientParentUserID: anaParent, PhoneNumberID: testPNID}},
			Recipients: []contact.Identity{{WaID: anaPhone, UserID: anaUser, ParentUserID: anaParent}},
		},
	}, {
		file: "bsuid_status_parent_new_spelling.json",
		want: identityView{
			Statuses: []Status{{ID: "wamid.bsuid-out-4", Status: "read", Timestamp: "1784541960",
				RecipientUserID: anaUser, RecipientParentUserID: anaParent, PhoneNumberID: testPNID}},
			Recipients: []contact.Identity{{UserID: anaUser, ParentUserID: anaParent}},
		},
	}, {
		// The echo's From is the business number; the person is the addressee, Bo.
		file: "bsuid_echo.json",
		want: identityView{Events: []Event{event(FieldMessageEchoes, func(e *Event) {
			e.Contact = bo
			e.Echo = &Message{ID: "wamid.bsuid-echo", From: bizPhone, PhoneNumberID: testPNID, DisplayPhoneNumber: testDisp,
				Timestamp: "1784542000", Type: "text", Text: "We open at 9"}
		})}},
	}, {
		file: "bsuid_user_preferences.json",
		want: identityView{Events: []Event{event(FieldUserPreferences, func(e *Event) {
			e.Contact = bo
			e.Preference = &Preference{Category: "marketing_messages", Value: "stop", Stop: true, Timestamp: "1784542100"}
		})}},
	}, {
		// Whoever placed the call, the person is Bo and never the business number.
		file: "bsuid_calls.json",
		want: identityView{Events: []Event{
			event(FieldCalls, func(e *Event) {
				e.Contact = bo
				e.Call = &CallEvent{ID: "wacid.bsuid-call-in", FromUserID: boUser, To: bizPhone, Event: "connect",
					Direction: "USER_INITIATED", Timestamp: "1784542200"}
			}),
			event(FieldCalls, func(e *Event) {
				e.Contact = bo
				e.Call = &CallEvent{ID: "wacid.bsuid-call-out", From: bizPhone, ToUserID: boUser, Event: "connect",
					Direction: "BUSINESS_INITIATED", Timestamp: "1784542300"}
			}),
		}},
	}, {
		// A call status is read like any status (Normalize reads statuses whatever the field).
		file: "bsuid_call_status.json",
		want: identityView{
			Statuses: []Status{{ID: "wacid.bsuid-call-out", Status: "RINGING", Timestamp: "1784542301", RecipientUserID: boUser,
				PhoneNumberID: testPNID, BizOpaqueCallbackData: "call-7c41d0"}},
			Recipients: []contact.Identity{{UserID: boUser}},
		},
	}, {
		file: "bsuid_revoke.json",
		want: identityView{
			Messages: []Message{msg("wamid.bsuid-revoke", "1784542400", "revoke", func(m *Message) {
				fromBo(m)
				m.OriginalID = "wamid.bsuid-text-username-only"
			})},
			Senders: []contact.Identity{bo},
		},
	}, {
		file: "bsuid_edit.json",
		want: identityView{
			Messages: []Message{msg("wamid.bsuid-edit", "1784542500", "edit", func(m *Message) {
				fromBo(m)
				m.OriginalID, m.Text = "wamid.bsuid-text-username-only", "Hi, I found you by your @"
			})},
			Senders: []contact.Identity{bo},
		},
	}, {
		file: "bsuid_call_permission_reply.json",
		want: identityView{
			Messages: []Message{msg("wamid.bsuid-permission-reply", "1784542600", "interactive", func(m *Message) {
				fromBo(m)
				m.ContextID, m.Reply = "wamid.bsuid-permission-request", &Reply{Kind: InteractiveCallPermission, ID: "accept"}
			})},
			Senders: []contact.Identity{bo},
		},
	}, {
		// A system message has no contacts[]: no name. The message comes from the old identity.
		file: "bsuid_user_changed_number.json",
		want: identityView{
			Messages: []Message{msg("wamid.bsuid-changed-number", "1788341400", "system", func(m *Message) {
				m.From, m.FromUserID = anaPhone, anaUser
				m.System = &SystemNotice{Type: SystemUserChangedNumber, NewWaID: anaNewPhone, UserID: anaNewUser, PreviousUserID: anaUser}
			})},
			Senders: []contact.Identity{{WaID: anaPhone, UserID: anaUser}},
			Changes: []IdentityChange{{Type: SystemUserChangedNumber,
				Previous: contact.Identity{WaID: anaPhone, UserID: anaUser},
				Current:  contact.Identity{WaID: anaNewPhone, UserID: anaNewUser}}},
		},
	}, {
		// Before 2026-08-11 previous_user_id did not exist: the sender's BSUID is the old one,
		// and the change is the same as above.
		file: "bsuid_user_changed_number_before_20260811.json",
		want: identityView{
			Messages: []Message{msg("wamid.bsuid-changed-number-old", "1786000000", "system", func(m *Message) {
				m.From, m.FromUserID = anaPhone, anaUser
				m.System = &SystemNotice{Type: SystemUserChangedNumber, NewWaID: anaNewPhone, UserID: anaNewUser}
			})},
			Senders: []contact.Identity{{WaID: anaPhone, UserID: anaUser}},
			Changes: []IdentityChange{{Type: SystemUserChangedNumber,
				Previous: contact.Identity{WaID: anaPhone, UserID: anaUser},
				Current:  contact.Identity{WaID: anaNewPhone, UserID: anaNewUser}}},
		},
	}, {
		file: "bsuid_user_changed_user_id.json",
		want: identityView{
			Messages: []Message{msg("wamid.bsuid-changed-user-id", "1788341500", "system", func(m *Message) {
				m.FromUserID, m.FromParentUserID = boUser, boParent
				m.System = &SystemNotice{Type: SystemUserChangedUserID, UserID: boNewUser, PreviousUserID: boUser,
					ParentUserID: boNewParent, PreviousParentUserID: boParent}
			})},
			Senders: []contact.Identity{{UserID: boUser, ParentUserID: boParent}},
			Changes: []IdentityChange{{Type: SystemUserChangedUserID,
				Previous: contact.Identity{UserID: boUser, ParentUserID: boParent},
				Current:  contact.Identity{UserID: boNewUser, ParentUserID: boNewParent}}},
		},
	}, {
		// The withdrawn user_id_update field is still applied: one event per update, about the
		// person as they were known.
		file: "bsuid_user_id_update.json",
		want: identityView{Events: []Event{
			event(FieldUserIDUpdate, func(e *Event) {
				e.Contact = contact.Identity{UserID: boUser, ParentUserID: boParent}
				e.IdentityChange = &IdentityChange{Type: FieldUserIDUpdate, Previous: e.Contact,
					Current: contact.Identity{UserID: boNewUser, ParentUserID: boNewParent}}
			}),
			event(FieldUserIDUpdate, func(e *Event) {
				e.Contact = contact.Identity{WaID: anaPhone, UserID: anaUser}
				e.IdentityChange = &IdentityChange{Type: FieldUserIDUpdate, Previous: e.Contact,
					Current: contact.Identity{WaID: anaPhone, UserID: anaNewUser}}
			}),
		}},
	}, {
		// A message that names nobody is still a message, and the lone profile beside it is
		// not attached to it: a profile belongs to an identifier, never to "nobody".
		file: "bsuid_no_identifier.json",
		want: identityView{
			Messages: []Message{msg("wamid.bsuid-no-identifier", "1784542700", "text", func(m *Message) { m.Text = "Who am I?" })},
			Senders:  []contact.Identity{{}},
		},
	}, {
		// Several senders in one batch: each message gets the profile and the identifiers of
		// the contacts[] entry that shares one of its identifiers, whichever (phone or BSUID),
		// in whatever order.
		file: "bsuid_batch_several_senders.json",
		want: identityView{
			Messages: []Message{
				msg("wamid.batch-1", "1784542800", "text", func(m *Message) { fromBo(m); m.Text = "one" }),
				msg("wamid.batch-2", "1784542801", "text", func(m *Message) {
					m.From, m.FromUserID, m.ContactName, m.Text = anaPhone, anaUser, "Ana Lima", "two"
				}),
				msg("wamid.batch-3", "1784542802", "text", func(m *Message) { m.From, m.ContactName, m.Text = "6581234567", "Chen Wei", "three" }),
				// Ana without her phone in the message: her BSUID finds her contacts[] entry,
				// which gives the phone as well.
				msg("wamid.batch-4", "1784542803", "text", func(m *Message) {
					m.From, m.FromUserID, m.ContactName, m.Text = anaPhone, anaUser, "Ana Lima", "four"
				}),
				// A BSUID no contacts[] entry names: no one else's profile.
				msg("wamid.batch-5", "1784542804", "text", func(m *Message) { m.FromUserID, m.Text = "GB.3390187265541208", "five" }),
			},
			Senders: []contact.Identity{
				bo,
				{WaID: anaPhone, UserID: anaUser, Name: "Ana Lima"},
				{WaID: "6581234567", Name: "Chen Wei"},
				{WaID: anaPhone, UserID: anaUser, Name: "Ana Lima"},
				{UserID: "GB.3390187265541208"},
			},
		},
	}}

	covered := map[string]bool{}
	for _, tc := range tests {
		covered[tc.file] = true
		t.Run(tc.file, func(t *testing.T) {
			t.Parallel()
			got := viewOf(t, readTestdata(t, tc.file))
			if diff := cmp.Diff(tc.want, got, viewOpts); diff != "" {
				t.Errorf("(-want, +got):\n%s", diff)
			}
		})
	}
	for _, f := range bsuidRows {
		if !covered[f] {
			t.Errorf("row %s has no expectation", f)
		}
	}
}

// TestIdentityChangeWithoutPreviousUserID pins how the previous identity is found when Meta did
// not send previous_user_id (payloads from before 2026-08-11): it is the sender's, and never the
// new identity itself.
func TestIdentityChangeWithoutPreviousUserID(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		msg  string
		want IdentityChange
	}{{
		name: "user_changed_user_id, sender is the old BSUID",
		msg: `{"from_user_id":"` + boUser + `","from_parent_user_id":"` + boParent + `","id":"wamid.C","timestamp":"1786000000","type":"system",` +
			`"system":{"type":"user_changed_user_id","user_id":"` + boNewUser + `","parent_user_id":"` + boNewParent + `"}}`,
		want: IdentityChange{Type: SystemUserChangedUserID,
			Previous: contact.Identity{UserID: boUser, ParentUserID: boParent},
			Current:  contact.Identity{UserID: boNewUser, ParentUserID: boNewParent}},
	}, {
		// The phone stays the person's when only the BSUID changes, so Current does not repeat
		// it (an empty field of Current did not change).
		name: "user_changed_user_id, a phone user",
		msg: `{"from":"` + anaPhone + `","from_user_id":"` + anaUser + `","id":"wamid.C","timestamp":"1786000000","type":"system",` +
			`"system":{"type":"user_changed_user_id","wa_id":"` + anaPhone + `","user_id":"` + anaNewUser + `"}}`,
		want: IdentityChange{Type: SystemUserChangedUserID,
			Previous: contact.Identity{WaID: anaPhone, UserID: anaUser},
			Current:  contact.Identity{UserID: anaNewUser}},
	}, {
		// A sender that already is the new BSUID says nothing about the old one.
		name: "sender is already the new BSUID",
		msg: `{"from":"` + anaPhone + `","from_user_id":"` + anaNewUser + `","id":"wamid.C","timestamp":"1786000000","type":"system",` +
			`"system":{"type":"user_changed_number","wa_id":"` + anaNewPhone + `","user_id":"` + anaNewUser + `"}}`,
		want: IdentityChange{Type: SystemUserChangedNumber,
			Previous: contact.Identity{WaID: anaPhone},
			Current:  contact.Identity{WaID: anaNewPhone, UserID: anaNewUser}},
	}, {
		// The oldest shape: new_wa_id, no BSUID at all.
		name: "user_changed_number, phones only",
		msg: `{"from":"` + anaPhone + `","id":"wamid.C","timestamp":"1700000000","type":"system",` +
			`"system":{"body":"changed","new_wa_id":"` + anaNewPhone + `","type":"user_changed_number"}}`,
		want: IdentityChange{Type: SystemUserChangedNumber,
			Previous: contact.Identity{WaID: anaPhone},
			Current:  contact.Identity{WaID: anaNewPhone}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v := viewOf(t, change(FieldMessages, `{`+meta+`,"messages":[`+tt.msg+`]}`))
			if diff := cmp.Diff([]IdentityChange{tt.want}, v.Changes); diff != "" {
				t.Errorf("IdentityChange (-want, +got):\n%s", diff)
			}
		})
	}
}

// TestNoIdentityChangeFromOtherMessages: only the two identity notices are changes; a security
// notification (customer_identity_changed) and ordinary messages are not.
func TestNoIdentityChangeFromOtherMessages(t *testing.T) {
	t.Parallel()
	for _, m := range []string{
		`{"from":"` + anaPhone + `","id":"wamid.C","type":"system","system":{"body":"User identity changed","type":"customer_identity_changed"}}`,
		`{"from":"` + anaPhone + `","id":"wamid.C","type":"system"}`,
		`{"from_user_id":"` + boUser + `","id":"wamid.C","type":"text","text":{"body":"user_changed_user_id"},"system":{"type":"user_changed_user_id","user_id":"` + boNewUser + `"}}`,
	} {
		if v := viewOf(t, change(FieldMessages, `{`+meta+`,"messages":[`+m+`]}`)); len(v.Changes) != 0 {
			t.Errorf("%s: IdentityChange = %+v, want none", m, v.Changes)
		}
	}
}

// phoneFields are the keys of the phone family in usernames.md: Meta may omit any of them.
var phoneFields = map[string]bool{"from": true, "wa_id": true, "recipient_id": true, "to": true, "new_wa_id": true}

// withoutPhones is body with every phone-family key removed, at any depth.
func withoutPhones(t testing.TB, body []byte) []byte {
	t.Helper()
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatal(err)
	}
	var strip func(any)
	strip = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, e := range v {
				if phoneFields[k] {
					delete(v, k)
					continue
				}
				strip(e)
			}
		case []any:
			for _, e := range v {
				strip(e)
			}
		}
	}
	strip(v)
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// noPhone is id without its phone. A person known by the phone alone is then nobody, and their
// profile goes too: a profile is only ever attached through an identifier.
func noPhone(id contact.Identity) contact.Identity {
	id.WaID = ""
	if id.IsZero() {
		return contact.Identity{}
	}
	return id
}

// TestNoPhoneFieldIsRequired removes every phone-family field from every payload of the table:
// nothing is lost but the phones. The same messages, statuses and events come out, naming the
// same people by their BSUIDs, with the same names and usernames.
func TestNoPhoneFieldIsRequired(t *testing.T) {
	t.Parallel()
	type who struct {
		IDs        []string
		Senders    []contact.Identity
		Changes    []IdentityChange
		Recipients []contact.Identity
		Contacts   []contact.Identity
		Echoes     []contact.Identity
	}
	summary := func(v identityView, strip bool) who {
		f := func(id contact.Identity) contact.Identity { return id }
		if strip {
			f = noPhone
		}
		var w who
		for i, m := range v.Messages {
			w.IDs = append(w.IDs, m.ID)
			w.Senders = append(w.Senders, f(v.Senders[i]))
		}
		for _, ch := range v.Changes {
			w.Changes = append(w.Changes, IdentityChange{Type: ch.Type, Previous: f(ch.Previous), Current: f(ch.Current)})
		}
		for i, s := range v.Statuses {
			w.IDs = append(w.IDs, s.DedupeKey())
			w.Recipients = append(w.Recipients, f(v.Recipients[i]))
		}
		for _, e := range v.Events {
			w.IDs = append(w.IDs, e.Field)
			w.Contacts = append(w.Contacts, f(e.Contact))
			if e.Echo != nil {
				w.Echoes = append(w.Echoes, f(e.Echo.Identity()))
			}
		}
		return w
	}
	for _, file := range bsuidRows {
		t.Run(file, func(t *testing.T) {
			t.Parallel()
			body := readTestdata(t, file)
			want := summary(viewOf(t, body), true)
			got := summary(viewOf(t, withoutPhones(t, body)), false)
			if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("without phones (-want, +got):\n%s", diff)
			}
		})
	}
}

// TestCallEventContact: a call event is about the WhatsApp user, whichever side placed the call;
// the business number at the other end is never the contact.
func TestCallEventContact(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		call string
		want contact.Identity
	}{
		{"user-initiated, phones", `{"id":"c","from":"` + anaPhone + `","to":"` + bizPhone + `","direction":"USER_INITIATED"}`,
			contact.Identity{WaID: anaPhone}},
		{"business-initiated, phones", `{"id":"c","from":"` + bizPhone + `","to":"` + anaPhone + `","direction":"BUSINESS_INITIATED"}`,
			contact.Identity{WaID: anaPhone}},
		{"business-initiated, phone and BSUID", `{"id":"c","from":"` + bizPhone + `","to":"` + anaPhone + `","to_user_id":"` + anaUser + `","direction":"BUSINESS_INITIATED"}`,
			contact.Identity{WaID: anaPhone, UserID: anaUser}},
		// Without a direction, the side with a BSUID is the user's: a business number has none.
		{"no direction, callee has the BSUID", `{"id":"c","from":"` + bizPhone + `","to_user_id":"` + boUser + `"}`,
			contact.Identity{UserID: boUser}},
		{"no direction, caller has the BSUID", `{"id":"c","from_user_id":"` + boUser + `","to":"` + bizPhone + `"}`,
			contact.Identity{UserID: boUser}},
		{"no direction, phones only: the caller, as before", `{"id":"c","from":"` + anaPhone + `","to":"` + bizPhone + `"}`,
			contact.Identity{WaID: anaPhone}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			evs := viewOf(t, change(FieldCalls, `{`+meta+`,"calls":[`+tt.call+`]}`)).Events
			if len(evs) != 1 {
				t.Fatalf("Events gave %d events, want 1", len(evs))
			}
			if diff := cmp.Diff(tt.want, evs[0].Contact); diff != "" {
				t.Errorf("call contact (-want, +got):\n%s", diff)
			}
		})
	}
}
