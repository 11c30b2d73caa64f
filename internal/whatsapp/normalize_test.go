package whatsapp

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

const (
	testPNID = "106540352242922"
	testDisp = "15550783881"
	testFrom = "16505551234"
	testName = "Sheena Nelson"
)

func readTestdata(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatalf("read testdata: %v", err)
	}
	return b
}

// inboundMsg fills the fields every single-message sample shares.
func inboundMsg(id, typ string, m Message) Message {
	m.ID, m.Type = id, typ
	m.From, m.ContactName = testFrom, testName
	m.PhoneNumberID, m.DisplayPhoneNumber = testPNID, testDisp
	m.Timestamp = "1749416383"
	return m
}

func TestNormalizeMessages(t *testing.T) {
	t.Parallel()
	cases := []struct {
		file string
		want []Message
	}{
		{"text.json", []Message{inboundMsg("wamid.HBgLMTY1MDU1NTEyMzQVAgASGBQzQTRBNjU5OUZFRDAwMkE4RTFDMgA=", "text",
			Message{Text: "Hi, is the store open on Sunday?"})}},
		{"text_reply_context.json", []Message{inboundMsg("wamid.HBgLMTY1MDU1NTEyMzQVAgASGBQzQUFBMDA1RDg3QjFFMjM0NjE4OQA=", "text",
			Message{Text: "Yes, that one", ContextID: "wamid.HBgLMTY1MDU1NTEyMzQVAgARGBI5QTNDQTVCM0Q0Q0Q2RTY3RTcA"})}},
		{"text_forwarded.json", []Message{inboundMsg("wamid.HBgLMTY1MDU1NTEyMzQVAgASGBQzQjI0RTNBM0Q5MjU0RTc3QjE3RQA=", "text",
			Message{Text: "Forwarded many times"})}},
		{"text_referred_product.json", []Message{inboundMsg("wamid.HBgLMTY1MDU1NTEyMzQVAgASGBQzRjM4QTJBNzVCMTg4RkU4MzEzRQA=", "text",
			Message{Text: "Is this in stock?", ContextID: "wamid.HBgLMTY1MDU1NTEyMzQVAgARGBJCQUJEQzg0NzlDNjA2QzEyNzcA"})}},
		{"text_referral.json", []Message{inboundMsg("wamid.HBgLMTY1MDU1NTEyMzQVAgASGBQzQTg5N0M1RkUwMzBGRUQ1MEE1NgA=", "text",
			Message{Text: "I saw your ad"})}},
		{"image.json", []Message{inboundMsg("wamid.HBgLMTY1MDU1NTEyMzQVAgASGBQzQTZEM0Y2QkI1NjkyNDk4OTFGMQA=", "image",
			Message{Text: "The broken part", Media: &Media{ID: "1003383421387256", MimeType: "image/jpeg", SHA256: "SmTjXKvMWyw2GU0ukpGPa0qjkUmpGSx3mOn+D6c5zWQ="}})}},
		{"audio.json", []Message{inboundMsg("wamid.HBgLMTY1MDU1NTEyMzQVAgASGBQzQTAxNTE1MjUzMEQ0NjQyNzJBNwA=", "audio",
			Message{Media: &Media{ID: "1198264025047734", MimeType: "audio/ogg; codecs=opus", SHA256: "8gmWJyIQ5pNrn3p8ptfkh8oMPEn9t+ToRnp4y3UXk58=", Voice: true}})}},
		{"video.json", []Message{inboundMsg("wamid.HBgLMTY1MDU1NTEyMzQVAgASGBQzQjJDNkY0OUMxRjEyOTRBQTZCMQA=", "video",
			Message{Text: "How it sounds", Media: &Media{ID: "2110362389346123", MimeType: "video/mp4", SHA256: "GJ6yIU+Yj0c5bhBHQ0wMM9ACSxq0mYk0hsDk0rCm+so="}})}},
		{"document.json", []Message{inboundMsg("wamid.HBgLMTY1MDU1NTEyMzQVAgASGBQzQUM0N0YyMzY2QjNCMjkxQjFERAA=", "document",
			Message{Text: "My invoice", Media: &Media{ID: "1021485879858234", MimeType: "application/pdf", SHA256: "tNcPcz5e4TvN3ac5Sl5NTKNvHpiA7wlxr8hEqRmbvTs=", Filename: "invoice-2025-06.pdf"}})}},
		{"sticker.json", []Message{inboundMsg("wamid.HBgLMTY1MDU1NTEyMzQVAgASGBQzQTlFQjU4ODg3QUY4MDg2QjA5NAA=", "sticker",
			Message{Media: &Media{ID: "1226138862167427", MimeType: "image/webp", SHA256: "Vb4JC6sqR4cg0xgoxdvRVjW3TS3uN2AgxX4ORuAQhqA="}})}},
		{"location.json", []Message{inboundMsg("wamid.HBgLMTY1MDU1NTEyMzQVAgASGBQzQTNCQjk2MDY3M0E3MUI1QTAwQgA=", "location",
			Message{Location: &Location{Latitude: 37.483307, Longitude: -122.148981, Name: "Meta Headquarters", Address: "1 Hacker Way, Menlo Park, CA 94025", URL: "https://www.facebook.com/about"}})}},
		{"contacts.json", []Message{inboundMsg("wamid.HBgLMTY1MDU1NTEyMzQVAgASGBQzQTAzQUE1QjhFOEQwQjQ3MzkyNAA=", "contacts",
			Message{Contacts: []ContactCard{{Name: "Kerry Fisher", Org: "Lucky Shrub", Phones: []string{"+1 (650) 555-1235"}, Emails: []string{"kerry@example.com"}}}})}},
		{"interactive_button_reply.json", []Message{inboundMsg("wamid.HBgLMTY1MDU1NTEyMzQVAgASGBQzQTMwRkMxN0IzRkVDNzZBODg2QQA=", "interactive",
			Message{Reply: &Reply{Kind: "button_reply", ID: "change-button", Title: "Change"}, ContextID: "wamid.HBgLMTY1MDU1NTEyMzQVAgARGBI3QjZBMDdBNjlDNzEyQjJEQzgA"})}},
		{"interactive_list_reply.json", []Message{inboundMsg("wamid.HBgLMTY1MDU1NTEyMzQVAgASGBQzQTY5NjBCRUQ2REJCMTk2NkFENwA=", "interactive",
			Message{Reply: &Reply{Kind: "list_reply", ID: "priority_express", Title: "Priority Mail Express", Description: "Next Day to 2 Days"}, ContextID: "wamid.HBgLMTY1MDU1NTEyMzQVAgARGBJGQTVCQjVGNkQ0MjBGMjJCMTUA"})}},
		{"interactive_nfm_reply.json", []Message{inboundMsg("wamid.HBgLMTY1MDU1NTEyMzQVAgASGBQzQTM4RjRBMzNBRjU0QzdGRTlCNAA=", "interactive",
			Message{Reply: &Reply{Kind: "nfm_reply", ID: "flow", Title: "Sent"}, ContextID: "wamid.HBgLMTY1MDU1NTEyMzQVAgARGBIyMUE1NjQ0RTk0RTg0MkQ3REYA"})}},
		{"button.json", []Message{inboundMsg("wamid.HBgLMTY1MDU1NTEyMzQVAgASGBQzQjE0RDJBRUQ3MTc5NjJDN0JEQQA=", "button",
			Message{Reply: &Reply{Kind: "button", ID: "STOP_PROMOTIONS", Title: "Stop promotions"}, ContextID: "wamid.HBgLMTY1MDU1NTEyMzQVAgARGBJDNzE3NUI0MkFCRDI1REFFMUYA"})}},
		{"reaction.json", []Message{inboundMsg("wamid.HBgLMTY1MDU1NTEyMzQVAgASGBQzQTEyNkZBNDY2QjIxQkNBQjc1RAA=", "reaction",
			Message{Reaction: &Reaction{MessageID: "wamid.HBgLMTY1MDU1NTEyMzQVAgARGBI5QTNDQTVCM0Q0Q0Q2RTY3RTcA", Emoji: "\U0001F44D"}})}},
		{"order.json", []Message{inboundMsg("wamid.HBgLMTY1MDU1NTEyMzQVAgASGBQzQUYyQUM5OTM4RkVBMzJENUQ4NQA=", "order", Message{Order: &OrderInfo{
			CatalogID: "194836987003835", Text: "Please deliver after 5pm", Items: []OrderItem{
				{ProductRetailerID: "di9ozbzfi4", Quantity: "2", ItemPrice: "30.00", Currency: "USD"},
				{ProductRetailerID: "nqryix03ez", Quantity: "1", ItemPrice: "25.5", Currency: "USD"}}}})}},
		{"system.json", []Message{inboundMsg("wamid.HBgLMTY1MDU1NTEyMzQVAgASGBQzQTk3RjQzNUJFNkRGNjY2NDZBMQA=", "system", Message{System: &SystemNotice{Type: "user_changed_number", NewWaID: "16505551299"}})}},
		{"unsupported.json", []Message{inboundMsg("wamid.HBgLMTY1MDU1NTEyMzQVAgASGBQzQkQ2NjU4QjYwOTMxQjlEQzAxNwA=", "unsupported",
			Message{Errors: []Error{{Code: 131051, Title: "Message type unknown", Message: "Message type unknown", Details: "Message type is currently not supported."}}})}},
		{"request_welcome.json", []Message{inboundMsg("wamid.HBgLMTY1MDU1NTEyMzQVAgASGBQzQjlCNjZDMkQ3NjZBNTA5NkE1NQA=", "request_welcome", Message{})}},
		{"multi_entry.json", []Message{
			{ID: "wamid.HBgLMTY1MDU1NTEyMzUVAgASGBQzQTAwMDAwMDAwMDAwMDAwMDAwMQA=", From: "16505551235", ContactName: "Kerry Fisher", PhoneNumberID: "117540352242000", DisplayPhoneNumber: "15550783999", Timestamp: "1749416391", Type: "text", Text: "first"},
			{ID: "wamid.HBgMNDQ3NzAwOTAwMTIzFQIAEhgUM0EwMDAwMDAwMDAwMDAwMDAwMDIA", From: "447700900123", ContactName: "Alex Doe", PhoneNumberID: "117540352242000", DisplayPhoneNumber: "15550783999", Timestamp: "1749416392", Type: "text", Text: "second"},
			{ID: "wamid.HBgLMTY1MDU1NTEyMzUVAgASGBQzQTAwMDAwMDAwMDAwMDAwMDAwMwA=", From: "16505551235", ContactName: "Kerry Fisher", PhoneNumberID: "117540352242000", DisplayPhoneNumber: "15550783999", Timestamp: "1749416393", Type: "text", Text: "third"},
		}},
		{"status_sent.json", nil},
		{"value_errors.json", nil},
		{"template_status_update.json", nil},
	}
	for _, tc := range cases {
		t.Run(tc.file, func(t *testing.T) {
			t.Parallel()
			body := readTestdata(t, tc.file)
			p, err := Parse(body)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			got, _ := Normalize(p)
			if diff := cmp.Diff(tc.want, got, cmpopts.IgnoreFields(Message{}, "Raw")); diff != "" {
				t.Errorf("Normalize messages (-want, +got):\n%s", diff)
			}
			for _, m := range got {
				// Raw is the message object exactly as sent: a byte range of the body.
				if !json.Valid(m.Raw) || !bytes.Contains(body, m.Raw) || !bytes.Contains(m.Raw, []byte(m.ID)) {
					t.Errorf("Raw of %s is not the message as sent: %s", m.ID, m.Raw)
				}
			}
		})
	}
}

