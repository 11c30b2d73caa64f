package inbox

import (
	"cmp"
	"context"
	"errors"

	"github.com/wapipe/wapipe/internal/console/page"
	"github.com/wapipe/wapipe/internal/contact"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/tenant"
)

// contactOf is the contact of conversation c: the tenant's contact document when it can be read
// (its identifiers are the latest: a phone shared since, a parent BSUID, a phone dropped after a
// change of number), else what the conversation recorded of the person. The display fields the
// contact lacks are the conversation's. A contact that cannot be read makes the page show less,
// never fail.
func (s *Server) contactOf(ctx context.Context, c store.Conversation) store.Contact {
	fromConv := contact.Identity{WaID: c.Contact, UserID: c.UserID, Username: c.Username, Name: c.ContactName}
	ct := store.Contact{ID: c.ContactID, TenantID: c.TenantID, Identity: fromConv}
	if s.deps.Contacts == nil || c.TenantID == "" {
		return ct
	}
	var (
		found store.Contact
		ok    bool
		err   error
	)
	switch {
	case c.ContactID != "":
		found, err = s.deps.Contacts.Get(ctx, c.TenantID, c.ContactID)
		ok = err == nil
		if errors.Is(err, store.ErrNotFound) {
			err = nil
		}
	case !fromConv.IsZero():
		// A conversation from before contacts names no contact: the phone finds it.
		found, ok, err = s.deps.Contacts.Find(ctx, c.TenantID, contact.Identity{WaID: c.Contact, UserID: c.UserID})
	}
	if err != nil {
		page.Logger(ctx).Warn("read a conversation's contact", "event", "console_contact_failed", "tenant_id", c.TenantID,
			"conversation_id", c.ID, "error", err)
	}
	if !ok {
		return ct
	}
	// The contact's identifiers are the truth: a phone it no longer has (a number changed since,
	// perhaps given to someone else) is not taken back from the conversation. The conversation
	// fills in only the display fields it lacks.
	found.Name = cmp.Or(found.Name, fromConv.Name)
	found.Username = cmp.Or(found.Username, fromConv.Username)
	return found
}

// person is a contact as an operator may see them: the profile name and the username (display
// only), the phone's last digits where it is known, never the phone or the BSUID in clear.
type person struct {
	// Name is the WhatsApp profile name; Username the username, with its "@".
	Name, Username string
	// Phone is the phone's last four digits ("…7890"), "" when Meta never shared it.
	Phone string
	// NoPhone: the contact is known by a BSUID alone (a user with a username who never shared
	// their number with this business): the page offers to ask for it.
	NoPhone bool
	// Label is all of it on one line: "Pak Agus @agus (…7890)"; Heading the first of the name,
	// the username, the phone's last digits (the conversation's heading, the rest beside it).
	Label, Heading string
}

// unnamed is the label of a contact with no name, no username and no phone known.
const unnamed = "Unnamed contact"

// personOf shows identity id.
func personOf(id contact.Identity) person {
	p := person{Name: id.Name, NoPhone: id.WaID == "" && (id.UserID != "" || id.ParentUserID != "")}
	if id.Username != "" {
		p.Username = "@" + id.Username
	}
	if id.WaID != "" {
		// Masked as the console masks members' numbers (tenant.MemberLabel).
		p.Phone = tenant.MemberLabel(tenant.Member{WaID: id.WaID})
	}
	label := p.Name
	if p.Username != "" {
		label = joinSpace(label, p.Username)
	}
	switch {
	case p.Phone != "" && label != "":
		label += " (" + p.Phone + ")"
	case p.Phone != "":
		label = p.Phone
	case label == "":
		label = unnamed
	}
	p.Label = label
	p.Heading = cmp.Or(p.Name, p.Username, p.Phone, unnamed)
	return p
}

// conversationPerson shows the contact of conversation c as the conversation recorded them.
func conversationPerson(c store.Conversation) person {
	return personOf(contact.Identity{WaID: c.Contact, UserID: c.UserID, Username: c.Username, Name: c.ContactName})
}

func joinSpace(a, b string) string {
	if a == "" {
		return b
	}
	return a + " " + b
}
