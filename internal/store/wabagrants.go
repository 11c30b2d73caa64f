package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// WABAGrants, under a tenant, holds one document per WhatsApp Business Account that an
// Embedded Signup login granted beyond the accounts the tenant had: the link alone never
// attaches such an account's numbers; `wapipe tenants approve-waba` does, and marks it approved.
const WABAGrants = "waba_grants"

// The values of WABAGrant.Status.
const (
	GrantPending  = "pending"
	GrantApproved = "approved"
)

// WABAGrant is an account granted to a tenant by a login, awaiting or past operator approval.
type WABAGrant struct {
	WABAID     string    `firestore:"waba_id"`
	Status     string    `firestore:"status"`
	GrantedAt  time.Time `firestore:"granted_at"`
	ApprovedAt time.Time `firestore:"approved_at,omitempty"`
}

func (s *TenantAccounts) grantDoc(id, waba string) *firestore.DocumentRef {
	return s.tenantDoc(id).Collection(WABAGrants).Doc(waba)
}

func validGrantIDs(id, waba string) bool {
	return id != "" && waba != "" && !strings.Contains(id, "/") && !strings.Contains(waba, "/")
}

// RecordWABAGrants records wabas as granted to tenant id and awaiting approval; an account
// approved already stays approved, a pending one keeps its first granted_at.
func (s *TenantAccounts) RecordWABAGrants(ctx context.Context, id string, wabas []string) error {
	for _, waba := range wabas {
		if !validGrantIDs(id, waba) {
			return fmt.Errorf("record waba grant: bad id %q / %q", id, waba)
		}
		_, err := s.grantDoc(id, waba).Create(ctx, WABAGrant{WABAID: waba, Status: GrantPending, GrantedAt: s.now()})
		if err != nil && status.Code(err) != codes.AlreadyExists {
			return fmt.Errorf("record waba grant %s of %s: %w", waba, id, err)
		}
	}
	return nil
}

// GetWABAGrant returns tenant id's grant of waba; ErrNotFound when no login granted it.
func (s *TenantAccounts) GetWABAGrant(ctx context.Context, id, waba string) (WABAGrant, error) {
	if !validGrantIDs(id, waba) {
		return WABAGrant{}, ErrNotFound
	}
	return getDoc[WABAGrant](ctx, s.grantDoc(id, waba), "waba grant")
}

// PendingWABAGrants returns tenant id's grants awaiting approval, by account id.
func (s *TenantAccounts) PendingWABAGrants(ctx context.Context, id string) ([]WABAGrant, error) {
	if id == "" || strings.Contains(id, "/") {
		return nil, ErrNotFound
	}
	snaps, err := s.tenantDoc(id).Collection(WABAGrants).Where("status", "==", GrantPending).Documents(ctx).GetAll()
	if err != nil {
		return nil, fmt.Errorf("list waba grants of %s: %w", id, err)
	}
	out := make([]WABAGrant, 0, len(snaps))
	for _, sn := range snaps {
		var g WABAGrant
		if err := sn.DataTo(&g); err != nil {
			return nil, fmt.Errorf("decode waba grant %s: %w", sn.Ref.ID, err)
		}
		out = append(out, g)
	}
	return out, nil
}

// ApproveWABAGrant marks tenant id's grant of waba approved, creating it when no login granted
// it (the operator attached the account on their own word).
func (s *TenantAccounts) ApproveWABAGrant(ctx context.Context, id, waba string) error {
	if !validGrantIDs(id, waba) {
		return errors.New("approve waba grant: bad id")
	}
	now := s.now()
	_, err := s.grantDoc(id, waba).Set(ctx, map[string]any{"waba_id": waba, "status": GrantApproved, "approved_at": now}, firestore.MergeAll)
	if err != nil {
		return fmt.Errorf("approve waba grant %s of %s: %w", waba, id, err)
	}
	return nil
}
