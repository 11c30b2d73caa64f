package store

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"cloud.google.com/go/firestore"
	"google.golang.org/api/iterator"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/wapipe/wapipe/internal/tenant"
)

// TenantDeleteResult is what DeleteTenant did.
type TenantDeleteResult struct {
	// Numbers are the phone_number_ids the tenant left in the routing index, sorted: deleted
	// where it was the number's only tenant, else (a shared number) kept for the others.
	Numbers []string
	// KeysRevoked counts the API keys revoked (those revoked before are not counted).
	KeysRevoked int
	// Removed counts the documents deleted under the tenant: members who joined by invite,
	// invites, WABA grants and whatever else it kept there.
	Removed int
}

// DeleteTenant removes tenant id, in an order that a failure can resume by running it again:
// first its API keys are revoked (kept, as revoked, for the record), then what the tenant keeps
// under its document (members who joined by invite, invites, grants) is deleted, then, in one
// transaction, its numbers leave the routing index and its document goes, and with it the
// ciphertexts of its access token and action secret. Its conversations, stored messages and
// outbound records are left to expire (expire_at). ErrNotFound when there is no such tenant.
func (s *TenantFiles) DeleteTenant(ctx context.Context, id string) (TenantDeleteResult, error) {
	var res TenantDeleteResult
	if id == "" || strings.Contains(id, "/") {
		return res, ErrNotFound
	}
	ref := s.tenantDoc(id)
	if _, err := ref.Get(ctx); status.Code(err) == codes.NotFound {
		return res, ErrNotFound
	} else if err != nil {
		return res, fmt.Errorf("read tenant %s: %w", id, err)
	}
	var err error
	if res.KeysRevoked, err = s.revokeTenantKeys(ctx, id); err != nil {
		return res, err
	}
	if res.Removed, err = deleteUnder(ctx, ref); err != nil {
		return res, fmt.Errorf("delete what tenant %s keeps: %w", id, err)
	}
	err = s.fs.RunTransaction(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
		res.Numbers = nil
		if err := requireTx(tx, ref); err != nil {
			return err
		}
		// The apply path's plan for a tenant that lists no number: a number it had alone is
		// deleted, a shared one keeps its other tenants (routed as before), without this one.
		owned, err := s.ownedNumbers(tx, id)
		if err != nil {
			return err
		}
		plan, err := planNumberIndex(&tenant.Tenant{ID: id}, nil, owned)
		if err != nil {
			return err
		}
		for _, sn := range owned {
			res.Numbers = append(res.Numbers, sn.Ref.ID)
		}
		if err := s.writeNumberIndex(tx, plan, s.now()); err != nil {
			return err
		}
		return tx.Delete(ref)
	})
	if errors.Is(err, ErrNotFound) {
		return res, ErrNotFound
	}
	if err != nil {
		return res, fmt.Errorf("delete tenant %s: %w", id, err)
	}
	sort.Strings(res.Numbers)
	return res, nil
}

// revokeTenantKeys revokes every API key of tenant id not revoked yet and counts them.
func (s *TenantFiles) revokeTenantKeys(ctx context.Context, id string) (int, error) {
	keys, err := queryAll[APIKeyRecord](ctx, s.fs.Collection(APIKeysCollection).Where("tenant_id", "==", id), "api keys of "+id)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, k := range keys {
		if k.Revoked() {
			continue
		}
		_, err := s.fs.Collection(APIKeysCollection).Doc(k.ID).Update(ctx, []firestore.Update{{Path: "revoked_at", Value: s.now()}})
		if err != nil && status.Code(err) != codes.NotFound {
			return n, fmt.Errorf("revoke api key %s: %w", k.ID, err)
		}
		n++
	}
	return n, nil
}

// deleteUnder deletes every document in the subcollections of ref, theirs included, and
// counts them.
func deleteUnder(ctx context.Context, ref *firestore.DocumentRef) (int, error) {
	n := 0
	colls := ref.Collections(ctx)
	for {
		c, err := colls.Next()
		if errors.Is(err, iterator.Done) {
			return n, nil
		}
		if err != nil {
			return n, err
		}
		docs := c.DocumentRefs(ctx)
		for {
			d, err := docs.Next()
			if errors.Is(err, iterator.Done) {
				break
			}
			if err != nil {
				return n, err
			}
			m, err := deleteUnder(ctx, d)
			n += m
			if err != nil {
				return n, err
			}
			if _, err := d.Delete(ctx); err != nil {
				return n, err
			}
			n++
		}
	}
}
