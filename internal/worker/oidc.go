package worker

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/coreos/go-oidc/v3/oidc"
)

// GoogleIssuer issues the OIDC tokens Cloud Tasks attaches in production.
const GoogleIssuer = "https://accounts.google.com"

// OIDCVerifier verifies the OIDC tokens Cloud Tasks attaches: signed by the issuer's keys (Google's
// in production, the emulator's locally), for the worker's audience, and for a verified email.
// Discovery runs on first use, not at start-up, so the worker starts even while the issuer is
// briefly unreachable; a failed discovery is tried again on the next request.
type OIDCVerifier struct {
	issuer, audience string

	mu       sync.Mutex
	verifier *oidc.IDTokenVerifier
}

// NewOIDCVerifier returns a verifier for tokens from issuer with the given audience.
func NewOIDCVerifier(issuer, audience string) *OIDCVerifier {
	return &OIDCVerifier{issuer: issuer, audience: audience}
}

func (v *OIDCVerifier) get(ctx context.Context) (*oidc.IDTokenVerifier, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.verifier != nil {
		return v.verifier, nil
	}
	// The provider's key set outlives this request, so it must not inherit its cancellation.
	p, err := oidc.NewProvider(context.WithoutCancel(ctx), v.issuer)
	if err != nil {
		return nil, fmt.Errorf("oidc discovery at %s: %w", v.issuer, err)
	}
	v.verifier = p.Verifier(&oidc.Config{ClientID: v.audience})
	return v.verifier, nil
}

// Verify checks raw and returns the service account email it was issued for.
func (v *OIDCVerifier) Verify(ctx context.Context, raw string) (string, error) {
	ver, err := v.get(ctx)
	if err != nil {
		return "", err
	}
	tok, err := ver.Verify(ctx, raw)
	if err != nil {
		return "", fmt.Errorf("verify oidc token: %w", err)
	}
	var claims struct {
		Email         string `json:"email"`
		EmailVerified bool   `json:"email_verified"`
	}
	if err := tok.Claims(&claims); err != nil {
		return "", fmt.Errorf("oidc claims: %w", err)
	}
	if !claims.EmailVerified {
		return "", errors.New("oidc token: email not verified")
	}
	return claims.Email, nil
}
