package whatsapp

import (
	"strings"

	"github.com/wapipe/wapipe/internal/contact"
)

// Normalize flattens every message and every status of a payload into wapipe's Message and
// Status shapes.
//
// Order: payload order. Entries in order, within an entry its changes in order, within a change
// its messages (or statuses) in order. Meta does not promise that order is the order in which
// things happened, so consumers that care compare Timestamp; but a stable order keeps the
// outbound tasks and the records reproducible for the same body.
//
// Every change is read whatever its field: the messages and statuses arrays only occur under
// the "messages" field today, and reading them wherever they occur keeps Normalize in step
// with InboundEventID, which scans the same way.
func Normalize(p *Payload) ([]Message, []Status) {
	if p == nil {
		return nil, nil
	}
	var msgs []Message
	var sts []Status
	for _, e := range p.Entry {
		for _, c := range e.Changes {
			v := &c.Value
			for i := range v.Messages {
				msgs = append(msgs, normalizeMessage(v, &v.Messages[i]))
			}
			for i := range v.Statuses {
				sts = append(sts, normalizeStatus(v, &v.Statuses[i]))
			}
		}
	}
	return msgs, sts
}

func normalizeMessage(v *Value, in *InboundMessage) Message {
	sender := withProfile(contact.FromWebhook(in.From, in.FromUserID, in.FromParentUserID, "", ""), v.Contacts)
	m := Message{
		ID: in.ID,
		// The sender as contact.FromWebhook reads it, with what the contacts[] entry that names
		// the same person adds (a phone or a BSUID Meta gave only there).
		From:               sender.WaID,
		FromUserID:         sender.UserID,
		FromParentUserID:   sender.ParentUserID,
		ContactName:        sender.Name,
		Username:           sender.Username,
		PhoneNumberID:      v.Metadata.PhoneNumberID,
		DisplayPhoneNumber: v.Metadata.DisplayPhoneNumber,
		Timestamp:          in.Timestamp,
		Type:               in.Type,
		Errors:             convertErrors(in.Errors),
		Raw:                in.Raw,
	}
	if in.Context != nil {
		m.ContextID = in.Context.ID
	}
	if in.Text != nil {
		m.Text = in.Text.Body
	}
	// Media objects are read by the sub-object present rather than by Type, so that a media
	// message whose type Meta renames still carries its attachment.
	for _, md := range []*MediaObject{in.Image, in.Audio, in.Video, in.Document, in.Sticker} {
		if md == nil {
			continue
		}
		m.Media = &Media{
			ID:       md.ID,
			MimeType: md.MimeType,
			SHA256:   md.SHA256,
			Filename: md.Filename,
			Animated: md.Animated,
			Voice:    md.Voice,
		}
		if m.Text == "" {
			m.Text = md.Caption
		}
		break
	}
	if l := in.Location; l != nil {
		m.Location = &Location{Latitude: l.Latitude, Longitude: l.Longitude, Name: l.Name, Address: l.Address, URL: l.URL}
	}
	for _, c := range in.Contacts {
		m.Contacts = append(m.Contacts, contactCard(c))
	}
	m.SharedPhone = sharedPhone(in.Contacts)
	if r := in.Reaction; r != nil {
		m.Reaction = &Reaction{MessageID: r.MessageID, Emoji: r.Emoji}
	}
	m.Reply = reply(in)
	otherKinds(&m, v, in)
	return m
}

// otherKinds fills what a revoke, an edit, an order or a system message carries.
func otherKinds(m *Message, v *Value, in *InboundMessage) {
	if r := in.Revoke; r != nil {
		m.OriginalID = r.OriginalMessageID
	}
	if e := in.Edit; e != nil {
		m.OriginalID = e.OriginalMessageID
		if e.Message != nil {
			// The new content in the flat fields, as if it had come as a message of its own.
			inner := normalizeMessage(v, e.Message)
			m.Text, m.Media, m.Location = inner.Text, inner.Media, inner.Location
		}
	}
	if o := in.Order; o != nil {
		m.Order = &OrderInfo{CatalogID: o.CatalogID, Text: o.Text}
		for _, it := range o.ProductItems {
			m.Order.Items = append(m.Order.Items, OrderItem{ProductRetailerID: it.ProductRetailerID,
				Quantity: string(it.Quantity), ItemPrice: string(it.ItemPrice), Currency: it.Currency})
		}
	}
	if sy := in.System; sy != nil {
		// Older API versions named the new id new_wa_id; current ones wa_id.
		id := sy.WaID
		if id == "" {
			id = sy.NewWaID
		}
		m.System = &SystemNotice{Type: sy.Type, NewWaID: id, UserID: sy.UserID, PreviousUserID: sy.PreviousUserID,
			ParentUserID: sy.ParentUserID, PreviousParentUserID: sy.PreviousParentUserID}
	}
}

