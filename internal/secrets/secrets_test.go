package secrets_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/api/googleapi"

	"github.com/wapipe/wapipe/internal/secrets"
	"github.com/wapipe/wapipe/internal/secrets/kmsfake"
)

const (
	testKey  = "projects/p/locations/global/keyRings/wapipe/cryptoKeys/tenant-secrets"
	otherKey = "projects/p/locations/global/keyRings/wapipe/cryptoKeys/other"
	// secretText is recognisable, so a test can check it never shows in an error or at KMS.
	secretText = "EAAG-secret-access-token-do-not-leak"
)

// kmsEnv is a fake Cloud KMS on 127.0.0.1 and keepers pointed at it.
type kmsEnv struct {
	fake *kmsfake.Fake
	url  string
	hc   *http.Client
}

func newKMSEnv(t *testing.T) *kmsEnv {
	t.Helper()
	fake := kmsfake.New()
	srv := fake.NewTestServer()
	t.Cleanup(srv.Close)
	return &kmsEnv{fake: fake, url: srv.URL, hc: srv.Client()}
}

func (e *kmsEnv) keeper(t *testing.T, keyName string) *secrets.Keeper {
	t.Helper()
	return newKeeper(t, secrets.Config{KMSKeyName: keyName, KMSEndpoint: e.url, HTTPClient: e.hc})
}

func newKeeper(t *testing.T, cfg secrets.Config) *secrets.Keeper {
	t.Helper()
	k, err := secrets.New(t.Context(), cfg)
	if err != nil {
		t.Fatalf("secrets.New: %v", err)
	}
	t.Cleanup(func() {
		if err := k.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return k
}

func devKeeper(t *testing.T) *secrets.Keeper {
	t.Helper()
	return newKeeper(t, secrets.Config{Dev: true})
}

// keepers are the two kinds of Keeper every behaviour is checked on.
func keepers(t *testing.T) map[string]*secrets.Keeper {
	t.Helper()
	return map[string]*secrets.Keeper{"dev": devKeeper(t), "kms": newKMSEnv(t).keeper(t, testKey)}
}

// checkNoLeak fails when err shows the secret.
func checkNoLeak(t *testing.T, err error) {
	t.Helper()
	if err != nil && strings.Contains(err.Error(), secretText) {
		t.Errorf("error shows the plaintext: %v", err)
	}
}

func TestRoundTrip(t *testing.T) {
	t.Parallel()
	for name, k := range keepers(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			for _, pt := range [][]byte{[]byte(secretText), {}, bytes.Repeat([]byte{0xff}, 70_000)} {
				ad := secrets.AD("acme-bus", secrets.PurposeAccessToken)
				ct, err := k.Encrypt(t.Context(), pt, ad)
				if err != nil {
					t.Fatalf("Encrypt: %v", err)
				}
				if len(pt) > 0 && bytes.Contains(ct, pt) {
					t.Errorf("ciphertext contains the plaintext")
				}
				got, err := k.Decrypt(t.Context(), ct, ad)
				if err != nil {
					t.Fatalf("Decrypt: %v", err)
				}
				if !bytes.Equal(got, pt) {
					t.Errorf("Decrypt = %d bytes, want the %d bytes encrypted", len(got), len(pt))
				}
			}
		})
	}
}

func TestEncryptIsRandomised(t *testing.T) {
	t.Parallel()
	k := devKeeper(t)
	ad := secrets.AD("acme-bus", secrets.PurposeActionSecret)
	a, err := k.Encrypt(t.Context(), []byte(secretText), ad)
	if err != nil {
		t.Fatal(err)
	}
	b, err := k.Encrypt(t.Context(), []byte(secretText), ad)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(a, b) {
		t.Error("two encryptions of the same secret are equal; want a fresh data key each time")
	}
}

func TestWrongADFails(t *testing.T) {
	t.Parallel()
	sealed := secrets.AD("acme-bus", secrets.PurposeAccessToken)
	for name, k := range keepers(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ct, err := k.Encrypt(t.Context(), []byte(secretText), sealed)
			if err != nil {
				t.Fatalf("Encrypt: %v", err)
			}
			for _, ad := range [][]byte{
				secrets.AD("other-tenant", secrets.PurposeAccessToken),
				secrets.AD("acme-bus", secrets.PurposeActionSecret),
				[]byte("tenant/acme-bus/access_token"),
			} {
				pt, err := k.Decrypt(t.Context(), ct, ad)
				if !errors.Is(err, secrets.ErrNotAuthentic) {
					t.Errorf("Decrypt with AD %q = %d bytes, %v; want ErrNotAuthentic", ad, len(pt), err)
				}
				checkNoLeak(t, err)
			}
		})
	}
}

