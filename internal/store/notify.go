package store

import (
	"context"
	"slices"
	"strings"

	"github.com/wapipe/wapipe/internal/tenant"
)

// SourceNotification marks an outbound record made by a notification after an action (package
// notify): sent from the record by process_send, with its Fallback outside the window.
const SourceNotification = "notification"

// RuntimeMembersWithRoles returns the members of tenant id who joined by invite with one of roles,
// with their contacts' identifiers as they are now, ordered by phone then BSUID. The file's members are on the tenant itself (tenant.Tenant.Members).
func (s *Memberships) RuntimeMembersWithRoles(ctx context.Context, id string, roles []tenant.Role) ([]tenant.Member, error) {
	if id == "" || len(roles) == 0 {
		return nil, nil
	}
	names := make([]string, len(roles))
	for i, r := range roles {
		names[i] = string(r)
	}
	// One filter and no order: no composite index to deploy; the few members are sorted here.
	q := s.tenantDoc(id).Collection(TenantMembers).Where("role", "in", names)
	docs, err := queryAll[memberDoc](ctx, q, "members of "+id)
	if err != nil {
		return nil, err
	}
	recs, err := s.memberRecords(ctx, id, docs)
	if err != nil {
		return nil, err
	}
	out := make([]tenant.Member, len(recs))
	for i, r := range recs {
		out[i] = r.Member
	}
	slices.SortFunc(out, func(a, b tenant.Member) int {
		return strings.Compare(a.WaID+"\x00"+a.UserID, b.WaID+"\x00"+b.UserID)
	})
	return out, nil
}
