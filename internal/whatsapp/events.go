package whatsapp

import (
	"strings"

	"github.com/wapipe/wapipe/internal/contact"
)

// Meta's subscribed fields other than "messages". Each change's field says which of Value's
// fields are set; Events turns them into one flat Event each.
const (
	FieldMessages             = "messages"
	FieldUserPreferences      = "user_preferences"
	FieldMessageEchoes        = "smb_message_echoes"
	FieldAccountUpdate        = "account_update"
	FieldTemplateStatus       = "message_template_status_update"
	FieldTemplateCategory     = "template_category_update"
	FieldTemplateQuality      = "message_template_quality_update"
	FieldCalls                = "calls"
	FieldUserIDUpdate         = "user_id_update"
	SystemUserChangedNumber   = "user_changed_number"
	SystemUserChangedUserID   = "user_changed_user_id"
	InteractiveCallPermission = "call_permission_reply"
)

// Revoke is set on a message of type "revoke": the contact deleted OriginalMessageID.
type Revoke struct {
	OriginalMessageID string `json:"original_message_id"`
}

// Edit is set on a message of type "edit": the contact changed OriginalMessageID, and Message is
// its new content (a message object of its own, text or media with caption).
type Edit struct {
	OriginalMessageID string          `json:"original_message_id"`
	Message           *InboundMessage `json:"message,omitempty"`
}

// MessageEcho is a message the business sent from the WhatsApp Business app on the same number
// (field smb_message_echoes): From is the business number, To the contact's phone (absent for
// a user with a username), ToUserID its BSUID.
type MessageEcho struct {
	InboundMessage
	To             string `json:"to,omitempty"`
	ToUserID       string `json:"to_user_id,omitempty"`
	ToParentUserID string `json:"to_parent_user_id,omitempty"`
}

// UserPreference is a contact's choice about marketing messages (field user_preferences):
// Category marketing_messages, Value stop, resume or signup. The contact is WaID (its phone,
// conditional) and UserID (its BSUID).
type UserPreference struct {
	WaID         string `json:"wa_id,omitempty"`
	UserID       string `json:"user_id,omitempty"`
	ParentUserID string `json:"parent_user_id,omitempty"`
	Detail       string `json:"detail,omitempty"`
	Category     string `json:"category"`
	Value        string `json:"value"`
	Timestamp    Number `json:"timestamp,omitempty"`
}

// CallEvent is one event of the Calling API (field calls); wapipe only records it. From and To
// are phone numbers (conditional, like a message's from), FromUserID and ToUserID BSUIDs.
type CallEvent struct {
	ID         string `json:"id"`
	From       string `json:"from,omitempty"`
	FromUserID string `json:"from_user_id,omitempty"`
	To         string `json:"to,omitempty"`
	ToUserID   string `json:"to_user_id,omitempty"`
	Event      string `json:"event,omitempty"`
	Direction  string `json:"direction,omitempty"`
	Timestamp  string `json:"timestamp,omitempty"`
}

// UserIDUpdate is one change of field user_id_update: a user's BSUID (and parent BSUID) went
// from Previous to Current.
type UserIDUpdate struct {
	WaID         string   `json:"wa_id,omitempty"`
	UserID       IDChange `json:"user_id"`
	ParentUserID IDChange `json:"parent_user_id"`
	Timestamp    Number   `json:"timestamp,omitempty"`
	Contact      *Contact `json:"contact,omitempty"`
}

// IDChange is an identifier's previous and current value.
type IDChange struct {
	Previous string `json:"previous,omitempty"`
	Current  string `json:"current,omitempty"`
}

