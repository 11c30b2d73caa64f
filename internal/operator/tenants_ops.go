package operator

import (
	"context"
	"errors"
	"fmt"

	"github.com/wapipe/wapipe/internal/contact"
	"github.com/wapipe/wapipe/internal/outbox"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/tenant"
)

// MemberRemover is what RemoveMember needs of store.Tenants.
type MemberRemover interface {
	Get(ctx context.Context, id string) (store.TenantRecord, error)
	RemoveRuntimeMember(ctx context.Context, id, waID string) (tenant.Member, error)
}

// ErrFileMember is RemoveMember's refusal of a member the tenant file lists: the file is the
// truth for them, and the next apply would bring them back.
var ErrFileMember = errors.New("a member from the tenant file: edit the tenant file (members) and apply it")

// RemoveMember removes who (a phone number, a business-scoped user id or a contact id), who
// joined tenant id by invite, from its members: from the next message the contact is a
// stranger again. A member the file lists is refused with ErrFileMember; one that is no member,
// or no tenant, is an error saying so.
func RemoveMember(ctx context.Context, st MemberRemover, id, who string) (tenant.Member, error) {
	rec, err := st.Get(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return tenant.Member{}, fmt.Errorf("no tenant %q", id)
	}
	if err != nil {
		return tenant.Member{}, err
	}
	person := outbox.RecipientIdentity("", who)
	if contact.IsPhone(who) {
		person = contact.Identity{WaID: who}
	}
	if m, ok := rec.Tenant.MemberOf(person); ok {
		return m, fmt.Errorf("%s of %s is %w", tenant.MemberLabel(m), id, ErrFileMember)
	}
	m, err := st.RemoveRuntimeMember(ctx, id, who)
	if errors.Is(err, store.ErrNotFound) {
		label := tenant.MemberLabel(tenant.Member{WaID: person.WaID, UserID: person.UserID + person.ParentUserID})
		return m, fmt.Errorf("tenant %s has no member %s who joined by invite", id, label)
	}
	return m, err
}

// TenantDeleter is what DeleteTenant needs of store.Tenants.
type TenantDeleter interface {
	DeleteTenant(ctx context.Context, id string) (store.TenantDeleteResult, error)
}

// DeleteTenant deletes tenant id (store.Tenants.DeleteTenant): its numbers freed, its secrets
// destroyed, its keys revoked, its conversations left to expire.
func DeleteTenant(ctx context.Context, st TenantDeleter, id string) (store.TenantDeleteResult, error) {
	res, err := st.DeleteTenant(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return res, fmt.Errorf("no tenant %q", id)
	}
	return res, err
}
