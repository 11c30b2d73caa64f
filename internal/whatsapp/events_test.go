package whatsapp

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/wapipe/wapipe/internal/contact"
)

// change wraps one change's value, as Meta sends it, in the envelope.
func change(field, value string) []byte {
	return []byte(`{"object":"whatsapp_business_account","entry":[{"id":"102290129340398","time":1732440000,"changes":[{"field":"` +
		field + `","value":` + value + `}]}]}`)
}

const meta = `"messaging_product":"whatsapp","metadata":{"display_phone_number":"15550783881","phone_number_id":"106540352242922"}`

// message wraps one message object in a "messages" change.
func message(m string) []byte {
	return change("messages", `{`+meta+`,"contacts":[{"profile":{"name":"Sheena Nelson"},"wa_id":"16505551234"}],"messages":[`+m+`]}`)
}

// TestNormalizeOtherMessageKinds parses the message kinds of Meta's other events (revoke, edit,
// order, system, call permission reply, unsupported) in the Cloud API's shapes.
func TestNormalizeOtherMessageKinds(t *testing.T) {
	t.Parallel()
	base := Message{ID: "wamid.B", From: "16505551234", ContactName: "Sheena Nelson", PhoneNumberID: "106540352242922",
		DisplayPhoneNumber: "15550783881", Timestamp: "1732440000"}
	with := func(f func(*Message)) Message { m := base; f(&m); return m }
	tests := []struct {
		name string
		msg  string
		want Message
	}{{
		name: "revoke",
		msg:  `{"from":"16505551234","id":"wamid.B","timestamp":"1732440000","type":"revoke","revoke":{"original_message_id":"wamid.A"}}`,
		want: with(func(m *Message) { m.Type, m.OriginalID = "revoke", "wamid.A" }),
	}, {
		name: "edit of a text",
		msg:  `{"from":"16505551234","id":"wamid.B","timestamp":"1732440000","type":"edit","edit":{"original_message_id":"wamid.A","message":{"type":"text","text":{"body":"Bus 02 on 2 March"}}}}`,
		want: with(func(m *Message) { m.Type, m.OriginalID, m.Text = "edit", "wamid.A", "Bus 02 on 2 March" }),
	}, {
		name: "edit of a caption",
		msg:  `{"from":"16505551234","id":"wamid.B","timestamp":"1732440000","type":"edit","edit":{"original_message_id":"wamid.A","message":{"type":"image","image":{"id":"77","mime_type":"image/jpeg","caption":"new caption"}}}}`,
		want: with(func(m *Message) {
			m.Type, m.OriginalID, m.Text = "edit", "wamid.A", "new caption"
			m.Media = &Media{ID: "77", MimeType: "image/jpeg"}
		}),
	}, {
		name: "order",
		msg:  `{"from":"16505551234","id":"wamid.B","timestamp":"1732440000","type":"order","order":{"catalog_id":"C1","text":"no onions","product_items":[{"product_retailer_id":"burger","quantity":3,"item_price":25000,"currency":"IDR"},{"product_retailer_id":"fries","quantity":2,"item_price":12000.50,"currency":"IDR"}]}}`,
		want: with(func(m *Message) {
			m.Type = "order"
			m.Order = &OrderInfo{CatalogID: "C1", Text: "no onions", Items: []OrderItem{
				{ProductRetailerID: "burger", Quantity: "3", ItemPrice: "25000", Currency: "IDR"},
				{ProductRetailerID: "fries", Quantity: "2", ItemPrice: "12000.50", Currency: "IDR"}}}
		}),
	}, {
		name: "user changed number",
		msg:  `{"from":"16505551234","id":"wamid.B","timestamp":"1732440000","type":"system","system":{"body":"NAME changed from 16505551234 to 16505559999","wa_id":"16505559999","type":"user_changed_number"}}`,
		want: with(func(m *Message) {
			m.Type, m.System = "system", &SystemNotice{Type: "user_changed_number", NewWaID: "16505559999"}
		}),
	}, {
		name: "user changed number, older new_wa_id",
		msg:  `{"from":"16505551234","id":"wamid.B","timestamp":"1732440000","type":"system","system":{"body":"changed","new_wa_id":"16505559999","type":"user_changed_number"}}`,
		want: with(func(m *Message) {
			m.Type, m.System = "system", &SystemNotice{Type: "user_changed_number", NewWaID: "16505559999"}
		}),
	}, {
		name: "call permission reply",
		msg:  `{"context":{"from":"15550783881","id":"wamid.P"},"from":"16505551234","id":"wamid.B","timestamp":"1732440000","type":"interactive","interactive":{"type":"call_permission_reply","call_permission_reply":{"response":"accept","is_permanent":false,"expiration_timestamp":1732526400,"response_source":"user_action"}}}`,
		want: with(func(m *Message) {
			m.Type, m.ContextID, m.Reply = "interactive", "wamid.P", &Reply{Kind: "call_permission_reply", ID: "accept"}
		}),
	}, {
		name: "unsupported",
		msg:  `{"from":"16505551234","id":"wamid.B","timestamp":"1732440000","type":"unsupported","errors":[{"code":131051,"title":"Message type unknown","message":"Message type unknown","error_data":{"details":"Message type is currently not supported."}}],"unsupported":{"type":"poll"}}`,
		want: with(func(m *Message) {
			m.Type = "unsupported"
			m.Errors = []Error{{Code: 131051, Title: "Message type unknown", Message: "Message type unknown", Details: "Message type is currently not supported."}}
		}),
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, err := Parse(message(tt.msg))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			msgs, _ := Normalize(p)
			if len(msgs) != 1 {
				t.Fatalf("Normalize gave %d messages, want 1", len(msgs))
			}
			got := msgs[0]
			got.Raw = nil
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("message (-want, +got):\n%s", diff)
			}
			if evs := Events(p); len(evs) != 0 {
				t.Errorf("Events of a messages change = %+v, want none", evs)
			}
		})
	}
}