func TestNormalizeStatuses(t *testing.T) {
	t.Parallel()
	const wamid = "wamid.HBgLMTY1MDU1NTEyMzQVAgARGBI3OEI3QjY2RjA4NUI2RDU2RUUA"
	yes, no := true, false
	cases := []struct {
		file string
		want []Status
	}{
		{"status_sent.json", []Status{{ID: wamid, Status: "sent", Timestamp: "1749416400", RecipientID: testFrom, PhoneNumberID: testPNID,
			BizOpaqueCallbackData: "idem-3f1c2e7a9b", ConversationID: "6ceb9d929c0ea08ba8d60a4cc1d24a5a", PricingCategory: "service", PricingType: "free_customer_service", Billable: &no}}},
		{"status_delivered.json", []Status{{ID: wamid, Status: "delivered", Timestamp: "1749416402", RecipientID: testFrom, PhoneNumberID: testPNID,
			BizOpaqueCallbackData: "idem-3f1c2e7a9b", ConversationID: "6ceb9d929c0ea08ba8d60a4cc1d24a5a", PricingCategory: "service", PricingType: "free_customer_service", Billable: &no}}},
		{"status_read.json", []Status{{ID: wamid, Status: "read", Timestamp: "1749416460", RecipientID: testFrom, PhoneNumberID: testPNID,
			BizOpaqueCallbackData: "idem-3f1c2e7a9b"}}},
		{"status_failed.json", []Status{{ID: wamid, Status: "failed", Timestamp: "1749416401", RecipientID: testFrom, PhoneNumberID: testPNID,
			BizOpaqueCallbackData: "idem-3f1c2e7a9b",
			Errors:                []Error{{Code: 131026, Title: "Message undeliverable", Message: "Message undeliverable", Details: "Message Undeliverable."}}}}},
		{"status_billable_cbp.json", []Status{{ID: wamid, Status: "sent", Timestamp: "1749416400", RecipientID: testFrom, PhoneNumberID: testPNID,
			ConversationID: "b1a2c3d4e5f60718293a4b5c6d7e8f90", PricingCategory: "marketing", Billable: &yes}}},
		{"multi_entry.json", []Status{{ID: "wamid.HBgLMTY1MDU1NTEyMzQVAgARGBI4QTdDQjVEOTAyNkY3NEQ3MjAA", Status: "delivered", Timestamp: "1749416390",
			RecipientID: testFrom, PhoneNumberID: testPNID}}},
		{"text.json", nil},
	}
	for _, tc := range cases {
		t.Run(tc.file, func(t *testing.T) {
			t.Parallel()
			p, err := Parse(readTestdata(t, tc.file))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			_, got := Normalize(p)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Normalize statuses (-want, +got):\n%s", diff)
			}
		})
	}
}

