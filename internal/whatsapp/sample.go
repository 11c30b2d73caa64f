package whatsapp

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"time"
)

// Sample payload builders produce webhook bodies shaped exactly like Meta's, for tests, the
// local stack and the CLI. Each returns a complete body (object, entry, change "messages",
// metadata, contacts for inbound messages) ready to be signed and POSTed to the webhook.

// SampleOptions describe the parties and ids of a sample payload. Zero fields take the
// defaults of DefaultSampleOptions; MessageID left empty gets a fresh NewMessageID, and a zero
// Timestamp is the current time.
type SampleOptions struct {
	// WABAID is the WhatsApp Business Account id (entry[].id).
	WABAID string
	// PhoneNumberID and DisplayPhoneNumber name the business number (value.metadata).
	PhoneNumberID      string
	DisplayPhoneNumber string
	// From is the customer's phone number: the sender of a message, the recipient of a status.
	From string
	// UserID is the customer's business-scoped user id (BSUID), sent beside the phone (Meta
	// sends it with every message since April 2026); none when empty. ParentUserID is its
	// parent BSUID, for an enrolled business. Username is the customer's WhatsApp username.
	UserID, ParentUserID, Username string
	// NoPhone leaves the phone out, as Meta does for a user with a username who did not share
	// it: the customer is known by UserID alone.
	NoPhone bool
	// ContactName is the customer's profile name.
	ContactName string
	// MessageID is the id of the inbound message, or of the outbound message a status is about.
	MessageID string
	// Timestamp is when the event happened.
	Timestamp time.Time
	// ContextID, when set, makes an inbound message quote that message (context.id); it is
	// always set for interactive replies, which Meta sends with the id of the message answered.
	ContextID string
	// BizOpaqueCallbackData is echoed in statuses (wapipe sets it to the idempotency key).
	BizOpaqueCallbackData string
}

// DefaultSampleOptions are the values SampleOptions fall back to: the test numbers of Meta's
// own examples.
var DefaultSampleOptions = SampleOptions{
	WABAID:             "102290129340398",
	PhoneNumberID:      "106540352242922",
	DisplayPhoneNumber: "15550783881",
	From:               "16505551234",
	ContactName:        "Sheena Nelson",
}

// NewMessageID returns a fresh wamid-style id ("wamid." and 48 base64 characters), unique with
// overwhelming probability.
func NewMessageID() string {
	var b [36]byte
	// crypto/rand.Read never returns an error (it crashes the program instead).
	_, _ = rand.Read(b[:])
	return "wamid." + base64.StdEncoding.EncodeToString(b[:])
}

func (o SampleOptions) withDefaults() SampleOptions {
	d := DefaultSampleOptions
	def := func(v *string, dv string) {
		if *v == "" {
			*v = dv
		}
	}
	def(&o.WABAID, d.WABAID)
	def(&o.PhoneNumberID, d.PhoneNumberID)
	def(&o.DisplayPhoneNumber, d.DisplayPhoneNumber)
	if !o.NoPhone {
		def(&o.From, d.From)
	} else {
		o.From = ""
	}
	def(&o.ContactName, d.ContactName)
	if o.MessageID == "" {
		o.MessageID = NewMessageID()
	}
	if o.Timestamp.IsZero() {
		o.Timestamp = time.Now()
	}
	return o
}

func (o SampleOptions) unix() string { return strconv.FormatInt(o.Timestamp.Unix(), 10) }

// envelope wraps one value in Meta's object/entry/changes envelope and encodes it.
func (o SampleOptions) envelope(v Value) []byte { return o.envelopeField(FieldMessages, v) }

// envelopeField is envelope for a change of another subscribed field about a phone number.
func (o SampleOptions) envelopeField(field string, v Value) []byte {
	v.MessagingProduct = "whatsapp"
	v.Metadata = Metadata{DisplayPhoneNumber: o.DisplayPhoneNumber, PhoneNumberID: o.PhoneNumberID}
	return o.envelopeBare(field, v)
}

// envelopeBare wraps a value as it is: the changes about the whole account (account_update, the
// template updates) carry no messaging_product or metadata.
func (o SampleOptions) envelopeBare(field string, v Value) []byte {
	p := Payload{
		Object: "whatsapp_business_account",
		Entry:  []Entry{{ID: o.WABAID, Changes: []Change{{Field: field, Value: v}}}},
	}
	b, err := json.Marshal(p)
	if err != nil {
		// Only types of this package are encoded, and they always encode.
		panic(fmt.Sprintf("whatsapp: encode sample payload: %v", err))
	}
	return b
}

