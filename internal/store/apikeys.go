package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// APIKeysCollection holds the api service's keys by key id (package apikey): the hash of each
// key, never the key. Keys do not expire; they are revoked.
const APIKeysCollection = "api_keys"

// APIKeyRecord is one api_keys document.
type APIKeyRecord struct {
	ID       string `firestore:"id"`
	TenantID string `firestore:"tenant_id"`
	// Hash is the SHA-256 (hex) of the whole key (apikey.Hash).
	Hash      string    `firestore:"hash"`
	CreatedAt time.Time `firestore:"created_at"`
	// RevokedAt is set once the key is revoked; a revoked key authenticates nothing.
	RevokedAt time.Time `firestore:"revoked_at,omitempty"`
}

// Revoked reports whether the key was revoked.
func (r APIKeyRecord) Revoked() bool { return !r.RevokedAt.IsZero() }

// APIKeys keeps the api service's keys.
type APIKeys struct {
	fs  *firestore.Client
	now func() time.Time
}

// NewAPIKeys returns the key store. Only opts.Now is used.
func NewAPIKeys(db *DB, opts Options) *APIKeys {
	return &APIKeys{fs: db.fs, now: opts.withDefaults().Now}
}

func (s *APIKeys) doc(id string) *firestore.DocumentRef {
	return s.fs.Collection(APIKeysCollection).Doc(id)
}

// CreateAPIKey stores a new key of rec.TenantID; ErrNotFound when there is no such tenant.
func (s *APIKeys) CreateAPIKey(ctx context.Context, rec APIKeyRecord) error {
	if rec.ID == "" || rec.Hash == "" || rec.TenantID == "" {
		return errors.New("create api key: id, hash and tenant are required")
	}
	tref := s.fs.Collection(TenantsCollection).Doc(rec.TenantID)
	err := s.fs.RunTransaction(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
		if _, err := tx.Get(tref); status.Code(err) == codes.NotFound {
			return ErrNotFound
		} else if err != nil {
			return err
		}
		rec.CreatedAt = s.now()
		return tx.Create(s.doc(rec.ID), rec)
	})
	if errors.Is(err, ErrNotFound) {
		return ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("create api key of %s: %w", rec.TenantID, err)
	}
	return nil
}

// GetAPIKey reads the key id; ErrNotFound when there is none.
func (s *APIKeys) GetAPIKey(ctx context.Context, id string) (APIKeyRecord, error) {
	if id == "" {
		return APIKeyRecord{}, ErrNotFound
	}
	return getDoc[APIKeyRecord](ctx, s.doc(id), "api key")
}

// RevokeAPIKey revokes the key id (once: revoking again changes nothing); ErrNotFound when there
// is none.
func (s *APIKeys) RevokeAPIKey(ctx context.Context, id string) error {
	ref := s.doc(id)
	err := s.fs.RunTransaction(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
		snap, err := tx.Get(ref)
		if status.Code(err) == codes.NotFound {
			return ErrNotFound
		}
		if err != nil {
			return err
		}
		var rec APIKeyRecord
		if err := snap.DataTo(&rec); err != nil {
			return err
		}
		if rec.Revoked() {
			return nil
		}
		return tx.Update(ref, []firestore.Update{{Path: "revoked_at", Value: s.now()}})
	})
	if errors.Is(err, ErrNotFound) {
		return ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("revoke api key %s: %w", id, err)
	}
	return nil
}
