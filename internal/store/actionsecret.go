package store

import (
	"context"
	"errors"
	"fmt"

	"cloud.google.com/go/firestore"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// SetActionSecret stores the tenant's action signing secret (ciphertext from package secrets),
// replacing any earlier one: the business must then verify with the new secret. ErrNotFound when
// there is no such tenant. One write.
func (s *Tenants) SetActionSecret(ctx context.Context, id string, ciphertext []byte) error {
	if len(ciphertext) == 0 {
		return errors.New("set action secret: empty ciphertext")
	}
	if id == "" {
		return ErrNotFound
	}
	now := s.now()
	_, err := s.tenantDoc(id).Update(ctx, []firestore.Update{
		{Path: "action_secret", Value: ciphertext},
		{Path: "action_secret_set_at", Value: now},
		{Path: "updated_at", Value: now},
	})
	if status.Code(err) == codes.NotFound {
		return ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("set action secret of %s: %w", id, err)
	}
	return nil
}
