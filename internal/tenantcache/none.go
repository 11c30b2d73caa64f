package tenantcache

import (
	"context"

	"github.com/wapipe/wapipe/internal/store"
)

// None is the resolver of a worker with no tenant store: every number is the single-tenant
// default's, every tenant unknown (store.ErrNotFound).
type None struct{}

// GetByPhoneNumber answers store.ErrNotFound.
func (None) GetByPhoneNumber(context.Context, string) (store.TenantRecord, error) {
	return store.TenantRecord{}, store.ErrNotFound
}

// Tenant answers store.ErrNotFound.
func (None) Tenant(context.Context, string) (store.TenantRecord, error) {
	return store.TenantRecord{}, store.ErrNotFound
}

// TokenRefused does nothing: there is no token to forget.
func (None) TokenRefused(store.TenantRecord) {}
