package identity

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
)

// GoogleIssuer issues the OIDC tokens Cloud Tasks attaches in production, and the ID tokens
// Cloud Run's IAM check accepts.
const GoogleIssuer = "https://accounts.google.com"

// SignatureRemovedByGoogle is what Cloud Run puts in place of a token's signature when it has
// verified the token itself (a service that requires IAM) before handing the request on.
const SignatureRemovedByGoogle = "SIGNATURE_REMOVED_BY_GOOGLE"

// OIDCVerifier verifies Google ID tokens (the OIDC tokens Cloud Tasks attaches to the worker's
// tasks, the token an operator's request to the console carries through Cloud Run's IAM check):
// signed by the issuer's keys (Google's in production, the emulator's locally), for an accepted
// audience, and for a verified email.
// Discovery runs on first use, not at start-up, so the worker starts even while the issuer is
// briefly unreachable; a failed discovery is tried again on the next request.
type OIDCVerifier struct {
	issuer string
	// audience accepts the token's audience (one of its aud values).
	audience func(aud string) bool
	// platformVerified says the platform in front of the worker (Cloud Run with IAM required)
	// checked each token's signature before the request reached the container. Only then may a
	// token arrive without its signature; anywhere else an unsigned token proves nothing.
	platformVerified bool

	mu       sync.Mutex
	verifier *oidc.IDTokenVerifier
}

// NewOIDCVerifier returns a verifier for tokens from issuer with the given audience.
// platformVerified must be true only where the platform verifies the signature itself (Cloud Run
// requiring IAM: OIDC_VERIFIED_BY_PLATFORM); then a token whose signature the platform removed is
// judged on its claims.
func NewOIDCVerifier(issuer, audience string, platformVerified bool) *OIDCVerifier {
	return NewOIDCVerifierFunc(issuer, func(aud string) bool { return aud == audience }, platformVerified)
}

// NewOIDCVerifierFunc is NewOIDCVerifier for a service that answers to several audiences (its
// URLs, and the OAuth clients whose tokens Cloud Run accepts for it): accept says which.
func NewOIDCVerifierFunc(issuer string, accept func(aud string) bool, platformVerified bool) *OIDCVerifier {
	return &OIDCVerifier{issuer: issuer, audience: accept, platformVerified: platformVerified}
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
	// The audience is checked in Verify, against the accept function.
	v.verifier = p.Verifier(&oidc.Config{SkipClientIDCheck: true})
	return v.verifier, nil
}

// Verify checks raw and returns the service account email it was issued for.
func (v *OIDCVerifier) Verify(ctx context.Context, raw string) (string, error) {
	if signatureStripped(raw) {
		if !v.platformVerified || v.issuer != GoogleIssuer {
			return "", errors.New("oidc token without signature: only accepted behind a platform that verified it (OIDC_VERIFIED_BY_PLATFORM)")
		}
		return v.verifyStripped(raw, time.Now())
	}
	ver, err := v.get(ctx)
	if err != nil {
		return "", err
	}
	tok, err := ver.Verify(ctx, raw)
	if err != nil {
		return "", fmt.Errorf("verify oidc token: %w", err)
	}
	if !slices.ContainsFunc(tok.Audience, v.audience) {
		return "", errors.New("oidc token: wrong audience")
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

// signatureStripped reports whether a JWT arrives without its signature. Cloud Run passes the
// token on that way after its own IAM check has verified it (the service requires IAM): the
// third part is the literal SIGNATURE_REMOVED_BY_GOOGLE. The signature cannot be checked here
// again; the claims still are.
func signatureStripped(raw string) bool {
	parts := strings.Split(raw, ".")
	return len(parts) == 2 || (len(parts) == 3 && (parts[2] == "" || parts[2] == SignatureRemovedByGoogle))
}

// verifyStripped checks the claims of a token whose signature the platform verified and removed:
// Google's issuer, an accepted audience, not expired, a verified email.
func (v *OIDCVerifier) verifyStripped(raw string, now time.Time) (string, error) {
	parts := strings.Split(raw, ".")
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return "", fmt.Errorf("oidc token without signature: %w", err)
	}
	var c struct {
		Iss           string          `json:"iss"`
		Aud           json.RawMessage `json:"aud"`
		Exp           int64           `json:"exp"`
		Email         string          `json:"email"`
		EmailVerified bool            `json:"email_verified"`
	}
	if err := json.Unmarshal(payload, &c); err != nil {
		return "", fmt.Errorf("oidc token without signature: %w", err)
	}
	var auds []string
	if err := json.Unmarshal(c.Aud, &auds); err != nil {
		var one string
		if err := json.Unmarshal(c.Aud, &one); err != nil {
			return "", errors.New("oidc token without signature: no audience")
		}
		auds = []string{one}
	}
	switch {
	case c.Iss != GoogleIssuer && c.Iss != "accounts.google.com":
		return "", errors.New("oidc token without signature: not issued by Google")
	case !slices.ContainsFunc(auds, v.audience):
		return "", errors.New("oidc token without signature: wrong audience")
	case now.Unix() >= c.Exp:
		return "", errors.New("oidc token without signature: expired")
	case !c.EmailVerified:
		return "", errors.New("oidc token: email not verified")
	}
	return c.Email, nil
}