// inbound builds a one-message body: the message gets its sender, ID, Timestamp and ContextID
// from o.
func (o SampleOptions) inbound(m InboundMessage) []byte {
	m.From, m.FromUserID, m.FromParentUserID, m.ID, m.Timestamp = o.From, o.UserID, o.ParentUserID, o.MessageID, o.unix()
	if o.ContextID != "" && m.Context == nil {
		m.Context = &Context{From: o.DisplayPhoneNumber, ID: o.ContextID}
	}
	return o.envelope(Value{
		Contacts: []Contact{o.contact()},
		Messages: []InboundMessage{m},
	})
}

// contact is the contacts[] entry of the customer.
func (o SampleOptions) contact() Contact {
	return Contact{Profile: Profile{Name: o.ContactName, Username: o.Username}, WaID: o.From, UserID: o.UserID, ParentUserID: o.ParentUserID}
}

// interactiveContext is the context Meta sends with an interactive reply: the id of the
// interactive message the customer answered.
func (o SampleOptions) interactiveContext() *Context {
	id := o.ContextID
	if id == "" {
		id = NewMessageID()
	}
	return &Context{From: o.DisplayPhoneNumber, ID: id}
}

// SampleText is a text message.
func SampleText(o SampleOptions, body string) []byte {
	o = o.withDefaults()
	return o.inbound(InboundMessage{Type: "text", Text: &Text{Body: body}})
}

// SampleButtonReply is a tap on a reply button of an interactive message.
func SampleButtonReply(o SampleOptions, id, title string) []byte {
	o = o.withDefaults()
	return o.inbound(InboundMessage{
		Type:        "interactive",
		Context:     o.interactiveContext(),
		Interactive: &Interactive{Type: "button_reply", ButtonReply: &ButtonReply{ID: id, Title: title}},
	})
}

// SampleListReply is a row chosen from an interactive list.
func SampleListReply(o SampleOptions, id, title, description string) []byte {
	o = o.withDefaults()
	return o.inbound(InboundMessage{
		Type:        "interactive",
		Context:     o.interactiveContext(),
		Interactive: &Interactive{Type: "list_reply", ListReply: &ListReply{ID: id, Title: title, Description: description}},
	})
}

// SampleImage is an image with an optional caption; mediaID is the id to fetch it by.
func SampleImage(o SampleOptions, mediaID, mimeType, caption string) []byte {
	o = o.withDefaults()
	return o.inbound(InboundMessage{
		Type: "image",
		Image: &MediaObject{
			ID:       mediaID,
			MimeType: mimeType,
			// Meta sends the base64 SHA-256 of the file; one of the id does for a sample.
			SHA256:  b64SHA256(mediaID),
			Caption: caption,
		},
	})
}

// SampleMediaFile names a media file in a sample message, as the webhook does.
type SampleMediaFile struct {
	// ID is the media id to fetch the file by; SHA256 is its base64 SHA-256.
	ID, MIMEType, SHA256 string
	// Caption (image, video, document) and Filename (document) are optional.
	Caption, Filename string
	// Voice marks an audio recorded as a voice note.
	Voice bool
}

// SampleMedia is an image, audio, video or document message naming f.
func SampleMedia(o SampleOptions, typ string, f SampleMediaFile) []byte {
	o = o.withDefaults()
	mo := &MediaObject{ID: f.ID, MimeType: f.MIMEType, SHA256: f.SHA256, Caption: f.Caption, Filename: f.Filename, Voice: f.Voice}
	m := InboundMessage{Type: typ}
	switch typ {
	case "audio":
		// Meta sends no caption with audio.
		mo.Caption = ""
		m.Audio = mo
	case "video":
		m.Video = mo
	case "document":
		m.Document = mo
	default:
		m.Type, m.Image = "image", mo
	}
	return o.inbound(m)
}

// SampleContacts is a contacts message sharing one card.
func SampleContacts(o SampleOptions, name, phone string) []byte {
	o = o.withDefaults()
	return o.inbound(InboundMessage{Type: "contacts", Contacts: []SharedContact{{
		Name:   ContactName{FormattedName: name, FirstName: name},
		Phones: []ContactPhone{{Phone: phone, Type: "CELL"}},
	}}})
}

