package whatsapp

import (
	"encoding/json"
	"regexp"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestSamples(t *testing.T) {
	t.Parallel()
	o := SampleOptions{MessageID: "wamid.TEST", Timestamp: time.Unix(1749416383, 0), ContextID: "wamid.CTX", BizOpaqueCallbackData: "idem-1"}
	base := Message{
		ID: "wamid.TEST", From: DefaultSampleOptions.From, ContactName: DefaultSampleOptions.ContactName,
		PhoneNumberID: DefaultSampleOptions.PhoneNumberID, DisplayPhoneNumber: DefaultSampleOptions.DisplayPhoneNumber,
		Timestamp: "1749416383", ContextID: "wamid.CTX",
	}
	with := func(typ string, f func(*Message)) []Message {
		m := base
		m.Type = typ
		f(&m)
		return []Message{m}
	}
	no := false
	status := func(st string) []Status {
		s := Status{ID: "wamid.TEST", Status: st, Timestamp: "1749416383", RecipientID: DefaultSampleOptions.From,
			PhoneNumberID: DefaultSampleOptions.PhoneNumberID, BizOpaqueCallbackData: "idem-1",
			ConversationID: conversationID("wamid.TEST"), PricingCategory: "service", PricingType: "free_customer_service", Billable: &no}
		return []Status{s}
	}
	cases := []struct {
		name     string
		body     []byte
		msgs     []Message
		statuses []Status
		eventID  string
	}{
		{"text", SampleText(o, "hello"), with("text", func(m *Message) { m.Text = "hello" }), nil, "wamid.TEST"},
		{"button reply", SampleButtonReply(o, "yes", "Yes"), with("interactive", func(m *Message) { m.Reply = &Reply{Kind: "button_reply", ID: "yes", Title: "Yes"} }), nil, "wamid.TEST"},
		{"list reply", SampleListReply(o, "r1", "Row", "Desc"), with("interactive", func(m *Message) {
			m.Reply = &Reply{Kind: "list_reply", ID: "r1", Title: "Row", Description: "Desc"}
		}), nil, "wamid.TEST"},
		{"image", SampleImage(o, "123", "image/png", "look"), with("image", func(m *Message) {
			m.Text, m.Media = "look", &Media{ID: "123", MimeType: "image/png", SHA256: b64SHA256("123")}
		}), nil, "wamid.TEST"},
		{"location", SampleLocation(o, 51.5, -0.12, "Here", "1 Street"), with("location", func(m *Message) {
			m.Location = &Location{Latitude: 51.5, Longitude: -0.12, Name: "Here", Address: "1 Street"}
		}), nil, "wamid.TEST"},
		{"location at 0,0", SampleLocation(o, 0, 0, "", ""), with("location", func(m *Message) { m.Location = &Location{} }), nil, "wamid.TEST"},
		{"reaction", SampleReaction(o, "wamid.X", "❤️"), with("reaction", func(m *Message) { m.Reaction = &Reaction{MessageID: "wamid.X", Emoji: "❤️"} }), nil, "wamid.TEST"},
		{"sent", SampleStatus(o, "sent"), nil, status("sent"), "wamid.TEST:sent"},
		{"delivered", SampleStatus(o, "delivered"), nil, status("delivered"), "wamid.TEST:delivered"},
		{"read", SampleStatus(o, "read"), nil, status("read"), "wamid.TEST:read"},
		{"failed", SampleFailedStatus(o, 131026, "Message undeliverable", "Message Undeliverable."), nil, []Status{{
			ID: "wamid.TEST", Status: "failed", Timestamp: "1749416383", RecipientID: DefaultSampleOptions.From,
			PhoneNumberID: DefaultSampleOptions.PhoneNumberID, BizOpaqueCallbackData: "idem-1",
			Errors: []Error{{Code: 131026, Title: "Message undeliverable", Message: "Message undeliverable", Details: "Message Undeliverable."}},
		}}, "wamid.TEST:failed"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p, err := Parse(tc.body)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if p.Object != "whatsapp_business_account" || p.Entry[0].ID != DefaultSampleOptions.WABAID ||
				p.Entry[0].Changes[0].Field != "messages" || p.Entry[0].Changes[0].Value.MessagingProduct != "whatsapp" {
				t.Errorf("envelope is not Meta's: %s", tc.body)
			}
			msgs, sts := Normalize(p)
			if diff := cmp.Diff(tc.msgs, msgs, cmpopts.IgnoreFields(Message{}, "Raw")); diff != "" {
				t.Errorf("messages (-want, +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.statuses, sts); diff != "" {
				t.Errorf("statuses (-want, +got):\n%s", diff)
			}
			if id, err := InboundEventID(tc.body, p); err != nil || id != tc.eventID {
				t.Errorf("InboundEventID = %q, %v; want %q", id, err, tc.eventID)
			}
		})
	}
}

func TestSampleLocationKeepsZeroCoordinates(t *testing.T) {
	t.Parallel()
	var raw map[string]any
	p, _ := Parse(SampleLocation(SampleOptions{}, 0, 0, "", ""))
	if err := json.Unmarshal(p.Entry[0].Changes[0].Value.Messages[0].Raw, &raw); err != nil {
		t.Fatal(err)
	}
	loc := raw["location"].(map[string]any)
	if _, ok := loc["latitude"]; !ok {
		t.Errorf("latitude 0 was omitted: %v", loc)
	}
}

func TestSampleBatch(t *testing.T) {
	t.Parallel()
	p, err := Parse(SampleBatch(SampleOptions{Timestamp: time.Unix(100, 0)}, 5))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	msgs, _ := Normalize(p)
	if len(msgs) != 5 {
		t.Fatalf("got %d messages; want 5", len(msgs))
	}
	seen := map[string]bool{}
	for i, m := range msgs {
		if seen[m.ID] {
			t.Errorf("duplicate id %s", m.ID)
		}
		seen[m.ID] = true
		if want := "message " + string(rune('1'+i)); m.Text != want {
			t.Errorf("message %d text = %q; want %q", i, m.Text, want)
		}
		if m.ContactName != DefaultSampleOptions.ContactName {
			t.Errorf("message %d contact name = %q", i, m.ContactName)
		}
	}
	if msgs[0].Timestamp != "100" || msgs[4].Timestamp != "104" {
		t.Errorf("timestamps = %s..%s; want 100..104", msgs[0].Timestamp, msgs[4].Timestamp)
	}
}

func TestNewMessageID(t *testing.T) {
	t.Parallel()
	re := regexp.MustCompile(`^wamid\.[A-Za-z0-9+/]{48}$`)
	a, b := NewMessageID(), NewMessageID()
	if !re.MatchString(a) || a == b {
		t.Errorf("NewMessageID() = %q, %q; want distinct wamid.<48 base64>", a, b)
	}
}
