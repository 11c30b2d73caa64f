package actioncall

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Header names of an action call.
const (
	HeaderSignature      = "X-Wapipe-Signature-256"
	HeaderIdempotencyKey = "Idempotency-Key"
)

// SignatureTolerance is how old (or how far ahead of the business's clock) a signature's
// timestamp may be: a captured call replayed later than this is refused.
const SignatureTolerance = 5 * time.Minute

// SecretPrefix starts every secret NewSecret makes, so a leaked one is recognisable (secret
// scanners) and cannot be mistaken for another credential.
const SecretPrefix = "whsec_"

// secretBytes is the entropy of a secret: 256 bits, the strength of the HMAC-SHA256 it keys.
const secretBytes = 32

// The reasons Verify refuses a signature, for errors.Is.
var (
	// ErrSignatureInvalid: the header is missing or malformed, or no v1 matches.
	ErrSignatureInvalid = errors.New("action signature does not verify")
	// ErrSignatureStale: the signature matches but its t is more than SignatureTolerance away
	// from now (a replay).
	ErrSignatureStale = errors.New("action signature timestamp outside the tolerance")
)

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

// Sign returns the X-Wapipe-Signature-256 value of a call sent at t (Stripe's scheme):
// "t=<unix seconds>,v1=<lowercase hex HMAC-SHA256 of "<t>.<idempotencyKey>.<body>">", keyed
// with secret. The timestamp and the key are under the MAC, so a captured call can neither be
// replayed after the tolerance nor have its Idempotency-Key changed to run the action again.
func Sign(secret []byte, t time.Time, idempotencyKey string, body []byte) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	return "t=" + ts + ",v1=" + hex.EncodeToString(mac(secret, ts, idempotencyKey, body))
}

func mac(secret []byte, ts, idempotencyKey string, body []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(ts))
	m.Write([]byte{'.'})
	m.Write([]byte(idempotencyKey))
	m.Write([]byte{'.'})
	m.Write(body)
	return m.Sum(nil)
}

// Verify checks header (an X-Wapipe-Signature-256 value) against the raw body and the
// Idempotency-Key of a call received at now: one of its v1 values (several may be sent) must
// be the HMAC with secret, compared in constant time, and its t within SignatureTolerance of
// now. Unknown schemes (v0…) are ignored. It returns nil, or an error that errors.Is
// ErrSignatureInvalid or ErrSignatureStale. An empty secret verifies nothing.
func Verify(secret, body []byte, idempotencyKey, header string, now time.Time) error {
	if len(secret) == 0 {
		return fmt.Errorf("%w: no secret to verify with", ErrSignatureInvalid)
	}
	var ts string
	var sigs [][]byte
	for _, part := range strings.Split(header, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "t":
			if ts != "" {
				return fmt.Errorf("%w: more than one t", ErrSignatureInvalid)
			}
			ts = v
		case "v1":
			if b, err := hex.DecodeString(v); err == nil && len(b) == sha256.Size {
				sigs = append(sigs, b)
			}
		}
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	switch {
	case err != nil || sec < 0 || ts[0] == '+':
		return fmt.Errorf("%w: want t=<unix seconds>", ErrSignatureInvalid)
	case len(sigs) == 0:
		return fmt.Errorf("%w: want v1=<hex HMAC-SHA256>", ErrSignatureInvalid)
	}
	want := mac(secret, ts, idempotencyKey, body)
	ok := false
	for _, s := range sigs {
		ok = hmac.Equal(want, s) || ok
	}
	if !ok {
		return fmt.Errorf("%w: no v1 matches", ErrSignatureInvalid)
	}
	if age := now.Sub(time.Unix(sec, 0)); age > SignatureTolerance || age < -SignatureTolerance {
		return fmt.Errorf("%w: t is %s from now", ErrSignatureStale, age.Round(time.Second))
	}
	return nil
}
