package whatsapp

import (
	"encoding/json"
	"errors"
	"fmt"
)

// The types below mirror Meta's WhatsApp Cloud API webhook envelope ("messages" field) as
// documented. Every field is optional from the decoder's point of view: Meta adds fields and
// message types over time, and the webhook must keep accepting what it does not know, so
// unknown fields are ignored and an unknown message type is kept with its Type and Raw bytes.

// Payload is one webhook request body: object "whatsapp_business_account" and its entries.
type Payload struct {
	Object string  `json:"object"`
	Entry  []Entry `json:"entry"`
}

// Entry is the changes of one WhatsApp Business Account (ID is the WABA id).
type Entry struct {
	ID string `json:"id"`
	// Time is set by Meta's generic Graph webhooks (not the "messages" field) to when the
	// notification was sent; it is volatile across redeliveries (see InboundEventID).
	Time    Number   `json:"time,omitempty"`
	Changes []Change `json:"changes"`
}

// Change is one subscribed field's change; Field is "messages" for messages and statuses.
type Change struct {
	Field string `json:"field"`
	Value Value  `json:"value"`
}

// Value carries the messages, statuses and errors of one business phone number.
type Value struct {
	MessagingProduct string           `json:"messaging_product"`
	Metadata         Metadata         `json:"metadata"`
	Contacts         []Contact        `json:"contacts,omitempty"`
	Messages         []InboundMessage `json:"messages,omitempty"`
	Statuses         []StatusUpdate   `json:"statuses,omitempty"`
	// Errors are errors about the whole change (not one message), e.g. 131000.
	Errors []MetaError `json:"errors,omitempty"`

	// The fields below belong to the other subscribed fields (see events.go): field
	// smb_message_echoes, user_preferences, calls, account_update and the template updates.
	MessageEchoes   []MessageEcho    `json:"message_echoes,omitempty"`
	UserPreferences []UserPreference `json:"user_preferences,omitempty"`
	Calls           []CallEvent      `json:"calls,omitempty"`
	// UserIDUpdates are the changes of field user_id_update: a user's BSUID changed. Meta
	// documented it and withdrew the subscription; some providers still forward it.
	UserIDUpdates []UserIDUpdate `json:"user_id_update,omitempty"`
	OtherValue
}

// Metadata names the business phone number the change is about.
type Metadata struct {
	DisplayPhoneNumber string `json:"display_phone_number"`
	PhoneNumberID      string `json:"phone_number_id"`
}

// Contact is the profile of a customer a change is about: the sender of its messages, the
// recipient of its statuses. Every identifier is personal data: never log one in clear.
type Contact struct {
	Profile Profile `json:"profile"`
	// WaID is the customer's phone number; Meta omits it for a user with a username it may not
	// share (shared/meta/usernames.md).
	WaID string `json:"wa_id,omitempty"`
	// UserID is the business-scoped user id (BSUID), ParentUserID the parent BSUID of an
	// enrolled business.
	UserID       string `json:"user_id,omitempty"`
	ParentUserID string `json:"parent_user_id,omitempty"`
}

// Profile is a customer's WhatsApp profile: a name, and the username of a user who took one
// (display only, never a key).
type Profile struct {
	Name     string `json:"name"`
	Username string `json:"username,omitempty"`
}

// InboundMessage is one message a customer sent, with one sub-object set according to Type.
type InboundMessage struct {
	// From is the sender's phone number, absent for a user with a username it may not share;
	// FromUserID the sender's BSUID and FromParentUserID its parent BSUID (never log them).
	From             string `json:"from,omitempty"`
	FromUserID       string `json:"from_user_id,omitempty"`
	FromParentUserID string `json:"from_parent_user_id,omitempty"`
	ID               string `json:"id"`
	Timestamp        string `json:"timestamp"`
	Type             string `json:"type"`

	Context     *Context         `json:"context,omitempty"`
	Text        *Text            `json:"text,omitempty"`
	Image       *MediaObject     `json:"image,omitempty"`
	Audio       *MediaObject     `json:"audio,omitempty"`
	Video       *MediaObject     `json:"video,omitempty"`
	Document    *MediaObject     `json:"document,omitempty"`
	Sticker     *MediaObject     `json:"sticker,omitempty"`
	Location    *LocationObject  `json:"location,omitempty"`
	Contacts    []SharedContact  `json:"contacts,omitempty"`
	Interactive *Interactive     `json:"interactive,omitempty"`
	Button      *Button          `json:"button,omitempty"`
	Reaction    *ReactionObject  `json:"reaction,omitempty"`
	Order       *Order           `json:"order,omitempty"`
	System      *System          `json:"system,omitempty"`
	Referral    *Referral        `json:"referral,omitempty"`
	Identity    *Identity        `json:"identity,omitempty"`
	Unsupported *UnsupportedInfo `json:"unsupported,omitempty"`
	Revoke      *Revoke          `json:"revoke,omitempty"`
	Edit        *Edit            `json:"edit,omitempty"`
	// Errors explain, for type "unsupported", why Meta could not deliver the content.
	Errors []MetaError `json:"errors,omitempty"`

	// Raw is the message object exactly as Meta sent it (a copy: it does not alias the body).
	// Parse fills it; it is never marshalled (the typed fields are the marshalled form).
	Raw json.RawMessage `json:"-"`
}