func TestTamperedCiphertextFails(t *testing.T) {
	t.Parallel()
	// The layout after the 2-byte prefix is Tink's envelope: a 4-byte length, the wrapped data
	// key, then the secret sealed under the data key (IV, ciphertext, tag).
	flip := func(i func(n int) int) func([]byte) []byte {
		return func(ct []byte) []byte {
			out := bytes.Clone(ct)
			out[i(len(ct))] ^= 0x01
			return out
		}
	}
	tampers := []struct {
		name   string
		tamper func([]byte) []byte
		want   error
	}{
		{"last byte (tag)", flip(func(n int) int { return n - 1 }), secrets.ErrNotAuthentic},
		{"sealed secret", flip(func(n int) int { return n - 20 }), secrets.ErrNotAuthentic},
		{"wrapped data key", flip(func(int) int { return 2 + 4 + 10 }), secrets.ErrNotAuthentic},
		{"data key length", flip(func(int) int { return 2 + 3 }), secrets.ErrNotAuthentic},
		{"truncated", func(ct []byte) []byte { return ct[:len(ct)-1] }, secrets.ErrNotAuthentic},
		{"extended", func(ct []byte) []byte { return append(bytes.Clone(ct), 0) }, secrets.ErrNotAuthentic},
		{"version", flip(func(int) int { return 0 }), secrets.ErrMalformed},
		{"prefix only", func(ct []byte) []byte { return ct[:2] }, secrets.ErrMalformed},
		{"empty", func([]byte) []byte { return nil }, secrets.ErrMalformed},
	}
	ad := secrets.AD("acme-bus", secrets.PurposeAccessToken)
	for name, k := range keepers(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ct, err := k.Encrypt(t.Context(), []byte(secretText), ad)
			if err != nil {
				t.Fatalf("Encrypt: %v", err)
			}
			for _, tc := range tampers {
				pt, err := k.Decrypt(t.Context(), tc.tamper(ct), ad)
				if !errors.Is(err, tc.want) {
					t.Errorf("%s: Decrypt = %d bytes, %v; want %v", tc.name, len(pt), err, tc.want)
				}
				checkNoLeak(t, err)
			}
		})
	}
}

func TestOtherKMSKeyFails(t *testing.T) {
	t.Parallel()
	env := newKMSEnv(t)
	ad := secrets.AD("acme-bus", secrets.PurposeAccessToken)
	ct, err := env.keeper(t, testKey).Encrypt(t.Context(), []byte(secretText), ad)
	if err != nil {
		t.Fatalf("Encrypt: %v", err)
	}
	_, err = env.keeper(t, otherKey).Decrypt(t.Context(), ct, ad)
	if !errors.Is(err, secrets.ErrNotAuthentic) {
		t.Errorf("Decrypt under another key: %v; want ErrNotAuthentic", err)
	}
}

func TestDevKeepersAgree(t *testing.T) {
	t.Parallel()
	// Built separately, as the CLI and the worker are in two processes.
	cli, worker := devKeeper(t), devKeeper(t)
	ad := secrets.AD("acme-bus", secrets.PurposeActionSecret)
	ct, err := cli.Encrypt(t.Context(), []byte(secretText), ad)
	if err != nil {
		t.Fatalf("Encrypt: %v", err)
	}
	got, err := worker.Decrypt(t.Context(), ct, ad)
	if err != nil {
		t.Fatalf("Decrypt by another dev keeper: %v", err)
	}
	if diff := cmp.Diff(secretText, string(got)); diff != "" {
		t.Errorf("Decrypt (-want, +got):\n%s", diff)
	}
	if !cli.Dev() || !worker.Dev() {
		t.Error("Dev() = false for a development keeper")
	}
}

func TestKeyKindMismatchFailsClearly(t *testing.T) {
	t.Parallel()
	env := newKMSEnv(t)
	dev, kms := devKeeper(t), env.keeper(t, testKey)
	if kms.Dev() {
		t.Error("Dev() = true for a KMS keeper")
	}
	ad := secrets.AD("acme-bus", secrets.PurposeAccessToken)
	tests := []struct {
		name     string
		from, to *secrets.Keeper
		wantText string
	}{
		{"dev ciphertext to KMS keeper", dev, kms, "(the development key; this keeper uses Cloud KMS)"},
		{"KMS ciphertext to dev keeper", kms, dev, "(Cloud KMS; this keeper uses the development key)"},
	}
	for _, tc := range tests {
		ct, err := tc.from.Encrypt(t.Context(), []byte(secretText), ad)
		if err != nil {
			t.Fatalf("%s: Encrypt: %v", tc.name, err)
		}
		env.fake.Reset()
		_, err = tc.to.Decrypt(t.Context(), ct, ad)
		if !errors.Is(err, secrets.ErrKeyKind) || !strings.Contains(err.Error(), tc.wantText) {
			t.Errorf("%s: Decrypt error = %v; want ErrKeyKind saying %q", tc.name, err, tc.wantText)
		}
		if n := len(env.fake.Calls()); n != 0 {
			t.Errorf("%s: %d KMS calls; want none for a ciphertext refused by its prefix", tc.name, n)
		}
	}
}

