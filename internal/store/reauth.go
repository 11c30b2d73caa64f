package store

import (
	"context"
	"fmt"
)

// NeedsReauth lists the ids of the tenants whose auth_status is needs_reauth: the tenants whose
// sends are parked until an operator or the tenant's admin gives a new token.
func (s *Tenants) NeedsReauth(ctx context.Context) ([]string, error) {
	snaps, err := s.fs.Collection(TenantsCollection).Where("auth_status", "==", AuthNeedsReauth).Documents(ctx).GetAll()
	if err != nil {
		return nil, fmt.Errorf("list tenants needing reauth: %w", err)
	}
	ids := make([]string, 0, len(snaps))
	for _, sn := range snaps {
		ids = append(ids, sn.Ref.ID)
	}
	return ids, nil
}
