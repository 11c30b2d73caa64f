package worker

import (
	"context"

	"github.com/wapipe/wapipe/internal/actionrun"
	"github.com/wapipe/wapipe/internal/contact"
	"github.com/wapipe/wapipe/internal/fanout"
	"github.com/wapipe/wapipe/internal/members"
	"github.com/wapipe/wapipe/internal/people"
	"github.com/wapipe/wapipe/internal/store"
)

// TenantResolver gives the tenant of a business number, and a tenant by id, as of a few seconds
// ago at most; TenantCache implements it. Both answer store.ErrNotFound for an unknown id or
// number. TokenRefused tells it that the Graph API refused the token of rec: from then on it
// answers the tenant as needs_reauth until the tenant has another token, so this instance makes
// no further call with the refused one while its cached record is still the old one.
type TenantResolver interface {
	GetByPhoneNumber(ctx context.Context, phoneNumberID string) (store.TenantRecord, error)
	Tenant(ctx context.Context, id string) (store.TenantRecord, error)
	TokenRefused(rec store.TenantRecord)
}

// TokenSource gives a tenant's access token and action signing secret in clear; TokenCache
// implements it.
type TokenSource interface {
	Token(ctx context.Context, rec store.TenantRecord) (string, error)
	actionrun.SecretSource
}

// ContactRouter decides the tenant of a message on a shared number by its contact, and
// redeems the invite codes sent there (the contact leaves the number's other tenants);
// tenantcache.ContactRouter implements it.
type ContactRouter interface {
	fanout.ContactRouter
	members.Mover
}

// People says who a message is from (their contact and conversation) and follows identity
// changes; *people.Directory implements it.
type People interface {
	Sender(ctx context.Context, tenantID, phoneNumberID string, id contact.Identity) (people.Sender, error)
	fanout.Identities
}
