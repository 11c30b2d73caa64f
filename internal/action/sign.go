package action

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"
)

// Header names of an action call.
const (
	HeaderSignature      = "X-Wapipe-Signature-256"
	HeaderIdempotencyKey = "Idempotency-Key"
)

// SignaturePrefix starts every X-Wapipe-Signature-256 value.
const SignaturePrefix = "sha256="

// SecretPrefix starts every secret NewSecret makes, so a leaked one is recognisable (secret
// scanners) and cannot be mistaken for another credential.
const SecretPrefix = "whsec_"

// secretBytes is the entropy of a secret: 256 bits, the strength of the HMAC-SHA256 it keys.
const secretBytes = 32

// NewSecret returns a new action secret: "whsec_" and 43 base64url characters (256 random
// bits). It is printed once by `wapipe tenants action-secret`; the HMAC key is the bytes of
// that string, prefix included, so a business can paste it into any HMAC library unchanged.
func NewSecret() (string, error) {
	var b [secretBytes]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("action secret: crypto/rand: %w", err)
	}
	return SecretPrefix + base64.RawURLEncoding.EncodeToString(b[:]), nil
}

// Sign returns the X-Wapipe-Signature-256 value for body: "sha256=" and the lowercase hex
// HMAC-SHA256 of body keyed with secret.
func Sign(secret, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write(body)
	var sum [sha256.Size]byte
	var out [len(SignaturePrefix) + 2*sha256.Size]byte
	copy(out[:], SignaturePrefix)
	hex.Encode(out[len(SignaturePrefix):], m.Sum(sum[:0]))
	return string(out[:])
}

// Verify reports whether header (an X-Wapipe-Signature-256 value) is the signature of body
// with secret. The comparison takes constant time; the hex may be in either case. An empty
// secret verifies nothing.
func Verify(secret, body []byte, header string) bool {
	if len(secret) == 0 {
		return false
	}
	h, ok := strings.CutPrefix(strings.TrimSpace(header), SignaturePrefix)
	if !ok || len(h) != 2*sha256.Size {
		return false
	}
	got, err := hex.DecodeString(h)
	if err != nil {
		return false
	}
	m := hmac.New(sha256.New, secret)
	m.Write(body)
	return hmac.Equal(m.Sum(nil), got)
}