func TestKMSOutageIsWrapped(t *testing.T) {
	t.Parallel()
	env := newKMSEnv(t)
	k := env.keeper(t, testKey)
	ad := secrets.AD("acme-bus", secrets.PurposeAccessToken)
	ct, err := k.Encrypt(t.Context(), []byte(secretText), ad)
	if err != nil {
		t.Fatalf("Encrypt: %v", err)
	}
	for _, status := range []int{http.StatusServiceUnavailable, http.StatusForbidden, http.StatusTooManyRequests} {
		ops := map[string]func() error{
			"encrypt": func() error { _, err := k.Encrypt(t.Context(), []byte(secretText), ad); return err },
			"decrypt": func() error { _, err := k.Decrypt(t.Context(), ct, ad); return err },
		}
		for op, call := range ops {
			env.fake.FailNext(1, status)
			err := call()
			var gerr *googleapi.Error
			if !errors.Is(err, secrets.ErrKMS) || !errors.As(err, &gerr) || gerr.Code != status {
				t.Errorf("%s with KMS answering %d: %v; want ErrKMS wrapping the googleapi.Error", op, status, err)
			}
			checkNoLeak(t, err)
			// The outage is over: the next call works.
			if err := call(); err != nil {
				t.Errorf("%s after the outage: %v", op, err)
			}
		}
	}
}

func TestKMSUnreachableIsWrapped(t *testing.T) {
	t.Parallel()
	fake := kmsfake.New()
	srv := fake.NewTestServer()
	url, hc := srv.URL, srv.Client()
	srv.Close() // nothing listens there any more
	k := newKeeper(t, secrets.Config{KMSKeyName: testKey, KMSEndpoint: url, HTTPClient: hc})
	_, err := k.Encrypt(t.Context(), []byte(secretText), secrets.AD("acme-bus", secrets.PurposeAccessToken))
	if !errors.Is(err, secrets.ErrKMS) {
		t.Errorf("Encrypt with KMS unreachable: %v; want ErrKMS", err)
	}
	checkNoLeak(t, err)
}

func TestOneKMSCallPerOperation(t *testing.T) {
	t.Parallel()
	env := newKMSEnv(t)
	k := env.keeper(t, testKey)
	ad := secrets.AD("acme-bus", secrets.PurposeAccessToken)
	ct, err := k.Encrypt(t.Context(), []byte(secretText), ad)
	if err != nil {
		t.Fatalf("Encrypt: %v", err)
	}
	if _, err := k.Decrypt(t.Context(), ct, ad); err != nil {
		t.Fatalf("Decrypt: %v", err)
	}
	calls := env.fake.Calls()
	var methods []string
	for _, c := range calls {
		methods = append(methods, c.Method)
		if c.Status != http.StatusOK || c.KeyName != testKey {
			t.Errorf("KMS call %s on %s answered %d; want 200 on %s", c.Method, c.KeyName, c.Status, testKey)
		}
		// Only the data key reaches KMS, never the secret or where it belongs.
		if bytes.Contains(c.Plaintext, []byte(secretText)) || bytes.Contains(c.AAD, []byte("acme-bus")) {
			t.Errorf("KMS %s saw the secret or its associated data", c.Method)
		}
	}
	if diff := cmp.Diff([]string{kmsfake.MethodEncrypt, kmsfake.MethodDecrypt}, methods); diff != "" {
		t.Errorf("KMS calls for one Encrypt and one Decrypt (-want, +got):\n%s", diff)
	}
}

func TestCancelledContextMakesNoCall(t *testing.T) {
	t.Parallel()
	env := newKMSEnv(t)
	k := env.keeper(t, testKey)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	ad := secrets.AD("acme-bus", secrets.PurposeAccessToken)
	if _, err := k.Encrypt(ctx, []byte(secretText), ad); !errors.Is(err, context.Canceled) {
		t.Errorf("Encrypt with a cancelled context: %v; want context.Canceled", err)
	}
	if _, err := k.Decrypt(ctx, []byte{1, 'k', 0, 0, 0, 1, 0}, ad); !errors.Is(err, context.Canceled) {
		t.Errorf("Decrypt with a cancelled context: %v; want context.Canceled", err)
	}
	if n := len(env.fake.Calls()); n != 0 {
		t.Errorf("%d KMS calls; want none", n)
	}
}

