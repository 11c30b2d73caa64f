package identity_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/wapipe/wapipe/internal/identity"
	"github.com/wapipe/wapipe/internal/identity/identitytest"
)

const (
	testIAPAudience = "/projects/123456789012/global/backendServices/4242"
	testConsoleURL  = "https://wapipe-console-123456789012.us-central1.run.app"
	alice           = "alice@example.com"
)

type verifyCase struct {
	name  string
	token string
	ok    bool
}

// checkVerify runs v on each token: an accepted one must give alice's email.
func checkVerify(t *testing.T, v identity.Verifier, tests []verifyCase) {
	t.Helper()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			email, err := v.Verify(t.Context(), tc.token)
			if tc.ok && (err != nil || email != alice) {
				t.Fatalf("Verify = %q, %v; want %s", email, err, alice)
			}
			if !tc.ok && err == nil {
				t.Fatalf("Verify accepted it as %q", email)
			}
		})
	}
}

// TestIAPAssertion: an assertion signed with IAP's key (ES256, from the key set the verifier was
// given) for the configured audience is accepted with its email; any other is refused.
func TestIAPAssertion(t *testing.T) {
	t.Parallel()
	iap := identitytest.NewIssuer(t, jose.ES256)
	other := identitytest.NewIssuer(t, jose.ES256)
	rsa := identitytest.NewIssuer(t, jose.RS256)
	v := identity.NewIAPVerifier(testIAPAudience, iap.KeysURL)
	good := identitytest.Claims(identity.IAPIssuer, testIAPAudience, alice)
	tests := []verifyCase{
		{"valid", iap.Sign(t, good), true},
		{"wrong audience", iap.Sign(t, identitytest.With(good, "aud", "/projects/1/global/backendServices/9")), false},
		{"wrong issuer", iap.Sign(t, identitytest.With(good, "iss", identity.GoogleIssuer)), false},
		{"expired", iap.Sign(t, identitytest.With(good, "exp", time.Now().Add(-time.Minute).Unix())), false},
		{"no email", iap.Sign(t, identitytest.With(good, "email", "")), false},
		{"another key", other.Sign(t, good), false},
		{"not ES256", rsa.Sign(t, good), false},
		{"unsigned", identitytest.JWT(t, good, ""), false},
		{"signature removed", identitytest.CloudRunToken(t, good), false},
	}
	checkVerify(t, v, tests)
}

// TestSignedIDToken: an ID token signed by the issuer's key (a test issuer standing in for
// Google's) for an accepted audience is accepted; another audience or a foreign key is not.
func TestSignedIDToken(t *testing.T) {
	t.Parallel()
	iss := identitytest.NewIssuer(t, jose.RS256)
	forger := identitytest.NewIssuer(t, jose.RS256)
	accept := func(aud string) bool { return aud == testConsoleURL || aud == "32555940559.apps.googleusercontent.com" }
	v := identity.NewOIDCVerifierFunc(iss.URL, accept, false)
	good := identitytest.Claims(iss.URL, testConsoleURL, alice)
	tests := []verifyCase{
		{"service URL", iss.Sign(t, good), true},
		{"another accepted audience", iss.Sign(t, identitytest.With(good, "aud", "32555940559.apps.googleusercontent.com")), true},
		{"wrong audience", iss.Sign(t, identitytest.With(good, "aud", "https://elsewhere.run.app")), false},
		{"expired", iss.Sign(t, identitytest.With(good, "exp", time.Now().Add(-time.Minute).Unix())), false},
		{"unverified email", iss.Sign(t, identitytest.With(good, "email_verified", false)), false},
		{"another key", forger.Sign(t, good), false},
		{"signature removed, no platform", identitytest.CloudRunToken(t, good), false},
	}
	checkVerify(t, v, tests)
}

// TestAuthenticate: a request's identity comes only from a verified credential; a header that
// merely names a user, or a credential that fails, never yields one. Loopback counts only where
// trusted (dev).
func TestAuthenticate(t *testing.T) {
	t.Parallel()
	iap := identitytest.NewIssuer(t, jose.ES256)
	iss := identitytest.NewIssuer(t, jose.RS256)
	a := &identity.Authenticator{
		IAP:     identity.NewIAPVerifier(testIAPAudience, iap.KeysURL),
		IDToken: identity.NewOIDCVerifier(iss.URL, testConsoleURL, false),
	}
	assertion := iap.Sign(t, identitytest.Claims(identity.IAPIssuer, testIAPAudience, alice))
	idToken := iss.Sign(t, identitytest.Claims(iss.URL, testConsoleURL, "bob@example.com"))
	forged := iss.Sign(t, identitytest.Claims(iss.URL, "https://elsewhere.run.app", "mallory@example.com"))
	tests := []struct {
		name      string
		remote    string
		headers   map[string]string
		loopback  bool
		wantEmail string
		wantVia   string
	}{
		{"iap", "203.0.113.9:4000", map[string]string{identity.IAPHeader: assertion}, false, alice, identity.ViaIAP},
		{"iap wins over the id token", "203.0.113.9:4000", map[string]string{identity.IAPHeader: assertion, "Authorization": "Bearer " + idToken}, false, alice, identity.ViaIAP},
		{"id token", "203.0.113.9:4000", map[string]string{"Authorization": "Bearer " + idToken}, false, "bob@example.com", identity.ViaIDToken},
		{"x-serverless-authorization is the one Cloud Run checked", "203.0.113.9:4000",
			map[string]string{"X-Serverless-Authorization": "Bearer " + idToken, "Authorization": "Bearer " + forged}, false, "bob@example.com", identity.ViaIDToken},
		{"forged user header alone", "203.0.113.9:4000", map[string]string{"X-Goog-Authenticated-User-Email": "accounts.google.com:ceo@example.com"}, false, "", ""},
		{"bad iap assertion does not fall back", "127.0.0.1:4000", map[string]string{identity.IAPHeader: "x.y.z", "Authorization": "Bearer " + idToken}, true, "", ""},
		{"bad id token does not fall back to loopback", "127.0.0.1:4000", map[string]string{"Authorization": "Bearer " + forged}, true, "", ""},
		{"loopback in dev", "127.0.0.1:4000", nil, true, "", identity.ViaLoopback},
		{"ipv6 loopback in dev", "[::1]:4000", nil, true, "", identity.ViaLoopback},
		{"another address in dev", "192.0.2.7:4000", nil, true, "", ""},
		{"loopback outside dev", "127.0.0.1:4000", nil, false, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			r.RemoteAddr = tc.remote
			for k, v := range tc.headers {
				r.Header.Set(k, v)
			}
			auth := *a
			auth.TrustLoopback = tc.loopback
			id, err := auth.Authenticate(r)
			if tc.wantVia == "" {
				if err == nil {
					t.Fatalf("Authenticate = %+v, want a refusal", id)
				}
				return
			}
			if err != nil || id.Email != tc.wantEmail || id.Via != tc.wantVia {
				t.Fatalf("Authenticate = %+v, %v; want %s via %s", id, err, tc.wantEmail, tc.wantVia)
			}
		})
	}
	// Nothing at all: the sentinel error.
	if _, err := (&identity.Authenticator{}).Authenticate(httptest.NewRequest(http.MethodGet, "/", nil)); !errors.Is(err, identity.ErrUnauthenticated) {
		t.Errorf("no credential: %v, want ErrUnauthenticated", err)
	}
}
