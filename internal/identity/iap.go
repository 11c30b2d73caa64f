package identity

import (
	"context"
	"errors"
	"fmt"

	"github.com/coreos/go-oidc/v3/oidc"
)

// IAP's signed header and where its keys are published
// (https://cloud.google.com/iap/docs/signed-headers-howto).
const (
	IAPHeader  = "X-Goog-IAP-JWT-Assertion"
	IAPIssuer  = "https://cloud.google.com/iap"
	IAPKeysURL = "https://www.gstatic.com/iap/verify/public_key-jwk"
)

// IAPVerifier verifies the JWT Cloud IAP puts in X-Goog-IAP-JWT-Assertion: ES256 under one of
// IAP's keys, IAP's issuer, the backend's audience, not expired. The keys are fetched on first use
// and again when a token names a key not yet seen (IAP rotates them).
type IAPVerifier struct {
	verifier *oidc.IDTokenVerifier
}

// NewIAPVerifier returns a verifier for audience (IAP_AUDIENCE: /projects/NUMBER/global/
// backendServices/ID behind a load balancer, /projects/NUMBER/apps/PROJECT for App Engine, or
// the value IAP on Cloud Run shows) with the keys published at keysURL (IAPKeysURL; tests serve
// their own).
func NewIAPVerifier(audience, keysURL string) *IAPVerifier {
	// The key set outlives every request: its fetches must not end with one.
	keys := oidc.NewRemoteKeySet(context.Background(), keysURL)
	return &IAPVerifier{verifier: oidc.NewVerifier(IAPIssuer, keys, &oidc.Config{
		ClientID: audience, SupportedSigningAlgs: []string{oidc.ES256}})}
}

// Verify checks raw and returns the email of the user IAP let in.
func (v *IAPVerifier) Verify(ctx context.Context, raw string) (string, error) {
	tok, err := v.verifier.Verify(ctx, raw)
	if err != nil {
		return "", fmt.Errorf("verify iap assertion: %w", err)
	}
	var claims struct {
		Email string `json:"email"`
	}
	if err := tok.Claims(&claims); err != nil {
		return "", fmt.Errorf("iap assertion claims: %w", err)
	}
	if claims.Email == "" {
		return "", errors.New("iap assertion: no email")
	}
	return claims.Email, nil
}
