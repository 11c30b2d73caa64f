package operator

import (
	"context"
	"fmt"
	"time"

	"github.com/wapipe/wapipe/internal/actioncall"
	"github.com/wapipe/wapipe/internal/apikey"
	"github.com/wapipe/wapipe/internal/keyedid"
	"github.com/wapipe/wapipe/internal/secrets"
	"github.com/wapipe/wapipe/internal/signup"
	"github.com/wapipe/wapipe/internal/store"
)

// APIKeyStore stores API keys; *store.APIKeys implements it.
type APIKeyStore interface {
	CreateAPIKey(ctx context.Context, rec store.APIKeyRecord) error
}

// ActionSecretStore stores action signing secrets; *store.Tenants implements it.
type ActionSecretStore interface {
	SetActionSecret(ctx context.Context, id string, ciphertext []byte) error
}

// Releaser releases a tenant's parked sends and returns how many (outbox.ReleaseParked bound to the
// send records and the task queue).
type Releaser func(ctx context.Context, tenantID string) (int, error)

// Credentials are the operations of `wapipe tenants` that hand out or take in a tenant's
// secrets: api-key, action-secret, connect-link, and set-token with the release of the sends
// parked while the tenant needed a new token. Each field is needed only by the operations that
// use it.
type Credentials struct {
	Tenants *Tenants
	Keys    APIKeyStore
	Secrets ActionSecretStore
	Release Releaser
	// PublicBaseURL is the api service's URL (PUBLIC_BASE_URL), for connect links.
	PublicBaseURL string
	// Keyer tags connect links' states (LOG_HASH_KEY's key, as the api checks them); the dev
	// key's when nil.
	Keyer *keyedid.Keyer
	Now   func() time.Time
}

func (c *Credentials) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

// SetToken sets tenant id's token as Tenants.SetToken does, then releases its parked sends, each
// once. The token is stored even when the release fails; running set-token again finishes it.
func (c *Credentials) SetToken(ctx context.Context, id, token string, verify bool) (store.TenantRecord, int, error) {
	rec, err := c.Tenants.SetToken(ctx, id, token, verify)
	if err != nil || c.Release == nil {
		return rec, 0, err
	}
	n, err := c.Release(ctx, id)
	if err != nil {
		return rec, n, fmt.Errorf("token set, but the parked sends were not all released (run set-token again): %w", err)
	}
	return rec, n, nil
}

// APIKey creates an API key for tenant id and returns it: it is shown once, only its hash is
// stored.
func (c *Credentials) APIKey(ctx context.Context, id string) (string, error) {
	return c.APIKeyExpiring(ctx, id, 0)
}

// APIKeyExpiring is APIKey for a key that expires ttl from now (never when ttl is 0).
func (c *Credentials) APIKeyExpiring(ctx context.Context, id string, ttl time.Duration) (string, error) {
	if _, err := c.Tenants.Show(ctx, id); err != nil {
		return "", err
	}
	key, keyID, hash, err := apikey.New()
	if err != nil {
		return "", err
	}
	rec := store.APIKeyRecord{ID: keyID, TenantID: id, Hash: hash}
	if ttl > 0 {
		rec.ExpiresAt = c.now().Add(ttl).UTC().Truncate(time.Second)
	}
	if err := c.Keys.CreateAPIKey(ctx, rec); err != nil {
		return "", err
	}
	return key, nil
}

// ActionSecret creates (or rotates) tenant id's action signing secret and returns it, once; it is
// stored sealed (purpose action_secret).
func (c *Credentials) ActionSecret(ctx context.Context, id string) (string, error) {
	if _, err := c.Tenants.Show(ctx, id); err != nil {
		return "", err
	}
	secret, err := actioncall.NewSecret()
	if err != nil {
		return "", err
	}
	sealed, err := c.Tenants.Sealer.Encrypt(ctx, []byte(secret), secrets.AD(id, secrets.PurposeActionSecret))
	if err != nil {
		return "", fmt.Errorf("encrypt action secret: %w", err)
	}
	if err := c.Secrets.SetActionSecret(ctx, id, sealed); err != nil {
		return "", err
	}
	return secret, nil
}

// ConnectLink returns a signed link, valid an hour and usable once, for tenant id's admin to run
// Embedded Signup, and when it expires.
func (c *Credentials) ConnectLink(ctx context.Context, id string) (string, time.Time, error) {
	if _, err := c.Tenants.Show(ctx, id); err != nil {
		return "", time.Time{}, err
	}
	return signup.NewConnectLink(ctx, c.Tenants.Sealer, c.Keyer, c.PublicBaseURL, id, c.now())
}