// TestEventsOfOtherFields parses every other subscribed field wapipe handles, in the Cloud API's
// shapes, into Events; none of them yields a message or a status.
func TestEventsOfOtherFields(t *testing.T) {
	t.Parallel()
	base := Event{WABAID: "102290129340398", PhoneNumberID: "106540352242922"}
	with := func(field string, f func(*Event)) Event { e := base; e.Field = field; f(&e); return e }
	tests := []struct {
		name  string
		field string
		value string
		want  []Event
	}{{
		name:  "user preferences stop",
		field: "user_preferences",
		value: `{` + meta + `,"contacts":[{"profile":{"name":"Sheena"},"wa_id":"16505551234"}],"user_preferences":[{"wa_id":"16505551234","detail":"User requested to stop marketing messages","category":"marketing_messages","value":"stop","timestamp":1732440000}]}`,
		want: []Event{with("user_preferences", func(e *Event) {
			e.Contact = contact.Identity{WaID: "16505551234", Name: "Sheena"}
			e.Preference = &Preference{Category: "marketing_messages", Value: "stop", Stop: true, Timestamp: "1732440000"}
		})},
	}, {
		name:  "user preferences resume",
		field: "user_preferences",
		value: `{` + meta + `,"user_preferences":[{"wa_id":"16505551234","category":"marketing_messages","value":"resume","timestamp":1732440000}]}`,
		want: []Event{with("user_preferences", func(e *Event) {
			e.Contact = contact.Identity{WaID: "16505551234"}
			e.Preference = &Preference{Category: "marketing_messages", Value: "resume", Timestamp: "1732440000"}
		})},
	}, {
		name:  "message echo",
		field: "smb_message_echoes",
		value: `{` + meta + `,"message_echoes":[{"from":"15550783881","to":"16505551234","id":"wamid.E","timestamp":"1732440000","type":"text","text":{"body":"We open at 9"}}]}`,
		want: []Event{with("smb_message_echoes", func(e *Event) {
			e.Contact = contact.Identity{WaID: "16505551234"}
			e.Echo = &Message{ID: "wamid.E", From: "15550783881", PhoneNumberID: "106540352242922", DisplayPhoneNumber: "15550783881",
				Timestamp: "1732440000", Type: "text", Text: "We open at 9"}
		})},
	}, {
		name:  "account restriction",
		field: "account_update",
		value: `{"phone_number":"15550783881","event":"ACCOUNT_RESTRICTION","restriction_info":[{"restriction_type":"RESTRICTED_BIZ_INITIATED_MESSAGING","expiration":1732526400}]}`,
		want: []Event{{Field: "account_update", WABAID: "102290129340398",
			Account: &AccountChange{Event: "ACCOUNT_RESTRICTION", Detail: "RESTRICTED_BIZ_INITIATED_MESSAGING"}}},
	}, {
		name:  "account violation",
		field: "account_update",
		value: `{"phone_number":"15550783881","event":"ACCOUNT_VIOLATION","violation_info":{"violation_type":"ADULT"}}`,
		want: []Event{{Field: "account_update", WABAID: "102290129340398",
			Account: &AccountChange{Event: "ACCOUNT_VIOLATION", Detail: "ADULT"}}},
	}, {
		name:  "account disabled",
		field: "account_update",
		value: `{"event":"DISABLED_UPDATE","ban_info":{"waba_ban_state":"DISABLE","waba_ban_date":"2026-11-24"}}`,
		want: []Event{{Field: "account_update", WABAID: "102290129340398",
			Account: &AccountChange{Event: "DISABLED_UPDATE", Detail: "DISABLE"}}},
	}, {
		name:  "partner removed",
		field: "account_update",
		value: `{"event":"PARTNER_REMOVED"}`,
		want:  []Event{{Field: "account_update", WABAID: "102290129340398", Account: &AccountChange{Event: "PARTNER_REMOVED"}}},
	}, {
		name:  "template status",
		field: "message_template_status_update",
		value: `{"event":"APPROVED","message_template_id":594425479261596,"message_template_name":"spring_sale","message_template_language":"en_US","message_template_category":"MARKETING","reason":"NONE"}`,
		want: []Event{{Field: "message_template_status_update", WABAID: "102290129340398", Template: &TemplateChange{
			ID: "594425479261596", Name: "spring_sale", Language: "en_US", Status: "APPROVED", Reason: "NONE", Category: "MARKETING"}}},
	}, {
		name:  "template category",
		field: "template_category_update",
		value: `{"message_template_id":594425479261596,"message_template_name":"order_update","message_template_language":"en_US","previous_category":"MARKETING","new_category":"UTILITY"}`,
		want: []Event{{Field: "template_category_update", WABAID: "102290129340398", Template: &TemplateChange{
			ID: "594425479261596", Name: "order_update", Language: "en_US", Category: "UTILITY"}}},
	}, {
		name:  "calls",
		field: "calls",
		value: `{` + meta + `,"calls":[{"id":"wacid.C","to":"15550783881","from":"16505551234","event":"connect","timestamp":"1732440000","direction":"USER_INITIATED"}]}`,
		want: []Event{with("calls", func(e *Event) {
			e.Contact = contact.Identity{WaID: "16505551234"}
			e.Call = &CallEvent{ID: "wacid.C", From: "16505551234", To: "15550783881", Event: "connect", Direction: "USER_INITIATED", Timestamp: "1732440000"}
		})},
	}, {
		name:  "a field wapipe does not know",
		field: "business_capability_update",
		value: `{"max_daily_conversation_per_phone":1000}`,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, err := Parse(change(tt.field, tt.value))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if diff := cmp.Diff(tt.want, Events(p)); diff != "" {
				t.Errorf("Events (-want, +got):\n%s", diff)
			}
			if msgs, sts := Normalize(p); len(msgs)+len(sts) != 0 {
				t.Errorf("Normalize gave %d messages and %d statuses, want none", len(msgs), len(sts))
			}
		})
	}
}

