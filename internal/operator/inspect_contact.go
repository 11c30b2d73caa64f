package operator

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/wapipe/wapipe/internal/contact"
	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/internal/store"
)

// People finds a person's contacts and conversations; the store's tenants, contacts and
// conversations implement it (PeopleStore).
type People interface {
	List(ctx context.Context) ([]store.TenantRecord, error)
	FindIn(ctx context.Context, tenantIDs []string, id contact.Identity) (map[string]store.Contact, error)
	Get(ctx context.Context, tenantID, id string) (store.Contact, error)
	ConversationsOf(ctx context.Context, contactID string) ([]store.Conversation, error)
	ConversationsByUsername(ctx context.Context, username string, limit int) ([]store.Conversation, error)
}

// ContactReport is a person as an operator reads it: never an identifier in clear, only the refs
// logs carry for them (ph_ of the phone, us_ of the business-scoped user ids, un_ of the
// username), so a log search can follow them.
type ContactReport struct {
	TenantID  string    `json:"tenant_id"`
	ContactID string    `json:"contact_id"`
	PhoneRef  string    `json:"phone_ref,omitempty"`
	UserRef   string    `json:"user_ref,omitempty"`
	ParentRef string    `json:"parent_user_ref,omitempty"`
	Username  string    `json:"username_ref,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	// Conversations are the contact's conversations (id, number, status, last inbound time).
	Conversations []ConversationRef `json:"conversations"`
}

// ConversationRef names one conversation of a contact.
type ConversationRef struct {
	ID            string    `json:"id"`
	PhoneNumberID string    `json:"phone_number_id"`
	Status        string    `json:"status"`
	LastInboundAt time.Time `json:"last_inbound_at"`
	MovedTo       string    `json:"moved_to,omitempty"`
}

// IsPersonQuery reports whether q names a person rather than an event: a phone number, a
// business-scoped user id (or a parent one), a @username or a contact id.
func IsPersonQuery(q string) bool {
	return contact.IsPhone(strings.NewReplacer(" ", "", "-", "").Replace(q)) && len(logging.NormalizePhone(q)) >= 6 ||
		contact.ValidUserID(q) || contact.ValidParentUserID(q) ||
		(strings.HasPrefix(q, "@") && len(q) > 1) || strings.HasPrefix(q, store.ContactIDPrefix)
}

// InspectContact reports the contacts a person query names (IsPersonQuery), in every tenant
// that knows them. ErrNothingFound when none does.
func InspectContact(ctx context.Context, p People, h *logging.Hasher, q string) ([]ContactReport, error) {
	recs, err := p.List(ctx)
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(recs))
	for i, r := range recs {
		ids[i] = r.Tenant.ID
	}
	var found []store.Contact
	switch {
	case strings.HasPrefix(q, store.ContactIDPrefix):
		for _, id := range ids {
			if c, err := p.Get(ctx, id, q); err == nil {
				found = append(found, c)
			}
		}
	case strings.HasPrefix(q, "@"):
		convs, err := p.ConversationsByUsername(ctx, strings.TrimPrefix(q, "@"), 50)
		if err != nil {
			return nil, err
		}
		for _, conv := range convs {
			if c, err := p.Get(ctx, conv.TenantID, conv.ContactID); err == nil && !slices.ContainsFunc(found, func(f store.Contact) bool { return f.ID == c.ID }) {
				found = append(found, c)
			}
		}
	default:
		person := contact.Identity{WaID: logging.NormalizePhone(q)}
		if !contact.IsPhone(strings.NewReplacer(" ", "", "-", "").Replace(q)) {
			person = contact.FromWebhook("", q, "", "", "")
			if contact.ValidParentUserID(q) {
				person = contact.Identity{ParentUserID: q}
			}
		}
		byTenant, err := p.FindIn(ctx, ids, person)
		if err != nil {
			return nil, err
		}
		for _, id := range ids {
			if c, ok := byTenant[id]; ok {
				found = append(found, c)
			}
		}
	}
	if len(found) == 0 {
		return nil, fmt.Errorf("%w: no tenant knows %s", ErrNothingFound, describeQuery(h, q))
	}
	out := make([]ContactReport, 0, len(found))
	for _, c := range found {
		r := ContactReport{TenantID: c.TenantID, ContactID: c.ID, PhoneRef: h.Phone(c.WaID), UserRef: h.User(c.UserID),
			ParentRef: h.User(c.ParentUserID), Username: h.Username(c.Username), CreatedAt: c.CreatedAt, Conversations: []ConversationRef{}}
		convs, err := p.ConversationsOf(ctx, c.ID)
		if err != nil {
			return nil, err
		}
		for _, conv := range convs {
			r.Conversations = append(r.Conversations, ConversationRef{ID: conv.ID, PhoneNumberID: conv.PhoneNumberID,
				Status: conv.Status, LastInboundAt: conv.LastInboundAt, MovedTo: conv.MovedTo})
		}
		out = append(out, r)
	}
	return out, nil
}

// describeQuery names a person query without repeating it: its ref.
func describeQuery(h *logging.Hasher, q string) string {
	switch {
	case strings.HasPrefix(q, store.ContactIDPrefix):
		return q
	case strings.HasPrefix(q, "@"):
		return h.Username(q)
	case contact.ValidUserID(q) || contact.ValidParentUserID(q):
		return h.User(q)
	}
	return h.Phone(q)
}

// PeopleStore is People on the stores of one database.
type PeopleStore struct {
	Tenants       *store.Tenants
	Contacts      *store.Contacts
	Conversations *store.ConversationStore
}

// NewPeopleStore returns the People of db.
func NewPeopleStore(db *store.DB) PeopleStore {
	return PeopleStore{Tenants: store.NewTenants(db, store.Options{}), Contacts: store.NewContacts(db, store.Options{}),
		Conversations: store.NewConversationStore(db, store.Options{})}
}

// List lists the tenants.
func (p PeopleStore) List(ctx context.Context) ([]store.TenantRecord, error) {
	return p.Tenants.List(ctx)
}

// FindIn finds the person's contact in each tenant.
func (p PeopleStore) FindIn(ctx context.Context, tenantIDs []string, id contact.Identity) (map[string]store.Contact, error) {
	return p.Contacts.FindIn(ctx, tenantIDs, id)
}

// Get reads a contact.
func (p PeopleStore) Get(ctx context.Context, tenantID, id string) (store.Contact, error) {
	return p.Contacts.Get(ctx, tenantID, id)
}

// ConversationsOf lists a contact's conversations.
func (p PeopleStore) ConversationsOf(ctx context.Context, contactID string) ([]store.Conversation, error) {
	return p.Conversations.ConversationsOf(ctx, contactID)
}

// ConversationsByUsername lists the conversations of contacts with a username.
func (p PeopleStore) ConversationsByUsername(ctx context.Context, username string, limit int) ([]store.Conversation, error) {
	return p.Conversations.ConversationsByUsername(ctx, username, limit)
}
