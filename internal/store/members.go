package store

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/wapipe/wapipe/internal/tenant"
)

// RuntimeMemberRecord is a member who joined a tenant by invite, and when.
type RuntimeMemberRecord struct {
	Member   tenant.Member
	JoinedAt time.Time
}

// member is the tenant.Member of a members document.
func (d memberDoc) member() tenant.Member {
	return tenant.Member{WaID: d.WaID, Role: d.Role, Name: d.Name, Language: d.Language}
}

// RuntimeMembers lists the members of tenant id who joined by invite, oldest first (the file's
// members are on the tenant itself).
func (s *Tenants) RuntimeMembers(ctx context.Context, id string) ([]RuntimeMemberRecord, error) {
	if id == "" {
		return nil, nil
	}
	docs, err := queryAll[memberDoc](ctx, s.tenantDoc(id).Collection(TenantMembers).Query, "members of "+id)
	if err != nil {
		return nil, err
	}
	out := make([]RuntimeMemberRecord, 0, len(docs))
	for _, d := range docs {
		out = append(out, RuntimeMemberRecord{Member: d.member(), JoinedAt: d.JoinedAt})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].JoinedAt.Before(out[j].JoinedAt) })
	return out, nil
}

// RemoveRuntimeMember removes waID from the members of tenant id who joined by invite and
// returns the member removed: from the next message the contact is a stranger again (with
// audience members, the onboarding prompt). ErrNotFound when no such member joined by invite.
func (s *Tenants) RemoveRuntimeMember(ctx context.Context, id, waID string) (tenant.Member, error) {
	if id == "" || waID == "" || strings.Contains(waID, "/") {
		return tenant.Member{}, ErrNotFound
	}
	ref := s.tenantDoc(id).Collection(TenantMembers).Doc(waID)
	d, err := getDoc[memberDoc](ctx, ref, "member")
	if err != nil {
		return tenant.Member{}, err
	}
	// Exists: a removal that lost to another one is not found, like a second removal.
	if _, err := ref.Delete(ctx, firestore.Exists); status.Code(err) == codes.NotFound {
		return tenant.Member{}, ErrNotFound
	} else if err != nil {
		return tenant.Member{}, fmt.Errorf("remove member of %s: %w", id, err)
	}
	return d.member(), nil
}
