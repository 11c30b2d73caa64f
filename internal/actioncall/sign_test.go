package actioncall_test

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/wapipe/wapipe/internal/actioncall"
)

// TestSignMatchesTheContract pins the header byte for byte against HMACs computed elsewhere:
// printf '%s' '<t>.<key>.<body>' | openssl dgst -sha256 -hmac '<secret>'.
func TestSignMatchesTheContract(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		t      int64
		secret string
		key    string
		body   string
		want   string
	}{
		{"short body", 1767225600, "whsec_abc", "act_1", "hello",
			"t=1767225600,v1=60212b5ee69d878e41c7bb165f0c1c784e4ba8adea7dca2e3e2a1deb598f547d"},
		{"JSON body", 1767225600, "whsec_test-secret", "act_01HZX", `{"action_id":"act_01HZX"}`,
			"t=1767225600,v1=6a099ee968563ea5177a831e6998613eb7e68ae7d9c75ad453caf2203768979b"},
		{"key with dots, empty body", 1700000000, "whsec_k", "key.with.dots", "",
			"t=1700000000,v1=8bc5f9dc1c598594b4bca97c983839e4d20a7acc81e859d78cbacb0a3d457d70"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// Sub-second parts of the time are not signed: t is whole seconds.
			at := time.Unix(tc.t, 999_000_000)
			got := actioncall.Sign([]byte(tc.secret), at, tc.key, []byte(tc.body))
			if got != tc.want {
				t.Errorf("Sign =\n%s, want\n%s", got, tc.want)
			}
			if err := actioncall.Verify([]byte(tc.secret), []byte(tc.body), tc.key, tc.want, at); err != nil {
				t.Errorf("Verify of the contract's header = %v", err)
			}
			if err := VerifySignature([]byte(tc.secret), []byte(tc.body), tc.key, tc.want, at); err != nil {
				t.Errorf("VerifySignature (the example) of the contract's header = %v", err)
			}
		})
	}
}