func TestAssociatedDataRequired(t *testing.T) {
	t.Parallel()
	k := devKeeper(t)
	if _, err := k.Encrypt(t.Context(), []byte(secretText), nil); !errors.Is(err, secrets.ErrNoAD) {
		t.Errorf("Encrypt without AD: %v; want ErrNoAD", err)
	}
	ct, err := k.Encrypt(t.Context(), []byte(secretText), secrets.AD("acme-bus", secrets.PurposeAccessToken))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := k.Decrypt(t.Context(), ct, nil); !errors.Is(err, secrets.ErrNoAD) {
		t.Errorf("Decrypt without AD: %v; want ErrNoAD", err)
	}
}

func TestNewRefusesConfig(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  secrets.Config
		want string
	}{
		{"no key outside dev", secrets.Config{}, "KMS_KEY_NAME is required unless APP_ENV=dev"},
		{"key ring, not a key", secrets.Config{KMSKeyName: "projects/p/locations/global/keyRings/wapipe"}, "KMS_KEY_NAME: want projects/P/locations/L/keyRings/R/cryptoKeys/K"},
		{"key version", secrets.Config{KMSKeyName: testKey + "/cryptoKeyVersions/1", Dev: true}, "KMS_KEY_NAME: want"},
		{"URI form", secrets.Config{KMSKeyName: "gcp-kms://" + testKey}, "KMS_KEY_NAME: want"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			k, err := secrets.New(t.Context(), tc.cfg)
			if err == nil {
				_ = k.Close()
				t.Fatalf("New(%+v) succeeded; want an error", tc.cfg)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("New(%+v) error = %q; want it to say %q", tc.cfg, err, tc.want)
			}
			if vErr := tc.cfg.Validate(); vErr == nil {
				t.Errorf("Validate(%+v) = nil; want the error New gives", tc.cfg)
			}
		})
	}
}

func TestKMSKeyWinsOverDev(t *testing.T) {
	t.Parallel()
	env := newKMSEnv(t)
	k := newKeeper(t, secrets.Config{KMSKeyName: testKey, Dev: true, KMSEndpoint: env.url, HTTPClient: env.hc})
	if k.Dev() {
		t.Fatal("Dev() = true with KMSKeyName set; want Cloud KMS")
	}
	if _, err := k.Encrypt(t.Context(), []byte(secretText), secrets.AD("acme-bus", secrets.PurposeAccessToken)); err != nil {
		t.Fatalf("Encrypt: %v", err)
	}
	if got := env.fake.CallCount(kmsfake.MethodEncrypt); got != 1 {
		t.Errorf("%d KMS encrypt calls; want 1", got)
	}
}

func TestAD(t *testing.T) {
	t.Parallel()
	// Distinct (tenant, purpose) pairs give distinct AD, even when the strings could be split
	// differently.
	pairs := [][2]string{
		{"acme-bus", secrets.PurposeAccessToken},
		{"acme-bus", secrets.PurposeActionSecret},
		{"acme", secrets.PurposeAccessToken},
		{"a/b", "c"},
		{"a", "b/c"},
		{"a|purpose:1:b", ""},
		{"a", "b"},
	}
	seen := map[string][2]string{}
	for _, p := range pairs {
		ad := string(secrets.AD(p[0], p[1]))
		if q, dup := seen[ad]; dup {
			t.Errorf("AD%q = AD%q = %q", p, q, ad)
		}
		seen[ad] = p
	}
	if diff := cmp.Diff(secrets.AD("acme-bus", secrets.PurposeAccessToken), secrets.AD("acme-bus", secrets.PurposeAccessToken)); diff != "" {
		t.Errorf("AD is not deterministic (-want, +got):\n%s", diff)
	}
}

// TestNothingLogged: even with the Google client libraries' debug logging switched on, a KMS
// round trip writes nothing (their request log would show the data key).
func TestNothingLogged(t *testing.T) {
	t.Setenv("GOOGLE_SDK_GO_LOGGING_LEVEL", "debug")
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := os.Stderr
	os.Stderr = w
	t.Cleanup(func() { os.Stderr = stderr })
	out := make(chan []byte)
	go func() {
		b, _ := io.ReadAll(r)
		out <- b
	}()

	env := newKMSEnv(t)
	k := env.keeper(t, testKey)
	ad := secrets.AD("acme-bus", secrets.PurposeAccessToken)
	ct, err := k.Encrypt(t.Context(), []byte(secretText), ad)
	if err != nil {
		t.Fatalf("Encrypt: %v", err)
	}
	if _, err := k.Decrypt(t.Context(), ct, ad); err != nil {
		t.Fatalf("Decrypt: %v", err)
	}
	env.fake.FailNext(1, http.StatusServiceUnavailable)
	_, _ = k.Decrypt(t.Context(), ct, ad)

	os.Stderr = stderr
	_ = w.Close()
	if logged := <-out; len(logged) > 0 {
		t.Errorf("a KMS round trip wrote to stderr:\n%s", logged)
	}
}