// Context is set when the message quotes an earlier one, was forwarded, or was sent from a
// product's "Message business" button.
type Context struct {
	// From is the sender of the quoted message (the business number for replies).
	From string `json:"from,omitempty"`
	// ID is the wamid of the quoted message.
	ID                  string           `json:"id,omitempty"`
	Forwarded           bool             `json:"forwarded,omitempty"`
	FrequentlyForwarded bool             `json:"frequently_forwarded,omitempty"`
	ReferredProduct     *ReferredProduct `json:"referred_product,omitempty"`
}

// ReferredProduct is the catalogue product a customer asked about.
type ReferredProduct struct {
	CatalogID         string `json:"catalog_id"`
	ProductRetailerID string `json:"product_retailer_id"`
}

// Text is the body of a text message.
type Text struct {
	Body string `json:"body"`
}

// MediaObject is an image, audio, video, document or sticker attachment.
type MediaObject struct {
	ID       string `json:"id"`
	MimeType string `json:"mime_type,omitempty"`
	SHA256   string `json:"sha256,omitempty"`
	Caption  string `json:"caption,omitempty"`
	// Filename is set for documents.
	Filename string `json:"filename,omitempty"`
	// Animated is set for stickers, Voice for audio recorded as a voice note.
	Animated bool `json:"animated,omitempty"`
	Voice    bool `json:"voice,omitempty"`
	// URL is sent by newer API versions; the media is still fetched with the access token.
	URL string `json:"url,omitempty"`
}

// LocationObject is a shared location.
type LocationObject struct {
	Latitude  float64 `json:"latitude"`
	Longitude float64 `json:"longitude"`
	Name      string  `json:"name,omitempty"`
	Address   string  `json:"address,omitempty"`
	URL       string  `json:"url,omitempty"`
}

// SharedContact is one contact card of a contacts message. Origin is "contact_request" when the
// user shared their own card by tapping a request_contact_info button the business sent (the
// way to learn the phone of a person known by BSUID alone), "other" when they shared a card.
type SharedContact struct {
	Origin    string           `json:"origin,omitempty"`
	Addresses []ContactAddress `json:"addresses,omitempty"`
	Birthday  string           `json:"birthday,omitempty"`
	Emails    []ContactEmail   `json:"emails,omitempty"`
	Name      ContactName      `json:"name"`
	Org       *ContactOrg      `json:"org,omitempty"`
	Phones    []ContactPhone   `json:"phones,omitempty"`
	URLs      []ContactURL     `json:"urls,omitempty"`
}

// ContactAddress is a postal address of a shared contact.
type ContactAddress struct {
	City        string `json:"city,omitempty"`
	Country     string `json:"country,omitempty"`
	CountryCode string `json:"country_code,omitempty"`
	State       string `json:"state,omitempty"`
	Street      string `json:"street,omitempty"`
	Type        string `json:"type,omitempty"`
	Zip         string `json:"zip,omitempty"`
}

// ContactEmail is an e-mail address of a shared contact.
type ContactEmail struct {
	Email string `json:"email,omitempty"`
	Type  string `json:"type,omitempty"`
}

// ContactName is the name of a shared contact.
type ContactName struct {
	FormattedName string `json:"formatted_name,omitempty"`
	FirstName     string `json:"first_name,omitempty"`
	LastName      string `json:"last_name,omitempty"`
	MiddleName    string `json:"middle_name,omitempty"`
	Suffix        string `json:"suffix,omitempty"`
	Prefix        string `json:"prefix,omitempty"`
}

