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

// TenantAuth keeps what a tenant's calls are made with and whether they may be: the access
// token and its auth_status (needs_reauth parks the tenant's sends), the action signing secret,
// and the one use of each Embedded Signup connect link (connect_states).
type TenantAuth struct{ tenantBase }

// SetAccessToken stores the tenant's token (ciphertext from package secrets), sets its
// auth_status to ok and clears auth_last_error. It returns the tenant as now stored;
// ErrNotFound when there is no such tenant.
func (s *TenantAuth) SetAccessToken(ctx context.Context, id string, ciphertext []byte) (TenantRecord, error) {
	if len(ciphertext) == 0 {
		return TenantRecord{}, errors.New("set access token: empty ciphertext")
	}
	if id == "" {
		return TenantRecord{}, ErrNotFound
	}
	ref := s.tenantDoc(id)
	rec, err := runTx(ctx, s.fs, nil, func(ctx context.Context, tx *firestore.Transaction) (TenantRecord, error) {
		d, err := needTx[tenantDoc](tx, ref)
		if err != nil {
			return TenantRecord{}, err
		}
		now := s.now()
		d.AccessToken, d.TokenSetAt, d.AuthStatus, d.AuthLastError, d.UpdatedAt = ciphertext, now, AuthOK, "", now
		return d.record(), tx.Update(ref, []firestore.Update{
			{Path: "access_token", Value: ciphertext},
			{Path: "token_set_at", Value: now},
			{Path: "auth_status", Value: AuthOK},
			{Path: "auth_last_error", Value: ""},
			{Path: "updated_at", Value: now},
		})
	})
	if errors.Is(err, ErrNotFound) {
		return TenantRecord{}, ErrNotFound
	}
	if err != nil {
		return TenantRecord{}, fmt.Errorf("set access token of %s: %w", id, err)
	}
	return rec, nil
}

// SetActionSecret stores tenant id's action signing secret (ciphertext from package secrets,
// purpose action_secret), replacing the previous one; ErrNotFound when there is no such tenant.
func (s *TenantAuth) SetActionSecret(ctx context.Context, id string, ciphertext []byte) error {
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

// NeedsReauth lists the ids of the tenants whose auth_status is needs_reauth: the tenants whose
// sends are parked until an operator or the tenant's admin gives a new token.
func (s *TenantAuth) NeedsReauth(ctx context.Context) ([]string, error) {
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

// ConnectStates holds one document per Embedded Signup state used (by its nonce), so a connect
// link works once. Documents expire (expire_at) after the link would have anyway.
const ConnectStates = "connect_states"

// ErrStateUsed is returned by UseConnectState for a state used before.
var ErrStateUsed = errors.New("connect state already used")

// UseConnectState records the one use of the connect state nonce of tenantID; ErrStateUsed when
// it was used already.
func (s *TenantAuth) UseConnectState(ctx context.Context, nonce, tenantID string, expireAt time.Time) error {
	if nonce == "" {
		return errors.New("use connect state: empty nonce")
	}
	_, err := s.fs.Collection(ConnectStates).Doc(nonce).Create(ctx, map[string]any{
		"tenant_id": tenantID, "used_at": s.now(), ExpireAtField: expireAt,
	})
	if status.Code(err) == codes.AlreadyExists {
		return ErrStateUsed
	}
	if err != nil {
		return fmt.Errorf("use connect state: %w", err)
	}
	return nil
}

// ConnectStateUsed reports whether the connect state nonce was used (UseConnectState), so the
// connect page can say so before anyone presses its button.
func (s *TenantAuth) ConnectStateUsed(ctx context.Context, nonce string) (bool, error) {
	if nonce == "" || strings.Contains(nonce, "/") {
		return false, errors.New("connect state used: bad nonce")
	}
	_, err := s.fs.Collection(ConnectStates).Doc(nonce).Get(ctx)
	switch status.Code(err) {
	case codes.OK:
		return true, nil
	case codes.NotFound:
		return false, nil
	}
	return false, fmt.Errorf("read connect state: %w", err)
}
