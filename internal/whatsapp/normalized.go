package whatsapp

import (
	"encoding/json"

	"github.com/wapipe/wapipe/internal/contact"
)

// Message is one inbound message, normalised out of Meta's envelope so that everything after the
// webhook (the outbound task body, the Responder, the records) sees one flat shape whatever the
// message type. It is the "message" of the outbound task body, so its JSON names are part of the
// task contract.
type Message struct {
	// ID is Meta's message id (wamid.…), unique per message.
	ID string `json:"id"`
	// From is the sender's phone number, absent for a user with a username it may not share;
	// FromUserID is the sender's business-scoped user id (BSUID), FromParentUserID its parent
	// BSUID. All three are personal data: never log them in clear (Identity gives them whole).
	From             string `json:"from,omitempty"`
	FromUserID       string `json:"from_user_id,omitempty"`
	FromParentUserID string `json:"from_parent_user_id,omitempty"`
	// ContactName is the sender's profile name when Meta sent one, Username the sender's
	// WhatsApp username (display only, never a key).
	ContactName string `json:"contact_name,omitempty"`
	Username    string `json:"username,omitempty"`
	// PhoneNumberID and DisplayPhoneNumber name the business number that received the message.
	PhoneNumberID      string `json:"phone_number_id"`
	DisplayPhoneNumber string `json:"display_phone_number,omitempty"`
	// Timestamp is Meta's Unix time in seconds, as sent.
	Timestamp string `json:"timestamp,omitempty"`
	// Type is Meta's message type: text, image, audio, video, document, sticker, location,
	// contacts, interactive, button, reaction, order, system, request_welcome, unsupported, or a
	// type Meta adds later (kept as sent).
	Type string `json:"type"`

	// Text is the body of a text message or the caption of a media message.
	Text string `json:"text,omitempty"`
	// Media is set for image, audio, video, document and sticker messages.
	Media *Media `json:"media,omitempty"`
	// Location is set for location messages.
	Location *Location `json:"location,omitempty"`
	// Contacts is set for contacts messages: the shared contact cards (message content: never
	// logged).
	Contacts []ContactCard `json:"contacts,omitempty"`
	// SharedPhone is the sender's own phone number, shared by tapping a request_contact_info
	// button (a contacts message whose card's origin is contact_request): Identity adds it.
	SharedPhone string `json:"shared_phone,omitempty"`
	// Reaction is set for reaction messages.
	Reaction *Reaction `json:"reaction,omitempty"`
	// Reply is set when the user tapped a reply button, a list row or a template quick reply.
	Reply *Reply `json:"reply,omitempty"`
	// ContextID is the id of the message this one replies to, when it quotes one.
	ContextID string `json:"context_id,omitempty"`
	// OriginalID is, for a revoke or an edit, the id of the message deleted or changed; an
	// edit's new content is in Text and Media.
	OriginalID string `json:"original_id,omitempty"`
	// Order is set for order messages (a catalogue cart).
	Order *OrderInfo `json:"order,omitempty"`
	// System is set for system messages.
	System *SystemNotice `json:"system,omitempty"`
	// Errors are set for unsupported messages: Meta explains there why it could not deliver
	// the content.
	Errors []Error `json:"errors,omitempty"`
	// Raw is the message object exactly as Meta sent it, so a Responder can read fields this
	// shape does not carry.
	Raw json.RawMessage `json:"raw,omitempty"`
}

// Media describes an attachment. The content itself is fetched from the Graph API by ID.
type Media struct {
	ID       string `json:"id"`
	MimeType string `json:"mime_type,omitempty"`
	SHA256   string `json:"sha256,omitempty"`
	Filename string `json:"filename,omitempty"`
	Animated bool   `json:"animated,omitempty"`
	Voice    bool   `json:"voice,omitempty"`
}

// Location is a shared location pin.
type Location struct {
	Latitude  float64 `json:"latitude"`
	Longitude float64 `json:"longitude"`
	Name      string  `json:"name,omitempty"`
	Address   string  `json:"address,omitempty"`
	URL       string  `json:"url,omitempty"`
}

// ContactCard is a shared contact: its name and how to reach it.
type ContactCard struct {
	Name string `json:"name"`
	Org  string `json:"org,omitempty"`
	// Phones are the card's numbers as written (the WhatsApp id when a number has no text).
	Phones []string `json:"phones,omitempty"`
	Emails []string `json:"emails,omitempty"`
}

// Reaction is an emoji reaction to an earlier message; an empty Emoji removes the reaction.
type Reaction struct {
	MessageID string `json:"message_id"`
	Emoji     string `json:"emoji,omitempty"`
}

