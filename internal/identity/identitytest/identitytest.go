// Package identitytest makes the tokens internal/identity verifies, for tests: a signing issuer
// served over HTTP (an OIDC issuer with discovery and keys, or IAP's key set), and unsigned
// tokens shaped as Cloud Run forwards them.
package identitytest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/wapipe/wapipe/internal/identity"
)

// Issuer signs tokens with a key of its own and serves what verifiers fetch: the OIDC discovery
// document at URL/.well-known/openid-configuration and the key set at KeysURL.
type Issuer struct {
	URL, KeysURL string
	signer       jose.Signer
}

// NewIssuer starts an issuer signing with alg (jose.RS256 as Google's ID tokens, jose.ES256 as
// IAP's assertions); it stops with the test.
func NewIssuer(t testing.TB, alg jose.SignatureAlgorithm) *Issuer {
	t.Helper()
	var key any
	var err error
	switch alg {
	case jose.ES256:
		key, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	default:
		key, err = rsa.GenerateKey(rand.Reader, 2048)
	}
	if err != nil {
		t.Fatalf("generate key: %v", err)
	}
	jwk := jose.JSONWebKey{Key: key, KeyID: "test-" + string(alg), Algorithm: string(alg), Use: "sig"}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: jwk}, (&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		t.Fatalf("signer: %v", err)
	}
	iss := &Issuer{signer: signer}
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, map[string]any{"issuer": iss.URL, "jwks_uri": iss.KeysURL,
			"id_token_signing_alg_values_supported": []string{string(alg)}})
	})
	mux.HandleFunc("/jwks", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, jose.JSONWebKeySet{Keys: []jose.JSONWebKey{jwk.Public()}})
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	iss.URL, iss.KeysURL = srv.URL, srv.URL+"/jwks"
	return iss
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// Sign returns a compact JWT of claims signed with the issuer's key.
func (i *Issuer) Sign(t testing.TB, claims map[string]any) string {
	t.Helper()
	b, err := json.Marshal(claims)
	if err != nil {
		t.Fatal(err)
	}
	jws, err := i.signer.Sign(b)
	if err != nil {
		t.Fatalf("sign: %v", err)
	}
	tok, err := jws.CompactSerialize()
	if err != nil {
		t.Fatalf("serialize: %v", err)
	}
	return tok
}

// JWT returns a token of claims whose third part is signature, verbatim.
func JWT(t testing.TB, claims map[string]any, signature string) string {
	t.Helper()
	b, err := json.Marshal(claims)
	if err != nil {
		t.Fatal(err)
	}
	return base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"RS256","kid":"f5f4bf46e52b31d9b6249f7309ad0338400680cd","typ":"JWT"}`)) + "." +
		base64.RawURLEncoding.EncodeToString(b) + "." + signature
}

// CloudRunToken is an ID token exactly as Cloud Run hands it to a container after its own IAM
// check: header and claims intact, the signature replaced by SIGNATURE_REMOVED_BY_GOOGLE.
func CloudRunToken(t testing.TB, claims map[string]any) string {
	return JWT(t, claims, identity.SignatureRemovedByGoogle)
}

// Claims returns the claims of a Google ID token from iss for aud and email, valid for an hour.
func Claims(iss, aud, email string) map[string]any {
	now := time.Now()
	return map[string]any{"iss": iss, "aud": aud, "azp": "112233445566778899000",
		"iat": now.Add(-time.Minute).Unix(), "exp": now.Add(time.Hour).Unix(),
		"email": email, "email_verified": true, "sub": "112233445566778899000"}
}

// With returns a copy of claims with k set to v.
func With(claims map[string]any, k string, v any) map[string]any {
	c := make(map[string]any, len(claims)+1)
	for kk, vv := range claims {
		c[kk] = vv
	}
	c[k] = v
	return c
}