// TestSamplesOfOtherEvents checks that each sample builder gives the event it names.
func TestSamplesOfOtherEvents(t *testing.T) {
	t.Parallel()
	o := SampleOptions{MessageID: "wamid.S"}
	tests := []struct {
		name string
		body []byte
		kind func(msgs []Message, evs []Event) bool
	}{
		{"revoke", SampleRevoke(o, "wamid.A"), func(m []Message, _ []Event) bool { return len(m) == 1 && m[0].OriginalID == "wamid.A" }},
		{"edit", SampleEdit(o, "wamid.A", "x"), func(m []Message, _ []Event) bool { return len(m) == 1 && m[0].Text == "x" }},
		{"order", SampleOrder(o, "C", "", []ProductItem{{ProductRetailerID: "p", Quantity: "1"}}), func(m []Message, _ []Event) bool { return len(m) == 1 && m[0].Order != nil }},
		{"system", SampleUserChangedNumber(o, "628", ""), func(m []Message, _ []Event) bool { return len(m) == 1 && m[0].System.NewWaID == "628" }},
		{"call permission", SampleCallPermissionReply(o, "accept"), func(m []Message, _ []Event) bool { return len(m) == 1 && m[0].Reply.Kind == "call_permission_reply" }},
		{"unsupported", SampleUnsupported(o), func(m []Message, _ []Event) bool { return len(m) == 1 && m[0].Type == "unsupported" }},
		{"preference", SamplePreference(o, "stop"), func(_ []Message, e []Event) bool { return len(e) == 1 && e[0].Preference.Stop }},
		{"echo", SampleEcho(o, "hi"), func(_ []Message, e []Event) bool { return len(e) == 1 && e[0].Echo.Text == "hi" }},
		{"account", SampleAccountUpdate(o, "ACCOUNT_RESTRICTION"), func(_ []Message, e []Event) bool { return len(e) == 1 && e[0].Account != nil }},
		{"template", SampleTemplateStatus(o, "n", "APPROVED", "MARKETING"), func(_ []Message, e []Event) bool { return len(e) == 1 && e[0].Template.Category == "MARKETING" }},
		{"calls", SampleCall(o), func(_ []Message, e []Event) bool { return len(e) == 1 && e[0].Call.ID == "wacid.S" }},
	}
	for _, tt := range tests {
		p, err := Parse(tt.body)
		if err != nil {
			t.Fatalf("%s: Parse: %v", tt.name, err)
		}
		msgs, _ := Normalize(p)
		if !tt.kind(msgs, Events(p)) {
			t.Errorf("%s: sample %s does not carry its event", tt.name, tt.body)
		}
	}
}