// ContactOrg is the organisation of a shared contact.
type ContactOrg struct {
	Company    string `json:"company,omitempty"`
	Department string `json:"department,omitempty"`
	Title      string `json:"title,omitempty"`
}

// ContactPhone is a phone number of a shared contact; WaID is set when it is on WhatsApp.
type ContactPhone struct {
	Phone string `json:"phone,omitempty"`
	WaID  string `json:"wa_id,omitempty"`
	Type  string `json:"type,omitempty"`
}

// ContactURL is a web address of a shared contact.
type ContactURL struct {
	URL  string `json:"url,omitempty"`
	Type string `json:"type,omitempty"`
}

// Interactive is the customer's answer to an interactive message; Type names which of the
// replies is set.
type Interactive struct {
	Type        string       `json:"type"`
	ButtonReply *ButtonReply `json:"button_reply,omitempty"`
	ListReply   *ListReply   `json:"list_reply,omitempty"`
	NFMReply    *NFMReply    `json:"nfm_reply,omitempty"`
	// CallPermissionReply is the contact's answer to a call permission request.
	CallPermissionReply *CallPermissionReply `json:"call_permission_reply,omitempty"`
}

// CallPermissionReply is the answer to a call permission request: Response is accept or
// reject.
type CallPermissionReply struct {
	Response            string `json:"response,omitempty"`
	IsPermanent         bool   `json:"is_permanent,omitempty"`
	ExpirationTimestamp Number `json:"expiration_timestamp,omitempty"`
	ResponseSource      string `json:"response_source,omitempty"`
}

// ButtonReply is a tapped reply button.
type ButtonReply struct {
	ID    string `json:"id"`
	Title string `json:"title"`
}

// ListReply is a chosen list row.
type ListReply struct {
	ID          string `json:"id"`
	Title       string `json:"title"`
	Description string `json:"description,omitempty"`
}

// NFMReply is a completed Flow (or address message): ResponseJSON is a JSON document encoded as
// a string, as Meta sends it.
type NFMReply struct {
	Name         string `json:"name,omitempty"`
	Body         string `json:"body,omitempty"`
	ResponseJSON string `json:"response_json,omitempty"`
}

// Button is a tapped quick-reply button of a template message.
type Button struct {
	Payload string `json:"payload,omitempty"`
	Text    string `json:"text,omitempty"`
}

// ReactionObject is an emoji reaction; an empty Emoji removes an earlier reaction.
type ReactionObject struct {
	MessageID string `json:"message_id"`
	Emoji     string `json:"emoji,omitempty"`
}

// Order is a cart sent from a catalogue.
type Order struct {
	CatalogID    string        `json:"catalog_id"`
	Text         string        `json:"text,omitempty"`
	ProductItems []ProductItem `json:"product_items,omitempty"`
}

// ProductItem is one line of an order. Quantity and price stay Numbers so that no rounding
// happens on the way through.
type ProductItem struct {
	ProductRetailerID string `json:"product_retailer_id"`
	Quantity          Number `json:"quantity,omitempty"`
	ItemPrice         Number `json:"item_price,omitempty"`
	Currency          string `json:"currency,omitempty"`
}

// System is a system message, e.g. a customer changed their number (user_changed_number) or
// their BSUID changed (user_changed_user_id). Body is for people, not for parsing.
type System struct {
	Body     string `json:"body,omitempty"`
	Identity string `json:"identity,omitempty"`
	NewWaID  string `json:"new_wa_id,omitempty"`
	WaID     string `json:"wa_id,omitempty"`
	Type     string `json:"type,omitempty"`
	Customer string `json:"customer,omitempty"`
	// UserID is the new BSUID, PreviousUserID the old one (absent in payloads from before
	// 2026-08-11: the old identity is then the message's sender); the parent pair likewise.
	UserID               string `json:"user_id,omitempty"`
	PreviousUserID       string `json:"previous_user_id,omitempty"`
	ParentUserID         string `json:"parent_user_id,omitempty"`
	PreviousParentUserID string `json:"previous_parent_user_id,omitempty"`
}

// Referral is set when the customer came from a click-to-WhatsApp ad or post.
type Referral struct {
	SourceURL      string          `json:"source_url,omitempty"`
	SourceID       string          `json:"source_id,omitempty"`
	SourceType     string          `json:"source_type,omitempty"`
	Headline       string          `json:"headline,omitempty"`
	Body           string          `json:"body,omitempty"`
	MediaType      string          `json:"media_type,omitempty"`
	ImageURL       string          `json:"image_url,omitempty"`
	VideoURL       string          `json:"video_url,omitempty"`
	ThumbnailURL   string          `json:"thumbnail_url,omitempty"`
	CtwaClid       string          `json:"ctwa_clid,omitempty"`
	WelcomeMessage *WelcomeMessage `json:"welcome_message,omitempty"`
}