// OtherValue holds the flat values of account_update and the template updates, which share the
// "event" key.
type OtherValue struct {
	Event string `json:"event,omitempty"`
	// PhoneNumber is the business number an account_update is about.
	PhoneNumber     string            `json:"phone_number,omitempty"`
	RestrictionInfo []RestrictionInfo `json:"restriction_info,omitempty"`
	ViolationInfo   *ViolationInfo    `json:"violation_info,omitempty"`
	BanInfo         *BanInfo          `json:"ban_info,omitempty"`

	MessageTemplateID       Number `json:"message_template_id,omitempty"`
	MessageTemplateName     string `json:"message_template_name,omitempty"`
	MessageTemplateLanguage string `json:"message_template_language,omitempty"`
	MessageTemplateCategory string `json:"message_template_category,omitempty"`
	Reason                  string `json:"reason,omitempty"`
	NewCategory             string `json:"new_category,omitempty"`
	PreviousCategory        string `json:"previous_category,omitempty"`
	NewQualityScore         string `json:"new_quality_score,omitempty"`
}

// RestrictionInfo is one restriction of an ACCOUNT_RESTRICTION update.
type RestrictionInfo struct {
	RestrictionType string `json:"restriction_type"`
	Expiration      Number `json:"expiration,omitempty"`
}

// ViolationInfo names the policy an ACCOUNT_VIOLATION update is about.
type ViolationInfo struct {
	ViolationType string `json:"violation_type"`
}

// BanInfo is the state of a DISABLED_UPDATE.
type BanInfo struct {
	WABABanState string `json:"waba_ban_state"`
	WABABanDate  string `json:"waba_ban_date,omitempty"`
}

// Event is one change of a field other than messages, flattened like Message.
type Event struct {
	// Field is Meta's field name (FieldUserPreferences, FieldMessageEchoes, ...).
	Field string `json:"field"`
	// WABAID is the entry's id: the WhatsApp Business Account the change belongs to.
	WABAID        string `json:"waba_id"`
	PhoneNumberID string `json:"phone_number_id,omitempty"`
	// Contact is the person the change is about (preferences, echoes, calls): personal data,
	// never logged in clear.
	Contact contact.Identity `json:"contact,omitzero"`

	Preference *Preference     `json:"preference,omitempty"`
	Echo       *Message        `json:"echo,omitempty"`
	Account    *AccountChange  `json:"account,omitempty"`
	Template   *TemplateChange `json:"template,omitempty"`
	Call       *CallEvent      `json:"call,omitempty"`
	// IdentityChange is set for a user_id_update: the person's BSUID changed.
	IdentityChange *IdentityChange `json:"identity_change,omitempty"`
}

// Preference is a contact's marketing preference: Stop is true for "stop", false for
// "resume" and "signup".
type Preference struct {
	Category  string `json:"category"`
	Value     string `json:"value"`
	Stop      bool   `json:"stop"`
	Timestamp string `json:"timestamp,omitempty"`
}

// AccountChange is an account_update: Event is ACCOUNT_RESTRICTION, ACCOUNT_VIOLATION,
// DISABLED_UPDATE, PARTNER_REMOVED or another Meta adds; Detail says what it restricts.
type AccountChange struct {
	Event  string `json:"event"`
	Detail string `json:"detail,omitempty"`
}

// TemplateChange is a template's status, category or quality update.
type TemplateChange struct {
	ID       string `json:"id,omitempty"`
	Name     string `json:"name"`
	Language string `json:"language,omitempty"`
	// Status is the status event (APPROVED, REJECTED, PAUSED, ...), empty for other updates.
	Status   string `json:"status,omitempty"`
	Reason   string `json:"reason,omitempty"`
	Category string `json:"category,omitempty"`
	Quality  string `json:"quality,omitempty"`
}

// Events flattens every change whose field is not "messages" into Events, in payload order. A
// change of a field wapipe does not know yields nothing: it is still traced by the worker.
func Events(p *Payload) []Event {
	if p == nil {
		return nil
	}
	var out []Event
	for _, e := range p.Entry {
		for i := range e.Changes {
			c := &e.Changes[i]
			out = append(out, changeEvents(e.ID, c)...)
		}
	}
	return out
}

