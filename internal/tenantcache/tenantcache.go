package tenantcache

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/wapipe/wapipe/internal/secrets"
	"github.com/wapipe/wapipe/internal/store"
)

// Cache lifetimes. A tenant is read again within TenantCacheTTL of an apply; a decrypted token
// lives TokenCacheTTL, and a new token (another token_set_at) is used at once.
const (
	TenantCacheTTL = 5 * time.Second
	TokenCacheTTL  = 5 * time.Minute
)

// TenantReader reads tenants; *store.Tenants implements it. Both answer store.ErrNotFound for
// an unknown id or number.
type TenantReader interface {
	Get(ctx context.Context, id string) (store.TenantRecord, error)
	GetByPhoneNumber(ctx context.Context, phoneNumberID string) (store.TenantRecord, error)
}

// Decrypter opens sealed secrets; *secrets.Keeper implements it.
type Decrypter interface {
	Decrypt(ctx context.Context, ciphertext, ad []byte) ([]byte, error)
}

// TenantCache is the per-instance tenant resolver of the worker: every routed message asks it, so a hit must
// cost no Firestore read. Entries live ttl, unknown numbers included (a flood to a number no
// tenant owns must not become a flood of reads), and concurrent misses of one key share one read.
type TenantCache struct {
	byNumber *cache[store.TenantRecord]
	byID     *cache[store.TenantRecord]

	mu sync.Mutex
	// refused holds, per tenant id, the token_set_at of a token the Graph API refused here.
	refused map[string]time.Time
}

// NewTenantCache returns a cache over r whose entries live ttl (TenantCacheTTL when zero).
func NewTenantCache(r TenantReader, ttl time.Duration) *TenantCache {
	if ttl <= 0 {
		ttl = TenantCacheTTL
	}
	notFound := func(err error) bool { return errors.Is(err, store.ErrNotFound) }
	return &TenantCache{
		byNumber: newCache(ttl, r.GetByPhoneNumber, notFound),
		byID:     newCache(ttl, r.Get, notFound),
		refused:  map[string]time.Time{},
	}
}

// GetByPhoneNumber returns the tenant that owns phoneNumberID.
func (c *TenantCache) GetByPhoneNumber(ctx context.Context, phoneNumberID string) (store.TenantRecord, error) {
	rec, err := c.byNumber.get(ctx, phoneNumberID)
	return c.withRefusals(rec), err
}

// Tenant returns the tenant id.
func (c *TenantCache) Tenant(ctx context.Context, id string) (store.TenantRecord, error) {
	rec, err := c.byID.get(ctx, id)
	return c.withRefusals(rec), err
}

// TokenRefused records that the Graph API refused rec's token. The tenant is marked
// needs_reauth in Firestore by the caller; until this instance's cached record catches up (up to
// the cache's ttl), the refusal is what stops the next reply, mark-as-read or send from calling
// the Graph API with the refused token.
func (c *TenantCache) TokenRefused(rec store.TenantRecord) {
	if rec.Tenant == nil {
		return
	}
	c.mu.Lock()
	c.refused[rec.Tenant.ID] = rec.TokenSetAt
	c.mu.Unlock()
}

// withRefusals is rec as this instance knows it: needs_reauth when its token was refused here. A
// record with another token (set again since) clears the refusal.
func (c *TenantCache) withRefusals(rec store.TenantRecord) store.TenantRecord {
	if rec.Tenant == nil {
		return rec
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	at, ok := c.refused[rec.Tenant.ID]
	switch {
	case !ok:
	case !at.Equal(rec.TokenSetAt):
		delete(c.refused, rec.Tenant.ID)
	case rec.AuthStatus != store.AuthNeedsReauth:
		rec.AuthStatus = store.AuthNeedsReauth
	}
	return rec
}

// ErrNoToken: the tenant has no access token, so none of its replies can be sent.
var ErrNoToken = errors.New("no access token")

// TokenCache keeps decrypted access tokens per instance, so a send costs no KMS call. An entry
// is keyed by the tenant and its token_set_at: a token set again is a new key, used at once. The
// plaintext never leaves the cache but to the Graph API call.
type TokenCache struct {
	keeper  Decrypter
	entries *cache[string]
}

// NewTokenCache returns a cache of the tokens keeper opens, each kept ttl (TokenCacheTTL when
// zero).
func NewTokenCache(keeper Decrypter, ttl time.Duration) *TokenCache {
	if ttl <= 0 {
		ttl = TokenCacheTTL
	}
	return &TokenCache{keeper: keeper, entries: newCache[string](ttl, nil, nil)}
}

// Token returns the tenant's access token in clear. A tenant without one is ErrNoToken.
func (c *TokenCache) Token(ctx context.Context, rec store.TenantRecord) (string, error) {
	if len(rec.AccessToken) == 0 {
		return "", ErrNoToken
	}
	id := rec.Tenant.ID
	key := id + "\x00" + rec.TokenSetAt.UTC().Format(time.RFC3339Nano)
	return c.open(ctx, key, rec.AccessToken, id, secrets.PurposeAccessToken, "access token")
}

// ErrNoActionSecret: the tenant has no action signing secret (`wapipe tenants action-secret`),
// so its actions cannot be called.
var ErrNoActionSecret = errors.New("no action secret: create one with `wapipe tenants action-secret`")

// ActionSecret returns the tenant's action signing secret, as printed by action-secret; cached
// like the token, keyed by action_secret_set_at. A tenant without one is ErrNoActionSecret.
func (c *TokenCache) ActionSecret(ctx context.Context, rec store.TenantRecord) ([]byte, error) {
	if len(rec.ActionSecret) == 0 {
		return nil, ErrNoActionSecret
	}
	id := rec.Tenant.ID
	key := "action\x00" + id + "\x00" + rec.ActionSecretSetAt.UTC().Format(time.RFC3339Nano)
	s, err := c.open(ctx, key, rec.ActionSecret, id, secrets.PurposeActionSecret, "action secret")
	return []byte(s), err
}

// open returns the plaintext of tenant id's sealed secret for purpose (what names it in
// errors), cached under key.
func (c *TokenCache) open(ctx context.Context, key string, ciphertext []byte, id, purpose, what string) (string, error) {
	return c.entries.getWith(ctx, key, func(ctx context.Context, _ string) (string, error) {
		if c.keeper == nil {
			return "", fmt.Errorf("decrypt %s: no secrets keeper configured", what)
		}
		b, err := c.keeper.Decrypt(ctx, ciphertext, secrets.AD(id, purpose))
		if err != nil {
			return "", fmt.Errorf("decrypt %s of tenant %s: %w", what, id, err)
		}
		return string(b), nil
	})
}