// WelcomeMessage is the ad's prefilled greeting.
type WelcomeMessage struct {
	Text string `json:"text,omitempty"`
}

// Identity is sent when show_security_notifications is on and the customer's identity changed.
type Identity struct {
	Acknowledged     bool   `json:"acknowledged,omitempty"`
	CreatedTimestamp string `json:"created_timestamp,omitempty"`
	Hash             string `json:"hash,omitempty"`
}

// UnsupportedInfo names the type Meta could not deliver, in newer API versions.
type UnsupportedInfo struct {
	Type string `json:"type,omitempty"`
}

// StatusUpdate is one status change of a message the business sent.
type StatusUpdate struct {
	ID        string `json:"id"`
	Status    string `json:"status"`
	Timestamp string `json:"timestamp"`
	// RecipientID is the customer's phone number, absent for a send by BSUID;
	// RecipientUserID its BSUID, and the parent BSUID under either spelling Meta used (never
	// log any of them).
	RecipientID           string        `json:"recipient_id,omitempty"`
	RecipientUserID       string        `json:"recipient_user_id,omitempty"`
	RecipientParentUserID string        `json:"recipient_parent_user_id,omitempty"`
	ParentRecipientUserID string        `json:"parent_recipient_user_id,omitempty"`
	RecipientType         string        `json:"recipient_type,omitempty"`
	BizOpaqueCallbackData string        `json:"biz_opaque_callback_data,omitempty"`
	Conversation          *Conversation `json:"conversation,omitempty"`
	Pricing               *Pricing      `json:"pricing,omitempty"`
	Errors                []MetaError   `json:"errors,omitempty"`
}

// Conversation is the billing conversation a status belongs to (older pricing model).
type Conversation struct {
	ID                  string              `json:"id"`
	Origin              *ConversationOrigin `json:"origin,omitempty"`
	ExpirationTimestamp string              `json:"expiration_timestamp,omitempty"`
}

// ConversationOrigin is the category that opened the conversation.
type ConversationOrigin struct {
	Type string `json:"type"`
}

// Pricing is Meta's billing information for a status.
type Pricing struct {
	// Billable is a pointer because "absent" and "false" differ.
	Billable     *bool  `json:"billable,omitempty"`
	PricingModel string `json:"pricing_model,omitempty"`
	Category     string `json:"category,omitempty"`
	Type         string `json:"type,omitempty"`
}

// MetaError is Meta's error object in webhooks (in value.errors, messages[].errors and
// statuses[].errors).
type MetaError struct {
	Code      int        `json:"code"`
	Title     string     `json:"title,omitempty"`
	Message   string     `json:"message,omitempty"`
	ErrorData *ErrorData `json:"error_data,omitempty"`
	Href      string     `json:"href,omitempty"`
}

// ErrorData carries the human explanation of a MetaError.
type ErrorData struct {
	Details string `json:"details,omitempty"`
}

// Number is a JSON number kept exactly as written ("30.00" stays "30.00").
//
// It exists instead of json.Number because decoding a JSON string that is not a number into a
// json.Number fails the whole body, with the string quoted in the error. A Number takes a
// number literal and quietly ignores any other JSON value, like every other mistyped field
// (see Parse).
type Number string

// UnmarshalJSON keeps a number literal as written and ignores any other value.
func (n *Number) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && (b[0] == '-' || ('0' <= b[0] && b[0] <= '9')) {
		*n = Number(b)
	}
	return nil
}

// MarshalJSON writes the number as it was read.
func (n Number) MarshalJSON() ([]byte, error) {
	if n == "" {
		return []byte("0"), nil
	}
	return []byte(n), nil
}

// isTypeError reports whether err is only a JSON value of an unexpected type for its field.
func isTypeError(err error) bool {
	var te *json.UnmarshalTypeError
	return errors.As(err, &te)
}

// ErrMalformed is wrapped by every Parse error: the body is not a single JSON object.
var ErrMalformed = errors.New("malformed webhook payload")

func malformed(what string, err error) error {
	if err == nil {
		return fmt.Errorf("%w: %s", ErrMalformed, what)
	}
	return fmt.Errorf("%w: %s: %w", ErrMalformed, what, err)
}
