package whatsapp

import "strings"

// Samples of Meta's other events (see events.go), shaped like the Cloud API's webhook reference.

// SampleRevoke is the contact deleting original (type revoke).
func SampleRevoke(o SampleOptions, original string) []byte {
	o = o.withDefaults()
	return o.inbound(InboundMessage{Type: "revoke", Revoke: &Revoke{OriginalMessageID: original}})
}

// SampleEdit is the contact changing original's text to body (type edit).
func SampleEdit(o SampleOptions, original, body string) []byte {
	o = o.withDefaults()
	return o.inbound(InboundMessage{Type: "edit", Edit: &Edit{OriginalMessageID: original,
		Message: &InboundMessage{Type: "text", Text: &Text{Body: body}}}})
}

// SampleOrder is a catalogue cart of items (type order).
func SampleOrder(o SampleOptions, catalogID, text string, items []ProductItem) []byte {
	o = o.withDefaults()
	return o.inbound(InboundMessage{Type: "order", Order: &Order{CatalogID: catalogID, Text: text, ProductItems: items}})
}

// SampleUserChangedNumber is the system notice that the contact (o.From, o.UserID) now uses
// newWaID, and, when not empty, the new BSUID newUserID (previous_user_id is o.UserID).
func SampleUserChangedNumber(o SampleOptions, newWaID, newUserID string) []byte {
	o = o.withDefaults()
	sys := &System{Body: "User A changed from " + o.From + " to " + newWaID, WaID: newWaID, Type: SystemUserChangedNumber}
	if newUserID != "" {
		sys.UserID, sys.PreviousUserID = newUserID, o.UserID
	}
	return o.systemNotice(sys)
}

// SampleUserChangedUserID is the system notice that the contact's BSUID (o.UserID) is now
// newUserID.
func SampleUserChangedUserID(o SampleOptions, newUserID string) []byte {
	o = o.withDefaults()
	return o.systemNotice(&System{Body: "User A's business-scoped user ID changed", Type: SystemUserChangedUserID,
		UserID: newUserID, PreviousUserID: o.UserID})
}

// systemNotice is a system message from the contact: no contacts[] array, as Meta sends them.
func (o SampleOptions) systemNotice(sys *System) []byte {
	m := InboundMessage{Type: "system", System: sys, From: o.From, FromUserID: o.UserID, ID: o.MessageID, Timestamp: o.unix()}
	return o.envelope(Value{Messages: []InboundMessage{m}})
}

// SampleCallPermissionReply is the contact's answer (accept or reject) to a call permission
// request.
func SampleCallPermissionReply(o SampleOptions, response string) []byte {
	o = o.withDefaults()
	return o.inbound(InboundMessage{Type: "interactive", Context: o.interactiveContext(), Interactive: &Interactive{
		Type: InteractiveCallPermission, CallPermissionReply: &CallPermissionReply{Response: response, ResponseSource: "user_action"}}})
}

// SampleUnsupported is a message Meta could not deliver (type unsupported, error 131051).
func SampleUnsupported(o SampleOptions) []byte {
	o = o.withDefaults()
	return o.inbound(InboundMessage{Type: "unsupported", Unsupported: &UnsupportedInfo{Type: "poll"},
		Errors: []MetaError{{Code: 131051, Title: "Message type unknown", Message: "Message type unknown",
			ErrorData: &ErrorData{Details: "Message type is currently not supported."}}}})
}

// SamplePreference is field user_preferences: the contact stops (value "stop") or resumes
// ("resume") marketing messages.
func SamplePreference(o SampleOptions, value string) []byte {
	o = o.withDefaults()
	detail := "User requested to stop marketing messages"
	if value != "stop" {
		detail = "User requested to resume marketing messages"
	}
	return o.envelopeField(FieldUserPreferences, Value{
		Contacts: []Contact{o.contact()},
		UserPreferences: []UserPreference{{WaID: o.From, UserID: o.UserID, Detail: detail, Category: "marketing_messages", Value: value,
			Timestamp: Number(o.unix())}},
	})
}

// SampleEcho is field smb_message_echoes: the business sent body to the contact (o.From) from
// the WhatsApp Business app.
func SampleEcho(o SampleOptions, body string) []byte {
	o = o.withDefaults()
	return o.envelopeField(FieldMessageEchoes, Value{MessageEchoes: []MessageEcho{{
		InboundMessage: InboundMessage{From: o.DisplayPhoneNumber, ID: o.MessageID, Timestamp: o.unix(), Type: "text", Text: &Text{Body: body}},
		To:             o.From,
		ToUserID:       o.UserID,
	}}})
}

// SampleAccountUpdate is field account_update: event ACCOUNT_RESTRICTION (with one restriction),
// ACCOUNT_VIOLATION, DISABLED_UPDATE, PARTNER_REMOVED or another.
func SampleAccountUpdate(o SampleOptions, event string) []byte {
	o = o.withDefaults()
	v := Value{OtherValue: OtherValue{Event: event, PhoneNumber: o.DisplayPhoneNumber}}
	switch event {
	case "ACCOUNT_RESTRICTION":
		v.RestrictionInfo = []RestrictionInfo{{RestrictionType: "RESTRICTED_BIZ_INITIATED_MESSAGING", Expiration: Number(o.unix())}}
	case "ACCOUNT_VIOLATION":
		v.ViolationInfo = &ViolationInfo{ViolationType: "ADULT"}
	case "DISABLED_UPDATE":
		v.BanInfo = &BanInfo{WABABanState: "DISABLE", WABABanDate: "2026-11-24"}
	}
	return o.envelopeBare(FieldAccountUpdate, v)
}

// SampleTemplateStatus is field message_template_status_update for template name (language
// en_US, category when not empty).
func SampleTemplateStatus(o SampleOptions, name, event, category string) []byte {
	o = o.withDefaults()
	return o.envelopeBare(FieldTemplateStatus, Value{OtherValue: OtherValue{Event: event, MessageTemplateID: "594425479261596",
		MessageTemplateName: name, MessageTemplateLanguage: "en_US", MessageTemplateCategory: category, Reason: "NONE"}})
}

// SampleCall is field calls: the contact (o.From) calls the business number (event connect).
func SampleCall(o SampleOptions) []byte {
	o = o.withDefaults()
	return o.envelopeField(FieldCalls, Value{Calls: []CallEvent{{ID: "wacid." + strings.TrimPrefix(o.MessageID, "wamid."), From: o.From,
		FromUserID: o.UserID, To: o.DisplayPhoneNumber, Event: "connect", Direction: "USER_INITIATED", Timestamp: o.unix()}}})
}
