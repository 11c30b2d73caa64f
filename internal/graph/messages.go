package graph

import (
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/wapipe/wapipe/internal/whatsapp"
)

// The types below are the outgoing message bodies of the Cloud API "messages" endpoint, as
// Meta documents them, field for field: a body decoded into Message and encoded again is the
// body Meta documents (the api decodes businesses' bodies into these types and refuses unknown
// fields, and the stored record is this encoding).

// Message is a body for POST /{phone-number-id}/messages. Set To or Recipient (or both), Type
// and the object named by Type; Send fills MessagingProduct.
//
// Who the message goes to is Meta's rule for users who may have no phone number
// (shared/meta/usernames.md, "Sending"): To is a phone number and nothing else, Recipient a
// business-scoped user id; with both, Meta sends to To. A BSUID never goes in To, and a send
// never carries an empty "to" (both fields are left out of the body when empty), so a message
// sent by Recipient alone has no "to" at all. Send refuses a message that breaks the rule
// before any call is made.
type Message struct {
	MessagingProduct string `json:"messaging_product"`
	// RecipientType is "individual" (the default when empty).
	RecipientType string `json:"recipient_type,omitempty"`
	// To is the customer's phone number (WhatsApp id), never a BSUID. Empty when the message
	// goes by Recipient alone: Meta refuses an empty "to", so it is then left out.
	To string `json:"to,omitempty"`
	// Recipient is the customer's business-scoped user id (BSUID, "CC.…") or parent BSUID
	// ("CC.ENT.…"), exactly as received: how a customer whose phone number Meta no longer
	// shares is reached. Meta ignores it when To is set. An authentication template with a
	// one-tap, zero-tap or copy-code button cannot go by Recipient (see RequiresPhone).
	Recipient string `json:"recipient,omitempty"`
	Type      string `json:"type"`
	// Context makes the message a quoted reply to Context.MessageID.
	Context *Context `json:"context,omitempty"`

	Text        *Text        `json:"text,omitempty"`
	Interactive *Interactive `json:"interactive,omitempty"`
	Template    *Template    `json:"template,omitempty"`
	Image       *Media       `json:"image,omitempty"`
	Audio       *Media       `json:"audio,omitempty"`
	Video       *Media       `json:"video,omitempty"`
	Document    *Media       `json:"document,omitempty"`
	Sticker     *Media       `json:"sticker,omitempty"`
	Location    *Location    `json:"location,omitempty"`
	Reaction    *Reaction    `json:"reaction,omitempty"`
	// Contacts is a contacts message's cards.
	Contacts []Contact `json:"contacts,omitempty"`

	// BizOpaqueCallbackData is echoed in the message's status webhooks; wapipe sets it to the
	// idempotency key so a status can be traced back to the task that sent it.
	BizOpaqueCallbackData string `json:"biz_opaque_callback_data,omitempty"`
}

// Context is the message a reply quotes.
type Context struct {
	MessageID string `json:"message_id"`
}

// Text is a text message body. PreviewURL asks WhatsApp to render a preview of the first URL.
type Text struct {
	Body       string `json:"body"`
	PreviewURL bool   `json:"preview_url,omitempty"`
}

// Media is an attachment by uploaded media ID or by public Link. Caption is for images, videos
// and documents, Filename for documents.
type Media struct {
	ID       string `json:"id,omitempty"`
	Link     string `json:"link,omitempty"`
	Caption  string `json:"caption,omitempty"`
	Filename string `json:"filename,omitempty"`
}

// Location is a location pin (a location message, or a template's location header).
type Location struct {
	Latitude  Coordinate `json:"latitude"`
	Longitude Coordinate `json:"longitude"`
	Name      string     `json:"name,omitempty"`
	Address   string     `json:"address,omitempty"`
}

// Coordinate is a latitude or longitude in decimal degrees. Meta's reference types it as a
// number while its own examples send a string ("37.44216251868683"); both are taken and sent on
// as written, so the body Graph gets is the body the sender wrote. The zero value is absent.
type Coordinate struct{ literal string }

