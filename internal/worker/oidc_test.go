package worker

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"testing"
	"time"
)

func strippedToken(t *testing.T, claims map[string]any) string {
	t.Helper()
	b, err := json.Marshal(claims)
	if err != nil {
		t.Fatal(err)
	}
	return base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"RS256","typ":"JWT"}`)) + "." +
		base64.RawURLEncoding.EncodeToString(b) + "."
}

// TestStrippedSignature: a Google token whose signature Cloud Run removed after its IAM check is
// judged on its claims; anywhere else a token without a signature is refused.
func TestStrippedSignature(t *testing.T) {
	t.Parallel()
	const aud = "https://wapipe-worker-123.us-central1.run.app"
	good := map[string]any{"iss": GoogleIssuer, "aud": aud, "exp": time.Now().Add(time.Hour).Unix(),
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
		{"google, good claims", GoogleIssuer, good, false},
		{"google, issuer without scheme", GoogleIssuer, with("iss", "accounts.google.com"), false},
		{"google, audience list", GoogleIssuer, with("aud", []string{"x", aud}), false},
		{"google, wrong audience", GoogleIssuer, with("aud", "https://elsewhere"), true},
		{"google, expired", GoogleIssuer, with("exp", time.Now().Add(-time.Minute).Unix()), true},
		{"google, other issuer", GoogleIssuer, with("iss", "https://evil.example"), true},
		{"google, unverified email", GoogleIssuer, with("email_verified", false), true},
		{"emulator issuer never skips the signature", "http://127.0.0.1:1", good, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			v := NewOIDCVerifier(tc.issuer, aud)
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