// Reply is the choice a user made on an interactive message or a template button.
type Reply struct {
	// Kind is button_reply, list_reply, nfm_reply (flows) or button (template quick reply).
	Kind        string `json:"kind"`
	ID          string `json:"id,omitempty"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
}

// OrderInfo is a catalogue cart: its items and the note the contact wrote (message content:
// never logged).
type OrderInfo struct {
	CatalogID string      `json:"catalog_id"`
	Text      string      `json:"text,omitempty"`
	Items     []OrderItem `json:"items,omitempty"`
}

// OrderItem is one line of an order; quantity and price are kept as Meta wrote them.
type OrderItem struct {
	ProductRetailerID string `json:"product_retailer_id"`
	Quantity          string `json:"quantity,omitempty"`
	ItemPrice         string `json:"item_price,omitempty"`
	Currency          string `json:"currency,omitempty"`
}

// SystemNotice is a system message: Type user_changed_number carries the contact's new phone
// and BSUID, user_changed_user_id its new BSUID, each with the previous BSUID when Meta sent it
// (personal data: never log them in clear).
type SystemNotice struct {
	Type                 string `json:"type,omitempty"`
	NewWaID              string `json:"new_wa_id,omitempty"`
	UserID               string `json:"user_id,omitempty"`
	PreviousUserID       string `json:"previous_user_id,omitempty"`
	ParentUserID         string `json:"parent_user_id,omitempty"`
	PreviousParentUserID string `json:"previous_parent_user_id,omitempty"`
}

// Status is one delivery status update for a message the business sent.
type Status struct {
	// ID is the wamid of the outbound message the status is about.
	ID string `json:"id"`
	// Status is sent, delivered, read, failed, deleted or a value Meta adds later.
	Status string `json:"status"`
	// Timestamp is Meta's Unix time in seconds, as sent.
	Timestamp string `json:"timestamp,omitempty"`
	// RecipientID is the customer's phone number (absent for a send by BSUID),
	// RecipientUserID its BSUID and RecipientParentUserID its parent BSUID: never log them in
	// clear.
	RecipientID           string `json:"recipient_id,omitempty"`
	RecipientUserID       string `json:"recipient_user_id,omitempty"`
	RecipientParentUserID string `json:"recipient_parent_user_id,omitempty"`
	PhoneNumberID         string `json:"phone_number_id"`
	// BizOpaqueCallbackData echoes what the send set; wapipe puts the idempotency key there.
	BizOpaqueCallbackData string `json:"biz_opaque_callback_data,omitempty"`
	// ConversationID, PricingCategory and Billable carry Meta's billing details when sent.
	ConversationID  string `json:"conversation_id,omitempty"`
	PricingCategory string `json:"pricing_category,omitempty"`
	// PricingType says whether Meta charges the message: "regular" is paid,
	// "free_customer_service" and "free_entry_point" are free (Billable is deprecated).
	PricingType string  `json:"pricing_type,omitempty"`
	Billable    *bool   `json:"billable,omitempty"`
	Errors      []Error `json:"errors,omitempty"`
}

// DedupeKey is the key statuses are deduplicated on: "<id>:<status>".
func (s Status) DedupeKey() string { return s.ID + ":" + s.Status }

// Recipient is the person the status is about.
func (s Status) Recipient() contact.Identity {
	return contact.FromWebhook(s.RecipientID, s.RecipientUserID, s.RecipientParentUserID, "", "")
}

// Identity is the sender of the message: every identifier Meta gave, with the username and the
// profile name. It is zero when the message names nobody (neither a phone nor a BSUID).
func (m Message) Identity() contact.Identity {
	id := contact.FromWebhook(m.From, m.FromUserID, m.FromParentUserID, m.Username, m.ContactName)
	if id.WaID == "" && m.SharedPhone != "" && !id.IsZero() {
		// The person shared their own number when asked: it is theirs, and an alias of them.
		id.WaID = m.SharedPhone
	}
	return id
}

// IdentityChange is a person's identifiers changing: a system message user_changed_number or
// user_changed_user_id, or a user_id_update. Previous names the person as wapipe knew them,
// Current what they are now (its empty fields did not change, or were not given).
type IdentityChange struct {
	// Type is the system message's type, or FieldUserIDUpdate.
	Type     string           `json:"type"`
	Previous contact.Identity `json:"previous"`
	Current  contact.Identity `json:"current"`
}

// IdentityChange is the change a system message announces; false for any other message. Before
// 2026-08-11 Meta sent no previous_user_id: the previous identity is then the sender's.
func (m Message) IdentityChange() (IdentityChange, bool) {
	sy := m.System
	if m.Type != "system" || sy == nil || (sy.Type != SystemUserChangedNumber && sy.Type != SystemUserChangedUserID) {
		return IdentityChange{}, false
	}
	prevUser, prevParent := sy.PreviousUserID, sy.PreviousParentUserID
	if prevUser == "" && m.FromUserID != sy.UserID {
		prevUser = m.FromUserID
	}
	if prevParent == "" && m.FromParentUserID != sy.ParentUserID {
		prevParent = m.FromParentUserID
	}
	ch := IdentityChange{Type: sy.Type,
		Previous: contact.FromWebhook(m.From, prevUser, prevParent, m.Username, m.ContactName),
		Current:  contact.FromWebhook(sy.NewWaID, sy.UserID, sy.ParentUserID, "", ""),
	}
	if sy.Type == SystemUserChangedUserID {
		// The phone did not change (and may not be shared): it stays the person's.
		ch.Current.WaID = ""
	}
	return ch, true
}

// Error is Meta's error object as it appears in messages, statuses and the envelope.
type Error struct {
	Code    int    `json:"code"`
	Title   string `json:"title,omitempty"`
	Message string `json:"message,omitempty"`
	Details string `json:"details,omitempty"`
}