// SampleLocation is a shared location pin.
func SampleLocation(o SampleOptions, lat, lng float64, name, address string) []byte {
	o = o.withDefaults()
	return o.inbound(InboundMessage{
		Type:     "location",
		Location: &LocationObject{Latitude: lat, Longitude: lng, Name: name, Address: address},
	})
}

// SampleReaction is an emoji reaction to messageID; an empty emoji removes a reaction.
func SampleReaction(o SampleOptions, messageID, emoji string) []byte {
	o = o.withDefaults()
	return o.inbound(InboundMessage{Type: "reaction", Reaction: &ReactionObject{MessageID: messageID, Emoji: emoji}})
}

// SampleBatch is one change carrying n text messages from the same sender, as Meta batches
// them under load: bodies "message 1" … "message n", ids fresh (o.MessageID is ignored),
// timestamps one second apart from o.Timestamp.
func SampleBatch(o SampleOptions, n int) []byte {
	o = o.withDefaults()
	msgs := make([]InboundMessage, n)
	for i := range msgs {
		msgs[i] = InboundMessage{
			From:       o.From,
			FromUserID: o.UserID,
			ID:         NewMessageID(),
			Timestamp:  strconv.FormatInt(o.Timestamp.Unix()+int64(i), 10),
			Type:       "text",
			Text:       &Text{Body: "message " + strconv.Itoa(i+1)},
		}
	}
	return o.envelope(Value{
		Contacts: []Contact{o.contact()},
		Messages: msgs,
	})
}

// SampleStatus is a status update ("sent", "delivered", "read", …) of the outbound message
// o.MessageID sent to o.From. Billing details are those of a free customer-service reply.
func SampleStatus(o SampleOptions, status string) []byte {
	o = o.withDefaults()
	v := Value{Statuses: []StatusUpdate{o.status(status)}}
	if o.UserID != "" {
		// Since BSUIDs, a sent, delivered or read status comes with the recipient's contacts[].
		v.Contacts = []Contact{o.contact()}
	}
	return o.envelope(v)
}

// SamplePricedStatus is SampleStatus with Meta's pricing of the message: its category
// ("marketing", "utility", "authentication", "service", …) and type ("regular" is charged,
// "free_customer_service" and "free_entry_point" are free).
func SamplePricedStatus(o SampleOptions, status, category, pricingType string) []byte {
	o = o.withDefaults()
	s := o.status(status)
	billable := pricingType == "regular"
	s.Pricing = &Pricing{Billable: &billable, PricingModel: "PMP", Category: category, Type: pricingType}
	return o.envelope(Value{Statuses: []StatusUpdate{s}})
}

// SampleFailedStatus is a "failed" status with Meta's error, e.g. 131026 "Message
// undeliverable" or 131047 "Re-engagement message".
func SampleFailedStatus(o SampleOptions, code int, title, details string) []byte {
	o = o.withDefaults()
	s := o.status("failed")
	s.Conversation, s.Pricing = nil, nil // Meta bills nothing for a failed message
	s.Errors = []MetaError{{
		Code:      code,
		Title:     title,
		Message:   title,
		ErrorData: &ErrorData{Details: details},
		Href:      "https://developers.facebook.com/docs/whatsapp/cloud-api/support/error-codes/",
	}}
	return o.envelope(Value{Statuses: []StatusUpdate{s}})
}

func (o SampleOptions) status(status string) StatusUpdate {
	billable := false
	s := StatusUpdate{
		ID:                    o.MessageID,
		Status:                status,
		Timestamp:             o.unix(),
		RecipientID:           o.From,
		RecipientUserID:       o.UserID,
		BizOpaqueCallbackData: o.BizOpaqueCallbackData,
		Conversation: &Conversation{
			ID:     conversationID(o.MessageID),
			Origin: &ConversationOrigin{Type: "service"},
		},
		Pricing: &Pricing{Billable: &billable, PricingModel: "PMP", Category: "service", Type: "free_customer_service"},
	}
	if status == "sent" {
		// Meta tells when the conversation window closes only on the first status.
		s.Conversation.ExpirationTimestamp = strconv.FormatInt(o.Timestamp.Add(24*time.Hour).Unix(), 10)
	}
	return s
}

// conversationID derives a stable 32-hex-digit conversation id from a message id, so that the
// statuses of one message share a conversation.
func conversationID(messageID string) string {
	sum := sha256.Sum256([]byte(messageID))
	return hex.EncodeToString(sum[:16])
}

func b64SHA256(s string) string {
	sum := sha256.Sum256([]byte(s))
	return base64.StdEncoding.EncodeToString(sum[:])
}