// TestVerify runs each case through Verify and through the example's VerifySignature, which
// businesses copy: both must agree.
func TestVerify(t *testing.T) {
	t.Parallel()
	secret := []byte("whsec_test-secret")
	body := []byte(`{"action_id":"a1"}`)
	now := time.Unix(1767225600, 0)
	good := actioncall.Sign(secret, now, "a1", body)
	v1 := good[strings.Index(good, "v1=")+3:]
	bad := strings.Repeat("0", 64)
	cases := []struct {
		name   string
		secret []byte
		body   []byte
		key    string
		header string
		now    time.Time
		want   error
	}{
		{"as signed", secret, body, "a1", good, now, nil},
		{"upper-case hex", secret, body, "a1", "t=1767225600,v1=" + strings.ToUpper(v1), now, nil},
		{"spaces around the parts", secret, body, "a1", " t=1767225600 , v1=" + v1 + " ", now, nil},
		{"two v1, the second right (rotation)", secret, body, "a1", "t=1767225600,v1=" + bad + ",v1=" + v1, now, nil},
		{"unknown scheme ignored", secret, body, "a1", "t=1767225600,v0=abc,v1=" + v1, now, nil},
		{"parts in another order", secret, body, "a1", "v1=" + v1 + ",t=1767225600", now, nil},
		{"received 5 minutes later", secret, body, "a1", good, now.Add(5 * time.Minute), nil},
		{"received 5 minutes earlier (clock skew)", secret, body, "a1", good, now.Add(-5 * time.Minute), nil},
		{"another secret", []byte("whsec_other"), body, "a1", good, now, actioncall.ErrSignatureInvalid},
		{"secret without its prefix", []byte("test-secret"), body, "a1", good, now, actioncall.ErrSignatureInvalid},
		{"another Idempotency-Key", secret, body, "a2", good, now, actioncall.ErrSignatureInvalid},
		{"body changed by one byte", secret, []byte(`{"action_id":"a2"}`), "a1", good, now, actioncall.ErrSignatureInvalid},
		{"body re-encoded with a space", secret, []byte(`{"action_id": "a1"}`), "a1", good, now, actioncall.ErrSignatureInvalid},
		{"t moved", secret, body, "a1", "t=1767225601,v1=" + v1, now, actioncall.ErrSignatureInvalid},
		{"received 5 minutes and 1 second later", secret, body, "a1", good, now.Add(5*time.Minute + time.Second), actioncall.ErrSignatureStale},
		{"received an hour earlier", secret, body, "a1", good, now.Add(-time.Hour), actioncall.ErrSignatureStale},
		{"empty secret", nil, body, "a1", actioncall.Sign(nil, now, "a1", body), now, actioncall.ErrSignatureInvalid},
		{"no t", secret, body, "a1", "v1=" + v1, now, actioncall.ErrSignatureInvalid},
		{"two t", secret, body, "a1", "t=1767225600,t=1767225600,v1=" + v1, now, actioncall.ErrSignatureInvalid},
		{"t not a number", secret, body, "a1", "t=now,v1=" + v1, now, actioncall.ErrSignatureInvalid},
		{"t with a sign", secret, body, "a1", "t=+1767225600,v1=" + v1, now, actioncall.ErrSignatureInvalid},
		{"no v1", secret, body, "a1", "t=1767225600", now, actioncall.ErrSignatureInvalid},
		{"v1 truncated", secret, body, "a1", good[:len(good)-2], now, actioncall.ErrSignatureInvalid},
		{"v1 not hex", secret, body, "a1", "t=1767225600,v1=" + strings.Repeat("zz", 32), now, actioncall.ErrSignatureInvalid},
		{"the old sha256= header", secret, body, "a1", "sha256=" + v1, now, actioncall.ErrSignatureInvalid},
		{"empty header", secret, body, "a1", "", now, actioncall.ErrSignatureInvalid},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := actioncall.Verify(tc.secret, tc.body, tc.key, tc.header, tc.now)
			if !errors.Is(got, tc.want) || (tc.want == nil) != (got == nil) {
				t.Errorf("Verify = %v, want %v", got, tc.want)
			}
			example := VerifySignature(tc.secret, tc.body, tc.key, tc.header, tc.now)
			if (example == nil) != (tc.want == nil) {
				t.Errorf("VerifySignature (the example) = %v, want %v", example, tc.want)
			}
		})
	}
}

func TestNewSecret(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	now := time.Now()
	for range 50 {
		s, err := actioncall.NewSecret()
		if err != nil {
			t.Fatal(err)
		}
		rest, ok := strings.CutPrefix(s, actioncall.SecretPrefix)
		if !ok || len(rest) != 43 {
			t.Fatalf("secret %q: want %s and 43 characters", s, actioncall.SecretPrefix)
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
		sig := actioncall.Sign([]byte(s), now, "k", body)
		if err := actioncall.Verify([]byte(s), body, "k", sig, now); err != nil {
			t.Fatalf("a new secret does not verify its own signature: %v", err)
		}
		if actioncall.Verify(raw, body, "k", sig, now) == nil {
			t.Fatal("the decoded secret verified: the key must be the printed string")
		}
	}
}

func BenchmarkSign1KB(b *testing.B) {
	secret := []byte("whsec_" + strings.Repeat("k", 43))
	body := bytes.Repeat([]byte("x"), 1024)
	now := time.Now()
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		actioncall.Sign(secret, now, "act_01HZX3K9", body)
	}
}

func BenchmarkVerify1KB(b *testing.B) {
	secret := []byte("whsec_" + strings.Repeat("k", 43))
	body := bytes.Repeat([]byte("x"), 1024)
	now := time.Now()
	sig := actioncall.Sign(secret, now, "act_01HZX3K9", body)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if err := actioncall.Verify(secret, body, "act_01HZX3K9", sig, now); err != nil {
			b.Fatal(fmt.Errorf("does not verify: %w", err))
		}
	}
}