// reply extracts the user's choice from an interactive answer or a template button.
func reply(in *InboundMessage) *Reply {
	if it := in.Interactive; it != nil {
		switch {
		case it.ButtonReply != nil:
			return &Reply{Kind: "button_reply", ID: it.ButtonReply.ID, Title: it.ButtonReply.Title}
		case it.ListReply != nil:
			return &Reply{Kind: "list_reply", ID: it.ListReply.ID, Title: it.ListReply.Title, Description: it.ListReply.Description}
		case it.NFMReply != nil:
			// A Flow answer has no id of its own: its name says which kind of Flow ("flow",
			// "address_message") and the body is the text shown in the chat. The answers
			// themselves (response_json) stay in Raw.
			return &Reply{Kind: "nfm_reply", ID: it.NFMReply.Name, Title: it.NFMReply.Body}
		case it.CallPermissionReply != nil:
			return &Reply{Kind: InteractiveCallPermission, ID: it.CallPermissionReply.Response}
		}
	}
	if b := in.Button; b != nil {
		return &Reply{Kind: "button", ID: b.Payload, Title: b.Text}
	}
	return nil
}

// sharedPhone is the phone a user shared of themselves when the business asked for it: the
// WhatsApp number of the one card of origin contact_request; "" for anything else (a card of
// someone else, or several numbers to choose from).
func sharedPhone(cards []SharedContact) string {
	if len(cards) != 1 || cards[0].Origin != "contact_request" {
		return ""
	}
	phone := ""
	for _, p := range cards[0].Phones {
		if p.WaID == "" || !contact.IsPhone(p.WaID) {
			continue
		}
		if phone != "" && phone != p.WaID {
			return ""
		}
		phone = p.WaID
	}
	return phone
}

// contactCard flattens a shared contact to its name, organisation, numbers and e-mails.
func contactCard(c SharedContact) ContactCard {
	n := c.Name
	name := n.FormattedName
	if name == "" {
		name = strings.Join(strings.Fields(strings.Join([]string{n.Prefix, n.FirstName, n.MiddleName, n.LastName, n.Suffix}, " ")), " ")
	}
	card := ContactCard{Name: name}
	if c.Org != nil {
		card.Org = c.Org.Company
	}
	for _, p := range c.Phones {
		switch {
		case p.Phone != "":
			card.Phones = append(card.Phones, p.Phone)
		case p.WaID != "":
			card.Phones = append(card.Phones, p.WaID)
		}
	}
	for _, e := range c.Emails {
		if e.Email != "" {
			card.Emails = append(card.Emails, e.Email)
		}
	}
	return card
}

func normalizeStatus(v *Value, in *StatusUpdate) Status {
	// The recipient with what the contacts[] entry beside the statuses adds.
	to := withProfile(contact.FromWebhook(in.RecipientID, in.RecipientUserID, or(in.RecipientParentUserID, in.ParentRecipientUserID), "", ""), v.Contacts)
	s := Status{
		ID:                    in.ID,
		Status:                in.Status,
		Timestamp:             in.Timestamp,
		RecipientID:           to.WaID,
		RecipientUserID:       to.UserID,
		RecipientParentUserID: to.ParentUserID,
		PhoneNumberID:         v.Metadata.PhoneNumberID,
		BizOpaqueCallbackData: in.BizOpaqueCallbackData,
		Errors:                convertErrors(in.Errors),
	}
	if in.Conversation != nil {
		s.ConversationID = in.Conversation.ID
	}
	if in.Pricing != nil {
		s.PricingCategory, s.PricingType = in.Pricing.Category, in.Pricing.Type
		if b := in.Pricing.Billable; b != nil {
			billable := *b // a copy: the Status must not alias the parsed payload
			s.Billable = &billable
		}
	}
	return s
}

func convertErrors(es []MetaError) []Error {
	if len(es) == 0 {
		return nil
	}
	out := make([]Error, len(es))
	for i, e := range es {
		out[i] = Error{Code: e.Code, Title: e.Title, Message: e.Message}
		if e.ErrorData != nil {
			out[i].Details = e.ErrorData.Details
		}
	}
	return out
}

// or returns a, else b: Meta spelled some fields two ways.
func or(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
