package secrets_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/wapipe/wapipe/internal/secrets"
)

const stateKey = "projects/p/locations/global/keyRings/wapipe/cryptoKeys/connect-states"

// stateAD is the associated data of a connect link's state, as internal/api builds it.
var stateAD = secrets.AD("-connect-state", secrets.PurposeConnectState)

// TestSplitRoutesByPurpose: a Split keeper seals connect states under the state key and every
// tenant secret under the tenant key, each KMS call naming its key.
func TestSplitRoutesByPurpose(t *testing.T) {
	t.Parallel()
	env := newKMSEnv(t)
	k := secrets.Split(env.keeper(t, testKey), env.keeper(t, stateKey))
	tests := []struct {
		name    string
		ad      []byte
		wantKey string
	}{
		{"access token", secrets.AD("acme-bus", secrets.PurposeAccessToken), testKey},
		{"action secret", secrets.AD("acme-bus", secrets.PurposeActionSecret), testKey},
		{"connect state", stateAD, stateKey},
		// Only the exact purpose goes to the state key; anything else stays with the tenant key.
		{"tenant named like the purpose", secrets.AD(secrets.PurposeConnectState, secrets.PurposeAccessToken), testKey},
		{"not an AD of this package", []byte("connect_state"), testKey},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := len(env.fake.Calls())
			ct, err := k.Encrypt(t.Context(), []byte(secretText), tc.ad)
			if err != nil {
				t.Fatalf("Encrypt: %v", err)
			}
			pt, err := k.Decrypt(t.Context(), ct, tc.ad)
			if err != nil || string(pt) != secretText {
				t.Fatalf("Decrypt = %q, %v; want the secret back", pt, err)
			}
			calls := env.fake.Calls()[before:]
			if len(calls) != 2 {
				t.Fatalf("%d KMS calls, want 2 (wrap, unwrap)", len(calls))
			}
			for _, c := range calls {
				if c.KeyName != tc.wantKey {
					t.Errorf("%s call on %s, want %s", c.Method, c.KeyName, tc.wantKey)
				}
			}
		})
	}
	if k.Dev() {
		t.Error("Dev() = true for two KMS keys")
	}
}

// TestSplitKeysDoNotMix: a state sealed by the console's keeper (state key only) opens in the
// api's (both keys); a token sealed under the tenant key does not open as a state, and the console
// cannot seal or open a tenant secret at all: no KMS call is made for it.
func TestSplitKeysDoNotMix(t *testing.T) {
	t.Parallel()
	env := newKMSEnv(t)
	api := secrets.Split(env.keeper(t, testKey), env.keeper(t, stateKey))
	console := secrets.Split(nil, env.keeper(t, stateKey))
	worker := secrets.Split(env.keeper(t, testKey), nil)

	sealed, err := console.Encrypt(t.Context(), []byte(`{"t":"acme-bus"}`), stateAD)
	if err != nil {
		t.Fatalf("console Encrypt state: %v", err)
	}
	if _, err := api.Decrypt(t.Context(), sealed, stateAD); err != nil {
		t.Errorf("api Decrypt of the console's state: %v", err)
	}

	tokenAD := secrets.AD("acme-bus", secrets.PurposeAccessToken)
	token, err := api.Encrypt(t.Context(), []byte(secretText), tokenAD)
	if err != nil {
		t.Fatalf("api Encrypt token: %v", err)
	}
	// The same bytes presented as a state go to the state key, which never sealed them.
	if _, err := api.Decrypt(t.Context(), token, stateAD); !errors.Is(err, secrets.ErrNotAuthentic) {
		t.Errorf("a token opened as a state: %v, want ErrNotAuthentic", err)
	}
	if pt, err := worker.Decrypt(t.Context(), token, tokenAD); err != nil || string(pt) != secretText {
		t.Errorf("worker Decrypt of the api's token = %q, %v", pt, err)
	}

	before := len(env.fake.Calls())
	for name, call := range map[string]func() error{
		"console seals a token": func() error { _, err := console.Encrypt(t.Context(), []byte(secretText), tokenAD); return err },
		"console opens a token": func() error { _, err := console.Decrypt(t.Context(), token, tokenAD); return err },
		"worker opens a state":  func() error { _, err := worker.Decrypt(t.Context(), sealed, stateAD); return err },
	} {
		err := call()
		if !errors.Is(err, secrets.ErrNoKey) {
			t.Errorf("%s: %v, want ErrNoKey", name, err)
		}
		checkNoLeak(t, err)
	}
	if n := len(env.fake.Calls()) - before; n != 0 {
		t.Errorf("%d KMS calls for purposes the keeper has no key for, want 0", n)
	}
}

// TestSplitDev: in dev both purposes use the development key, so a state sealed by a plain dev
// keeper (an older CLI) still opens, and Close closes both sides.
func TestSplitDev(t *testing.T) {
	t.Parallel()
	k := secrets.Split(devKeeper(t), devKeeper(t))
	if !k.Dev() {
		t.Error("Dev() = false for dev keepers")
	}
	sealed, err := devKeeper(t).Encrypt(t.Context(), []byte("state"), stateAD)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := k.Decrypt(t.Context(), sealed, stateAD); err != nil {
		t.Errorf("Decrypt: %v", err)
	}
	if err := secrets.Split(nil, nil).Close(); err != nil {
		t.Errorf("Close of an empty split: %v", err)
	}
	if !secrets.Split(nil, devKeeper(t)).Dev() {
		t.Error("Dev() = false with a dev state key")
	}
}

// TestValidateNamesTheVariable: the error names the variable the key came from.
func TestValidateNamesTheVariable(t *testing.T) {
	t.Parallel()
	for _, cfg := range []secrets.Config{
		{Variable: "CONNECT_STATE_KMS_KEY_NAME"},
		{Variable: "CONNECT_STATE_KMS_KEY_NAME", KMSKeyName: "projects/p/locations/global/keyRings/wapipe"},
	} {
		if err := cfg.Validate(); err == nil || !strings.HasPrefix(err.Error(), "CONNECT_STATE_KMS_KEY_NAME") {
			t.Errorf("Validate(%+v) = %v, want an error naming CONNECT_STATE_KMS_KEY_NAME", cfg, err)
		}
	}
}
