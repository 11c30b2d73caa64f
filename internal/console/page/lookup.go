package page

import (
	"context"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/wapipe/wapipe/internal/contact"
	"github.com/wapipe/wapipe/internal/store"
)

// ContactFinder finds a tenant's contacts and their conversations by any identifier (phone,
// BSUID, parent BSUID), never by a name or a username; StoreContacts implements it over the
// store.
type ContactFinder interface {
	// ConversationOf is the id of the conversation of the person id names with a tenant's
	// number; ok is false when the tenant does not know them.
	ConversationOf(ctx context.Context, tenantID, phoneNumberID string, id contact.Identity) (string, bool, error)
	// Find is the tenant's contact of the person id names; ok is false when none is known.
	Find(ctx context.Context, tenantID string, id contact.Identity) (store.Contact, bool, error)
	// Get reads the tenant's contact id (ct_…); store.ErrNotFound when there is none.
	Get(ctx context.Context, tenantID, id string) (store.Contact, error)
}

// StoreContacts is the ContactFinder of one database: the contacts, and the conversations found
// through them.
type StoreContacts struct {
	*store.Contacts
	Conversations *store.ConversationStore
}

// ConversationOf finds the conversation (store.ConversationStore.ConversationOf).
func (s StoreContacts) ConversationOf(ctx context.Context, tenantID, phoneNumberID string, id contact.Identity) (string, bool, error) {
	return s.Conversations.ConversationOf(ctx, tenantID, phoneNumberID, id)
}

// ConversationOf is the conversation of the person id names on a tenant's number, "" when the
// tenant does not know them (or contacts is nil, or cannot be read: a page shows less, it does
// not fail).
func ConversationOf(ctx context.Context, contacts ContactFinder, tenantID, phoneNumberID string, id contact.Identity) string {
	if contacts == nil || id.IsZero() || tenantID == "" {
		return ""
	}
	conv, ok, err := contacts.ConversationOf(ctx, tenantID, phoneNumberID, id)
	if err != nil {
		Logger(ctx).Warn("find a contact's conversation", "event", "console_contact_failed", "tenant_id", tenantID, "error", err)
		return ""
	}
	if !ok {
		return ""
	}
	return conv
}

// TenantGetter reads a tenant; *store.Tenants implements it.
type TenantGetter interface {
	Get(ctx context.Context, id string) (store.TenantRecord, error)
}

// WithTenant reads the tenant the path names ({tenant}) and serves h with it; a tenant that
// cannot be read is the page's answer (404 when there is none).
func (k *Kit) WithTenant(tenants TenantGetter, h func(w http.ResponseWriter, r *http.Request, rec store.TenantRecord)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec, err := tenants.Get(r.Context(), chi.URLParam(r, "tenant"))
		if err != nil {
			k.Fail(w, r, "Read the tenant", err)
			return
		}
		h(w, r, rec)
	})
}
