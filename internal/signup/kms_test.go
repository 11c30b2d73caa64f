package signup_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/wapipe/wapipe/internal/keyedid"
	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/internal/secrets"
	"github.com/wapipe/wapipe/internal/secrets/kmsfake"
	"github.com/wapipe/wapipe/internal/signup"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/tenant"
	"github.com/wapipe/wapipe/internal/testenv"
)

// TestForgedStatesCostNoKMSCall is the attack of an unauthenticated stranger on the connect
// routes: 30 forged, altered or replayed-elsewhere states, at the page and at the callback, make
// no Cloud KMS call (each opening of a sealed state unwraps its key at KMS); a real link makes
// one. A link tagged under the previous LOG_HASH_KEY still opens during a rotation; one tagged
// under another deployment's key does not.
func TestForgedStatesCostNoKMSCall(t *testing.T) {
	ctx := context.Background()
	fake := kmsfake.New()
	kms := fake.NewTestServer()
	t.Cleanup(kms.Close)
	keeper, err := secrets.New(ctx, secrets.Config{KMSKeyName: "projects/p/locations/global/keyRings/wapipe/cryptoKeys/connect-state",
		KMSEndpoint: kms.URL, HTTPClient: kms.Client()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { keeper.Close() })
	db, _ := testenv.Store(t)
	tn := &tenant.Tenant{ID: "acme", Name: "Acme", Language: "en", Audience: tenant.AudiencePublic,
		PhoneNumbers: []tenant.PhoneNumber{{PhoneNumberID: number, WABAID: wabaAcme}}}
	if _, err := store.NewTenants(db, store.Options{}).Apply(ctx, tn, false); err != nil {
		t.Fatal(err)
	}
	keyer := keyerOf(t, "a-deployment-key-of-at-least-32-bytes-long")
	srv := signup.New(signup.Config{AppID: "app", ConfigID: "cfg", AppSecret: "s", PublicBaseURL: "http://127.0.0.1"},
		signup.Deps{Tenants: store.NewTenants(db, store.Options{}), Keeper: keeper, Keyer: keyer, Now: time.Now})
	r := chi.NewRouter()
	srv.Routes(r)
	h := signup.HideSecrets(r)
	requests := 0
	get := func(path, state string) (int, string) {
		req := httptest.NewRequest(http.MethodGet, path+"?code=x&state="+state, nil)
		// A new address each time: the flow's own limit is not what this test is about.
		requests++
		req.RemoteAddr = fmt.Sprintf("192.0.2.%d:1234", requests)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		return w.Code, w.Body.String()
	}
	link := func(k *keyedid.Keyer) string {
		l, _, err := signup.NewConnectLink(ctx, keeper, k, "http://127.0.0.1", "acme", time.Now())
		if err != nil {
			t.Fatal(err)
		}
		return l[strings.Index(l, "state=")+len("state="):]
	}
	real := link(keyer)
	body, tag, _ := strings.Cut(real, ".")
	other := link(keyerOf(t, "another-deployment-key-of-32-bytes-or-more"))
	fake.Reset()
	forged := []string{
		body + "." + strings.Repeat("0", len(tag)), // the seal kept, the tag guessed
		body[:len(body)-4] + "AAAA." + tag,         // the seal altered, the tag kept
		body,                                       // no tag
		"." + tag,                                  // no seal
		other,                                      // another deployment's link
		strings.Repeat("A", 300) + "." + tag,
	}
	for i := 0; i < 30; i++ {
		state := forged[i%len(forged)]
		path := signup.ConnectPath
		if i%2 == 1 {
			path = signup.CallbackPath
		}
		if code, page := get(path, state); code != http.StatusBadRequest || !strings.Contains(page, "not valid") {
			t.Errorf("forged state %d at %s: %d %s", i%len(forged), path, code, page)
		}
	}
	if n := fake.CallCount(kmsfake.MethodDecrypt); n != 0 {
		t.Fatalf("30 forged states made %d Cloud KMS decrypt calls, want 0", n)
	}
	if code, page := get(signup.ConnectPath, real); code != http.StatusOK || !strings.Contains(page, "Acme") {
		t.Fatalf("the real link: %d %s", code, page)
	}
	if n := fake.CallCount(kmsfake.MethodDecrypt); n != 1 {
		t.Fatalf("the real link made %d decrypt calls, want 1", n)
	}
	// A rotation of LOG_HASH_KEY: the services hold the new key and the previous one.
	rotated := signup.New(signup.Config{AppID: "app", ConfigID: "cfg", AppSecret: "s", PublicBaseURL: "http://127.0.0.1"},
		signup.Deps{Tenants: store.NewTenants(db, store.Options{}), Keeper: keeper,
			Keyer: keyerOf(t, "the-next-deployment-key-of-32-bytes-or-more").WithPrevious(keyer), Now: time.Now})
	r = chi.NewRouter()
	rotated.Routes(r)
	h = signup.HideSecrets(r)
	if code, page := get(signup.ConnectPath, real); code != http.StatusOK || !strings.Contains(page, "Acme") {
		t.Fatalf("a link of the previous key during a rotation: %d %s", code, page)
	}
}

func keyerOf(t *testing.T, key string) *keyedid.Keyer {
	t.Helper()
	h, err := logging.NewHasher(key)
	if err != nil {
		t.Fatal(err)
	}
	return keyedid.New(h)
}