func changeEvents(wabaID string, c *Change) []Event {
	v := &c.Value
	base := Event{Field: c.Field, WABAID: wabaID, PhoneNumberID: v.Metadata.PhoneNumberID}
	var out []Event
	switch c.Field {
	case FieldUserPreferences:
		for _, up := range v.UserPreferences {
			ev := base
			ev.Contact = contact.FromWebhook(up.WaID, up.UserID, up.ParentUserID, "", "")
			ev.Contact = withProfile(ev.Contact, v.Contacts)
			val := strings.ToLower(up.Value)
			ev.Preference = &Preference{Category: up.Category, Value: val, Stop: val == "stop", Timestamp: string(up.Timestamp)}
			out = append(out, ev)
		}
	case FieldMessageEchoes:
		for i := range v.MessageEchoes {
			echo := &v.MessageEchoes[i]
			m := normalizeMessage(v, &echo.InboundMessage)
			ev := base
			ev.Contact = withProfile(contact.FromWebhook(echo.To, echo.ToUserID, echo.ToParentUserID, "", ""), v.Contacts)
			ev.Echo = &m
			out = append(out, ev)
		}
	case FieldAccountUpdate:
		ev := base
		ev.Account = &AccountChange{Event: v.Event, Detail: accountDetail(&v.OtherValue)}
		out = append(out, ev)
	case FieldTemplateStatus, FieldTemplateCategory, FieldTemplateQuality:
		ev := base
		t := &TemplateChange{ID: string(v.MessageTemplateID), Name: v.MessageTemplateName,
			Language: v.MessageTemplateLanguage, Reason: v.Reason, Category: v.MessageTemplateCategory}
		switch c.Field {
		case FieldTemplateStatus:
			t.Status = v.Event
		case FieldTemplateCategory:
			t.Category = v.NewCategory
		case FieldTemplateQuality:
			t.Quality = v.NewQualityScore
		}
		ev.Template = t
		out = append(out, ev)
	case FieldCalls:
		for _, call := range v.Calls {
			ev := base
			ev.Contact = withProfile(callUser(&call), v.Contacts)
			call := call
			ev.Call = &call
			out = append(out, ev)
		}
	case FieldUserIDUpdate:
		for _, u := range v.UserIDUpdates {
			ch := IdentityChange{
				Type:     FieldUserIDUpdate,
				Previous: contact.FromWebhook(u.WaID, u.UserID.Previous, u.ParentUserID.Previous, "", ""),
				Current:  contact.FromWebhook(u.WaID, u.UserID.Current, u.ParentUserID.Current, "", ""),
			}
			ev := base
			ev.Contact = ch.Previous
			ev.IdentityChange = &ch
			out = append(out, ev)
		}
	}
	return out
}

// callUser is the WhatsApp user a call event is about. The other party is the business number,
// which has no BSUID: the user is the caller of a call the user placed and the callee of one the
// business placed (reading From alone named the business itself for every BUSINESS_INITIATED
// call). Without a known direction, the side that carries a BSUID is the user's, else From.
func callUser(c *CallEvent) contact.Identity {
	from := contact.FromWebhook(c.From, c.FromUserID, "", "", "")
	to := contact.FromWebhook(c.To, c.ToUserID, "", "", "")
	switch {
	case strings.EqualFold(c.Direction, "BUSINESS_INITIATED"):
		return to
	case strings.EqualFold(c.Direction, "USER_INITIATED"):
		return from
	case from.UserID == "" && to.UserID != "":
		return to
	}
	return from
}

// withProfile adds the username and profile name of the contacts[] entry that names the same
// person as id.
func withProfile(id contact.Identity, cs []Contact) contact.Identity {
	for _, c := range cs {
		ci := contact.FromWebhook(c.WaID, c.UserID, c.ParentUserID, c.Profile.Username, c.Profile.Name)
		if ci.Matches(id) {
			return ci.Merge(id)
		}
	}
	return id
}

// accountDetail names what an account update restricts, without any number: restriction types,
// the violation type, or the ban state.
func accountDetail(v *OtherValue) string {
	var parts []string
	for _, r := range v.RestrictionInfo {
		parts = append(parts, r.RestrictionType)
	}
	if v.ViolationInfo != nil && v.ViolationInfo.ViolationType != "" {
		parts = append(parts, v.ViolationInfo.ViolationType)
	}
	if v.BanInfo != nil && v.BanInfo.WABABanState != "" {
		parts = append(parts, v.BanInfo.WABABanState)
	}
	return strings.Join(parts, ",")
}
