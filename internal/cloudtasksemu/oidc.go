package cloudtasksemu

import (
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/big"
	"net/http"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// Paths the emulator's HTTP side answers.
const (
	discoveryPath = "/.well-known/openid-configuration"
	jwksPath      = "/.well-known/jwks.json"
)

// Google's OIDC tokens live an hour; the emulator reuses one while more than tokenReuseMargin of
// it is left, as Google's own token caches do, so an RSA signature is not paid on every dispatch.
const (
	tokenLifetime    = time.Hour
	tokenReuseMargin = 50 * time.Minute
)

// issuer signs the OIDC tokens attached to tasks and publishes the keys that verify them.
type issuer struct {
	url    string
	kid    string
	key    *rsa.PrivateKey
	signer jose.Signer

	mu    sync.Mutex
	cache map[[2]string]cachedToken
}

type cachedToken struct {
	token string
	exp   time.Time
}

func newIssuer(url string) (*issuer, error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, fmt.Errorf("rsa.GenerateKey: %w", err)
	}
	// The key id is derived from the key, so a token always names the key that signed it.
	sum := sha256.Sum256(key.PublicKey.N.Bytes())
	kid := hex.EncodeToString(sum[:8])
	signer, err := jose.NewSigner(
		jose.SigningKey{Algorithm: jose.RS256, Key: jose.JSONWebKey{Key: key, KeyID: kid}},
		(&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		return nil, fmt.Errorf("jose.NewSigner: %w", err)
	}
	return &issuer{url: url, kid: kid, key: key, signer: signer, cache: make(map[[2]string]cachedToken)}, nil
}

// token returns a signed ID token for a service account and an audience, with the claims Google
// puts in a service account's ID token.
func (i *issuer) token(email, audience string) (string, error) {
	now := time.Now()
	k := [2]string{email, audience}
	i.mu.Lock()
	if c, ok := i.cache[k]; ok && c.exp.Sub(now) > tokenReuseMargin {
		i.mu.Unlock()
		return c.token, nil
	}
	i.mu.Unlock()

	exp := now.Add(tokenLifetime)
	sub := subjectID(email)
	claims, err := json.Marshal(map[string]any{
		"iss":            i.url,
		"aud":            audience,
		"sub":            sub,
		"azp":            sub,
		"email":          email,
		"email_verified": true,
		"iat":            now.Unix(),
		"exp":            exp.Unix(),
	})
	if err != nil {
		return "", fmt.Errorf("marshal claims: %w", err)
	}
	jws, err := i.signer.Sign(claims)
	if err != nil {
		return "", fmt.Errorf("sign token: %w", err)
	}
	tok, err := jws.CompactSerialize()
	if err != nil {
		return "", fmt.Errorf("serialize token: %w", err)
	}
	i.mu.Lock()
	if len(i.cache) > 1024 {
		clear(i.cache)
	}
	i.cache[k] = cachedToken{token: tok, exp: exp}
	i.mu.Unlock()
	return tok, nil
}

// subjectID gives a service account a stable numeric subject, shaped like the 21-digit unique ids
// Google uses as sub.
func subjectID(email string) string {
	sum := sha256.Sum256([]byte(email))
	n := new(big.Int).SetBytes(sum[:9])
	s := n.String()
	for len(s) < 21 {
		s = "1" + s
	}
	return s[:21]
}

// handler serves the issuer's discovery document and JWKS.
func (i *issuer) handler() http.Handler {
	discovery, _ := json.Marshal(map[string]any{
		"issuer":                                i.url,
		"jwks_uri":                              i.url + jwksPath,
		"response_types_supported":              []string{"id_token"},
		"subject_types_supported":               []string{"public"},
		"id_token_signing_alg_values_supported": []string{"RS256"},
		"claims_supported":                      []string{"aud", "azp", "email", "email_verified", "exp", "iat", "iss", "sub"},
	})
	jwks, _ := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{
		Key: &i.key.PublicKey, KeyID: i.kid, Algorithm: string(jose.RS256), Use: "sig",
	}}})
	serve := func(body []byte) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodGet && r.Method != http.MethodHead {
				w.Header().Set("Allow", "GET, HEAD")
				http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Cache-Control", "public, max-age=3600")
			http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(body))
		}
	}
	mux := http.NewServeMux()
	mux.Handle(discoveryPath, serve(discovery))
	mux.Handle(jwksPath, serve(jwks))
	return mux
}
