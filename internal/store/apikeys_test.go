package store_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/wapipe/wapipe/internal/apikey"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/tenant"
	"github.com/wapipe/wapipe/internal/testenv"
)

// TestAPIKeyLastUsedIsNotAHotDocument: a key used by many concurrent requests gets last_used_at
// written once per LastUsedResolution, by each api instance at most, never once per request.
func TestAPIKeyLastUsedIsNotAHotDocument(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fs, _ := testenv.Firestore(t)
	db := store.NewDB(fs)
	clk := &clock{now: time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)}
	tn := &tenant.Tenant{ID: "acme", Name: "Acme", Language: "en", Audience: tenant.AudiencePublic,
		PhoneNumbers: []tenant.PhoneNumber{{PhoneNumberID: "100", WABAID: "200"}}}
	tn.ApplyDefaults()
	if _, err := store.NewTenants(db, store.Options{}).Apply(ctx, tn, false); err != nil {
		t.Fatal(err)
	}
	instance1, instance2 := store.NewAPIKeys(db, store.Options{Now: clk.Now}), store.NewAPIKeys(db, store.Options{Now: clk.Now})
	_, id, hash, _ := apikey.New()
	if err := instance1.CreateAPIKey(ctx, store.APIKeyRecord{ID: id, TenantID: "acme", Hash: hash}); err != nil {
		t.Fatal(err)
	}
	stale, _ := instance1.GetAPIKey(ctx, id)
	updateTime := func() time.Time {
		t.Helper()
		snap, err := fs.Collection(store.APIKeysCollection).Doc(id).Get(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return snap.UpdateTime
	}
	created := updateTime()

	// A burst of requests that all read the key before its first use: one write.
	touchAll := func(keys *store.APIKeys, rec store.APIKeyRecord, n int) {
		var wg sync.WaitGroup
		for range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := keys.TouchAPIKey(ctx, rec); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
	}
	touchAll(instance1, stale, 50)
	first := updateTime()
	if rec, _ := instance1.GetAPIKey(ctx, id); first.Equal(created) || !rec.LastUsedAt.Equal(clk.Now()) {
		t.Fatalf("last_used_at %v after the first use, want %v", rec.LastUsedAt, clk.Now())
	}
	clk.Add(30 * time.Second)
	touchAll(instance1, stale, 50) // still holding the stale read: the process remembers
	fresh, _ := instance2.GetAPIKey(ctx, id)
	touchAll(instance2, fresh, 50) // another instance reads a recent last_used_at
	if got := updateTime(); !got.Equal(first) {
		t.Errorf("key document written again %v after its last use (update time %v, then %v)", 30*time.Second, first, got)
	}
	clk.Add(31 * time.Second)
	touchAll(instance2, fresh, 50)
	if rec, _ := instance1.GetAPIKey(ctx, id); !rec.LastUsedAt.Equal(clk.Now()) {
		t.Errorf("last_used_at %v a minute later, want %v", rec.LastUsedAt, clk.Now())
	}
}

func TestAPIKeyUsable(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		rec  store.APIKeyRecord
		want bool
	}{
		{"no expiry", store.APIKeyRecord{}, true},
		{"expires later", store.APIKeyRecord{ExpiresAt: now.Add(time.Second)}, true},
		{"expires now", store.APIKeyRecord{ExpiresAt: now}, false},
		{"expired", store.APIKeyRecord{ExpiresAt: now.Add(-time.Hour)}, false},
		{"revoked", store.APIKeyRecord{RevokedAt: now.Add(-time.Hour)}, false},
	}
	for _, tc := range tests {
		if got := tc.rec.Usable(now); got != tc.want {
			t.Errorf("%s: usable %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestListAPIKeysIsPerTenant(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, _ := testenv.Store(t)
	clk := &clock{now: time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)}
	keys := store.NewAPIKeys(db, store.Options{Now: clk.Now})
	var want []string
	for _, id := range []string{"acme", "bali"} {
		tn := &tenant.Tenant{ID: id, Name: id, Language: "en", Audience: tenant.AudiencePublic,
			PhoneNumbers: []tenant.PhoneNumber{{PhoneNumberID: "1" + id, WABAID: "2"}}}
		tn.ApplyDefaults()
		if _, err := store.NewTenants(db, store.Options{}).Apply(ctx, tn, false); err != nil {
			t.Fatal(err)
		}
		for range 2 {
			_, kid, hash, _ := apikey.New()
			if err := keys.CreateAPIKey(ctx, store.APIKeyRecord{ID: kid, TenantID: id, Hash: hash}); err != nil {
				t.Fatal(err)
			}
			if id == "acme" {
				want = append(want, kid)
			}
			clk.Add(time.Second)
		}
	}
	got, err := keys.ListAPIKeys(ctx, "acme")
	if err != nil || len(got) != 2 || got[0].ID != want[0] || got[1].ID != want[1] {
		t.Errorf("acme's keys %+v (%v), want %v oldest first", got, err, want)
	}
}

// BenchmarkAPIKeyLookup measures what the api pays per request for reading the key afresh (no
// cache, so a revocation refuses the very next request on every instance): one GetAPIKey by id,
// and TouchAPIKey, which writes at most once a minute. Against the Firestore emulator, so the
// figure is the client's and the emulator's cost, not production latency.
func BenchmarkAPIKeyLookup(b *testing.B) {
	ctx := context.Background()
	db, _ := testenv.Store(b)
	tn := &tenant.Tenant{ID: "acme", Name: "Acme", Language: "en", Audience: tenant.AudiencePublic,
		PhoneNumbers: []tenant.PhoneNumber{{PhoneNumberID: "100", WABAID: "200"}}}
	tn.ApplyDefaults()
	if _, err := store.NewTenants(db, store.Options{}).Apply(ctx, tn, false); err != nil {
		b.Fatal(err)
	}
	keys := store.NewAPIKeys(db, store.Options{})
	_, id, hash, _ := apikey.New()
	if err := keys.CreateAPIKey(ctx, store.APIKeyRecord{ID: id, TenantID: "acme", Hash: hash}); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		rec, err := keys.GetAPIKey(ctx, id)
		if err != nil {
			b.Fatal(err)
		}
		if err := keys.TouchAPIKey(ctx, rec); err != nil {
			b.Fatal(err)
		}
	}
}
