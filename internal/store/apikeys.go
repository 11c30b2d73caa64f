package store

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"cloud.google.com/go/firestore"
)

// APIKeysCollection holds the api service's keys by key id (package apikey): the hash of each
// key, never the key. A key is revoked by an operator, or expires at its expires_at when it has
// one; the document stays, so the key's id and history remain listable.
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
	// ExpiresAt, when set, is when the key stops authenticating.
	ExpiresAt time.Time `firestore:"expires_at,omitempty"`
	// LastUsedAt is when the key last authenticated a request, to LastUsedResolution.
	LastUsedAt time.Time `firestore:"last_used_at,omitempty"`
}

// Revoked reports whether the key was revoked.
func (r APIKeyRecord) Revoked() bool { return !r.RevokedAt.IsZero() }

// Expired reports whether the key has expired at now.
func (r APIKeyRecord) Expired(now time.Time) bool {
	return !r.ExpiresAt.IsZero() && !now.Before(r.ExpiresAt)
}

// Usable reports whether the key may authenticate a request at now: neither revoked nor expired.
func (r APIKeyRecord) Usable(now time.Time) bool { return !r.Revoked() && !r.Expired(now) }

// LastUsedResolution is how stale a key's last_used_at may be: it is written at most once per
// key in this time by each process, so a busy key never makes its document a hot one (Firestore
// sustains about one write a second per document).
const LastUsedResolution = time.Minute

// APIKeys keeps the api service's keys.
type APIKeys struct {
	fs  *firestore.Client
	now func() time.Time

	mu sync.Mutex
	// touched is when this process last wrote each key's last_used_at: concurrent requests that
	// all read a stale last_used_at write it once.
	touched map[string]time.Time
}

// NewAPIKeys returns the key store. Only opts.Now is used.
func NewAPIKeys(db *DB, opts Options) *APIKeys {
	return &APIKeys{fs: db.fs, now: opts.withDefaults().Now, touched: map[string]time.Time{}}
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
		if err := requireTx(tx, tref); err != nil {
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
		rec, err := needTx[APIKeyRecord](tx, ref)
		if err != nil {
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

// ListAPIKeys returns tenantID's keys (revoked and expired ones included), oldest first.
func (s *APIKeys) ListAPIKeys(ctx context.Context, tenantID string) ([]APIKeyRecord, error) {
	recs, err := queryAll[APIKeyRecord](ctx, s.fs.Collection(APIKeysCollection).Where("tenant_id", "==", tenantID), "api keys of "+tenantID)
	if err != nil {
		return nil, err
	}
	sort.Slice(recs, func(i, j int) bool {
		if !recs[i].CreatedAt.Equal(recs[j].CreatedAt) {
			return recs[i].CreatedAt.Before(recs[j].CreatedAt)
		}
		return recs[i].ID < recs[j].ID
	})
	return recs, nil
}

// TouchAPIKey records that rec (as just read) authenticated a request: last_used_at is written
// only when the stored one is at least LastUsedResolution old and this process has not written
// it in that time, so a key used a thousand times a second costs about one write a minute per
// api instance.
func (s *APIKeys) TouchAPIKey(ctx context.Context, rec APIKeyRecord) error {
	now := s.now()
	if now.Sub(rec.LastUsedAt) < LastUsedResolution {
		return nil
	}
	s.mu.Lock()
	if now.Sub(s.touched[rec.ID]) < LastUsedResolution {
		s.mu.Unlock()
		return nil
	}
	s.touched[rec.ID] = now
	s.mu.Unlock()
	if _, err := s.doc(rec.ID).Update(ctx, []firestore.Update{{Path: "last_used_at", Value: now}}); err != nil {
		return fmt.Errorf("record the use of api key %s: %w", rec.ID, err)
	}
	return nil
}