// NewCoordinate is the coordinate deg, written as a JSON number.
func NewCoordinate(deg float64) Coordinate {
	return Coordinate{literal: strconv.FormatFloat(deg, 'f', -1, 64)}
}

// IsZero reports whether the coordinate is absent.
func (c Coordinate) IsZero() bool { return c.literal == "" }

// Degrees is the coordinate's value.
func (c Coordinate) Degrees() (float64, error) {
	if c.literal == "" {
		return 0, errors.New("no coordinate")
	}
	s := c.literal
	if strings.HasPrefix(s, `"`) {
		if err := json.Unmarshal([]byte(s), &s); err != nil {
			return 0, err
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || strings.ContainsAny(s, "xXpP_") {
		return 0, errors.New("not a decimal number")
	}
	return f, nil
}

// MarshalJSON writes the coordinate as it was read (0 when absent).
func (c Coordinate) MarshalJSON() ([]byte, error) {
	if c.literal == "" {
		return []byte("0"), nil
	}
	return []byte(c.literal), nil
}

// UnmarshalJSON takes a number or a string holding a decimal number; anything else is a type
// error naming the field.
func (c *Coordinate) UnmarshalJSON(b []byte) error {
	s := strings.TrimSpace(string(b))
	if s == "null" {
		return nil
	}
	if _, err := (Coordinate{literal: s}).Degrees(); err != nil {
		return &json.UnmarshalTypeError{Value: "coordinate", Type: reflect.TypeFor[float64]()}
	}
	c.literal = s
	return nil
}

// Contact is one contact card of a contacts message: name (formatted_name required), phones,
// emails, urls, addresses, org, birthday. Meta's card is the same object in a webhook and in a
// send, so it is the webhook's type.
type Contact = whatsapp.SharedContact

// Reaction reacts to MessageID with Emoji (empty removes the reaction).
type Reaction struct {
	MessageID string `json:"message_id"`
	Emoji     string `json:"emoji"`
}

// Interactive is an interactive message: Type "button" (reply buttons) or "list".
type Interactive struct {
	Type   string  `json:"type"`
	Header *Header `json:"header,omitempty"`
	Body   *Body   `json:"body,omitempty"`
	Footer *Footer `json:"footer,omitempty"`
	Action Action  `json:"action"`
}

// Header is the optional header of an interactive message; wapipe uses text headers.
type Header struct {
	Type string `json:"type"`
	Text string `json:"text,omitempty"`
}

// Body is the main text of an interactive message.
type Body struct {
	Text string `json:"text"`
}

// Footer is the optional small print of an interactive message.
type Footer struct {
	Text string `json:"text"`
}

// Action holds the buttons (reply buttons) or the button text and sections (list).
type Action struct {
	Buttons  []ActionButton `json:"buttons,omitempty"`
	Button   string         `json:"button,omitempty"`
	Sections []Section      `json:"sections,omitempty"`
	// Name names the action of an interactive message whose button WhatsApp owns:
	// "request_contact_info" (type request_contact_info: the user shares their contact card,
	// the way to learn the phone of a person known by BSUID alone).
	Name string `json:"name,omitempty"`
}

// ActionButton is one reply button ({"type":"reply","reply":{"id","title"}}).
type ActionButton struct {
	Type  string      `json:"type"`
	Reply ButtonReply `json:"reply"`
}

// ButtonReply is a reply button's id (returned in the customer's answer) and label.
type ButtonReply struct {
	ID    string `json:"id"`
	Title string `json:"title"`
}

// Section is a titled group of list rows.
type Section struct {
	Title string `json:"title,omitempty"`
	Rows  []Row  `json:"rows"`
}

// Row is one choice of a list.
type Row struct {
	ID          string `json:"id"`
	Title       string `json:"title"`
	Description string `json:"description,omitempty"`
}

// Template is a pre-approved template message.
type Template struct {
	Name       string      `json:"name"`
	Language   Language    `json:"language"`
	Components []Component `json:"components,omitempty"`
}

// Language is the template's language, e.g. {Code: "en_US"}.
type Language struct {
	Code   string `json:"code"`
	Policy string `json:"policy,omitempty"`
}

// Component fills a template part: Type "header", "body" or "button" (with SubType and Index).
type Component struct {
	Type       string      `json:"type"`
	SubType    string      `json:"sub_type,omitempty"`
	Index      string      `json:"index,omitempty"`
	Parameters []Parameter `json:"parameters,omitempty"`
}

// Parameter is one template variable: Type "text", "currency", "date_time", "image",
// "document", "video", "location" (header), "payload" (quick reply button), "coupon_code" (copy
// code button) or "action" (flow and catalog buttons), with the matching field set.
type Parameter struct {
	Type string `json:"type"`
	// ParameterName is set for templates with named parameters.
	ParameterName string          `json:"parameter_name,omitempty"`
	Text          string          `json:"text,omitempty"`
	Payload       string          `json:"payload,omitempty"`
	Currency      *Currency       `json:"currency,omitempty"`
	DateTime      *DateTime       `json:"date_time,omitempty"`
	Image         *Media          `json:"image,omitempty"`
	Document      *Media          `json:"document,omitempty"`
	Video         *Media          `json:"video,omitempty"`
	Location      *Location       `json:"location,omitempty"`
	CouponCode    string          `json:"coupon_code,omitempty"`
	Action        *TemplateAction `json:"action,omitempty"`
}

// TemplateAction is the action parameter of a flow button (FlowToken, FlowActionData) or a
// catalog button (ThumbnailProductRetailerID).
type TemplateAction struct {
	FlowToken string `json:"flow_token,omitempty"`
	// FlowActionData is the flow's own input, whatever the flow defines.
	FlowActionData             map[string]any `json:"flow_action_data,omitempty"`
	ThumbnailProductRetailerID string         `json:"thumbnail_product_retailer_id,omitempty"`
}

// Currency is a money amount parameter; Amount1000 is the amount times 1000.
type Currency struct {
	FallbackValue string `json:"fallback_value"`
	Code          string `json:"code"`
	Amount1000    int64  `json:"amount_1000"`
}

// DateTime is a date parameter shown as FallbackValue.
type DateTime struct {
	FallbackValue string `json:"fallback_value"`
}

// SendOptions are the options every send takes.
type SendOptions struct {
	// ReplyTo quotes that message (context.message_id).
	ReplyTo string
	// BizOpaqueCallbackData is echoed in status webhooks (wapipe: the idempotency key).
	BizOpaqueCallbackData string
}

func (o SendOptions) apply(m *Message) {
	if o.ReplyTo != "" {
		m.Context = &Context{MessageID: o.ReplyTo}
	}
	m.BizOpaqueCallbackData = o.BizOpaqueCallbackData
}

// Button is a reply button for SendButtons.
type Button struct {
	ID    string
	Title string
}

// Buttons is a reply-buttons message: Body with one to three buttons.
type Buttons struct {
	Header  string // optional text header
	Body    string
	Footer  string // optional
	Buttons []Button
}

// List is a list message: Body, the label of the button that opens the list, and sections.
type List struct {
	Header     string // optional text header
	Body       string
	Footer     string // optional
	ButtonText string
	Sections   []Section
}

// Limits Meta enforces on interactive messages; checking them here fails fast and clearly
// instead of spending a Graph API call on an error 131009.
const (
	MaxReplyButtons = 3
	MaxListRows     = 10
	MaxListSections = 10
	// MaxListRowTitle and MaxListRowDescription are a list row's title and description.
	MaxListRowTitle       = 24
	MaxListRowDescription = 72
)

// Clip cuts s to at most n characters (runes), ending a cut text with an ellipsis, so that a
// text meets one of Meta's limits and still shows it was cut.
func Clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}

func interactiveParts(header, body, footer string) (*Header, *Body, *Footer) {
	var h *Header
	var f *Footer
	if header != "" {
		h = &Header{Type: "text", Text: header}
	}
	if footer != "" {
		f = &Footer{Text: footer}
	}
	return h, &Body{Text: body}, f
}
