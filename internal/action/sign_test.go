package action_test

import (
	"bytes"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/wapipe/wapipe/internal/action"
)

func TestSignAndVerify(t *testing.T) {
	t.Parallel()
	secret := []byte("whsec_test-secret")
	body := []byte(`{"action_id":"a1"}`)
	good := action.Sign(secret, body)
	cases := []struct {
		name   string
		secret []byte
		body   []byte
		header string
		want   bool
	}{
		{"same secret and body", secret, body, good, true},
		{"upper-case hex", secret, body, "sha256=" + strings.ToUpper(strings.TrimPrefix(good, "sha256=")), true},
		{"surrounding spaces", secret, body, " " + good + " ", true},
		{"another secret", []byte("whsec_other"), body, good, false},
		{"secret without its prefix", []byte("test-secret"), body, good, false},
		{"body changed by one byte", secret, []byte(`{"action_id":"a2"}`), good, false},
		{"body re-encoded with a space", secret, []byte(`{"action_id": "a1"}`), good, false},
		{"empty secret", nil, body, action.Sign(nil, body), false},
		{"missing prefix", secret, body, strings.TrimPrefix(good, "sha256="), false},
		{"sha1 prefix", secret, body, "sha1=" + strings.TrimPrefix(good, "sha256="), false},
		{"truncated", secret, body, good[:len(good)-2], false},
		{"not hex", secret, body, "sha256=" + strings.Repeat("zz", 32), false},
		{"empty header", secret, body, "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := action.Verify(tc.secret, tc.body, tc.header); got != tc.want {
				t.Errorf("Verify = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestSignKnownVector pins the algorithm to a value computed elsewhere:
// printf '%s' 'hello' | openssl dgst -sha256 -hmac 'whsec_abc'.
func TestSignKnownVector(t *testing.T) {
	t.Parallel()
	const want = "sha256=45c5e8c01dafc236547ee117b4dd23df5951b545561a5788b5beb23cb0d121a4"
	got := action.Sign([]byte("whsec_abc"), []byte("hello"))
	if got != want {
		t.Errorf("Sign = %s, want %s", got, want)
	}
}

func TestNewSecret(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for range 50 {
		s, err := action.NewSecret()
		if err != nil {
			t.Fatal(err)
		}
		rest, ok := strings.CutPrefix(s, action.SecretPrefix)
		if !ok || len(rest) != 43 {
			t.Fatalf("secret %q: want %s and 43 characters", s, action.SecretPrefix)
		}
		raw, err := base64.RawURLEncoding.DecodeString(rest)
		if err != nil || len(raw) != 32 {
			t.Fatalf("secret %q: not 32 bytes of base64url: %v", s, err)
		}
		if seen[s] {
			t.Fatalf("secret %q repeated", s)
		}
		seen[s] = true
		// The key is the printed string: signing with it verifies, with the decoded bytes not.
		body := []byte(`{}`)
		if !action.Verify([]byte(s), body, action.Sign([]byte(s), body)) {
			t.Fatal("a new secret does not verify its own signature")
		}
		if action.Verify(raw, body, action.Sign([]byte(s), body)) {
			t.Fatal("the decoded secret verified: the key must be the printed string")
		}
	}
}

func BenchmarkSign1KB(b *testing.B) {
	secret := []byte("whsec_" + strings.Repeat("k", 43))
	body := bytes.Repeat([]byte("x"), 1024)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		action.Sign(secret, body)
	}
}

func BenchmarkVerify1KB(b *testing.B) {
	secret := []byte("whsec_" + strings.Repeat("k", 43))
	body := bytes.Repeat([]byte("x"), 1024)
	sig := action.Sign(secret, body)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if !action.Verify(secret, body, sig) {
			b.Fatal("does not verify")
		}
	}
}