func TestNormalizeNil(t *testing.T) {
	t.Parallel()
	if m, s := Normalize(nil); m != nil || s != nil {
		t.Errorf("Normalize(nil) = %v, %v; want nil, nil", m, s)
	}
}

// TestParseTypedFields checks the envelope fields Normalize does not flatten, so that a
// Responder reading the typed payload sees what Meta sent.
func TestParseTypedFields(t *testing.T) {
	t.Parallel()
	first := func(t *testing.T, file string) InboundMessage {
		t.Helper()
		p, err := Parse(readTestdata(t, file))
		if err != nil {
			t.Fatalf("Parse: %v", err)
		}
		return p.Entry[0].Changes[0].Value.Messages[0]
	}
	cases := []struct {
		file string
		got  func(InboundMessage) any
		want any
	}{
		{"text_forwarded.json", func(m InboundMessage) any { return m.Context }, &Context{Forwarded: true, FrequentlyForwarded: true}},
		{"text_referred_product.json", func(m InboundMessage) any { return m.Context.ReferredProduct },
			&ReferredProduct{CatalogID: "194836987003835", ProductRetailerID: "di9ozbzfi4"}},
		{"text_referral.json", func(m InboundMessage) any {
			return [3]string{m.Referral.SourceType, m.Referral.CtwaClid[:8], m.Referral.WelcomeMessage.Text}
		},
			[3]string{"ad", "ARAkLkA8", "Hi! Tell us what you are looking for."}},
		{"contacts.json", func(m InboundMessage) any { return m.Contacts[0].Phones },
			[]ContactPhone{{Phone: "+1 (650) 555-1235", WaID: "16505551235", Type: "MOBILE"}}},
		{"order.json", func(m InboundMessage) any { return m.Order.ProductItems[0] },
			ProductItem{ProductRetailerID: "di9ozbzfi4", Quantity: "2", ItemPrice: "30.00", Currency: "USD"}},
		{"system.json", func(m InboundMessage) any { return [2]string{m.System.Type, m.System.WaID} },
			[2]string{"user_changed_number", "16505551299"}},
		{"interactive_nfm_reply.json", func(m InboundMessage) any { return json.Valid([]byte(m.Interactive.NFMReply.ResponseJSON)) }, true},
		{"unsupported.json", func(m InboundMessage) any { return m.Unsupported }, &UnsupportedInfo{Type: "poll"}},
	}
	for _, tc := range cases {
		t.Run(tc.file, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tc.want, tc.got(first(t, tc.file))); diff != "" {
				t.Errorf("(-want, +got):\n%s", diff)
			}
		})
	}
}
