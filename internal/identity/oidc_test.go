package identity_test

import (
	"context"
	"testing"
	"time"

	"github.com/wapipe/wapipe/internal/identity"
	"github.com/wapipe/wapipe/internal/identity/identitytest"
)

func strippedToken(t *testing.T, claims map[string]any) string {
	return identitytest.JWT(t, claims, "")
}

const testWorkerURL = "https://wapipe-worker-123456789012.us-central1.run.app"

// TestForgedSignatureRefused: a token with a signature that is not Google's is checked against
// Google's keys even where the platform verifies tokens, so it never passes on its claims alone.
func TestForgedSignatureRefused(t *testing.T) {
	t.Parallel()
	v := identity.NewOIDCVerifier("http://127.0.0.1:1", testWorkerURL, true)
	if _, err := v.Verify(context.Background(), identitytest.JWT(t, identitytest.Claims(identity.GoogleIssuer, testWorkerURL, "invoker@p.iam.gserviceaccount.com"), "Zm9yZ2Vk")); err == nil {
		t.Fatal("a forged signature was accepted")
	}
}

// TestStrippedSignature: a Google token whose signature Cloud Run removed after its IAM check is
// judged on its claims; anywhere else a token without a signature is refused.
func TestStrippedSignature(t *testing.T) {
	t.Parallel()
	const aud = "https://wapipe-worker-123.us-central1.run.app"
	good := map[string]any{"iss": identity.GoogleIssuer, "aud": aud, "exp": time.Now().Add(time.Hour).Unix(),
		"email": "invoker@p.iam.gserviceaccount.com", "email_verified": true}
	with := func(k string, v any) map[string]any {
		c := map[string]any{}
		for kk, vv := range good {
			c[kk] = vv
		}
		c[k] = v
		return c
	}
	tests := []struct {
		name    string
		issuer  string
		claims  map[string]any
		wantErr bool
	}{
		{"google, good claims", identity.GoogleIssuer, good, false},
		{"google, issuer without scheme", identity.GoogleIssuer, with("iss", "accounts.google.com"), false},
		{"google, audience list", identity.GoogleIssuer, with("aud", []string{"x", aud}), false},
		{"google, wrong audience", identity.GoogleIssuer, with("aud", "https://elsewhere"), true},
		{"google, expired", identity.GoogleIssuer, with("exp", time.Now().Add(-time.Minute).Unix()), true},
		{"google, other issuer", identity.GoogleIssuer, with("iss", "https://evil.example"), true},
		{"google, unverified email", identity.GoogleIssuer, with("email_verified", false), true},
		{"emulator issuer never skips the signature", "http://127.0.0.1:1", good, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			v := identity.NewOIDCVerifier(tc.issuer, aud, true)
			email, err := v.Verify(context.Background(), strippedToken(t, tc.claims))
			if (err != nil) != tc.wantErr {
				t.Fatalf("Verify = %q, %v; want error %v", email, err, tc.wantErr)
			}
			if err == nil && email != "invoker@p.iam.gserviceaccount.com" {
				t.Fatalf("email %q", email)
			}
		})
	}
}
