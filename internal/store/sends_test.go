package store_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/wapipe/wapipe/internal/apikey"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/tenant"
	"github.com/wapipe/wapipe/internal/testenv"
)

// sendStores are the stores of the send tests, on one database, with one tenant "acme".
func sendStores(t *testing.T) (*store.Sends, *store.Tenants, *store.Outbound, store.TenantRecord) {
	t.Helper()
	db, _ := testenv.Store(t)
	tns := store.NewTenants(db, store.Options{})
	tn := &tenant.Tenant{ID: "acme", Name: "Acme", Language: "en", Audience: tenant.AudiencePublic,
		PhoneNumbers: []tenant.PhoneNumber{{PhoneNumberID: "100", WABAID: "200"}}}
	tn.ApplyDefaults()
	ctx := context.Background()
	if _, err := tns.Apply(ctx, tn, false); err != nil {
		t.Fatal(err)
	}
	rec, err := tns.SetAccessToken(ctx, "acme", []byte("sealed"))
	if err != nil {
		t.Fatal(err)
	}
	return store.NewSends(db, store.Options{}), tns, store.NewOutbound(db, store.Options{}), rec
}

func TestCreateSendIsIdempotentByRequestHash(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	sends, _, _, _ := sendStores(t)
	seed := store.OutboundRecord{IdempotencyKey: "send-1", TenantID: "acme", Source: store.SourceAPI, RequestHash: "h1", To: "15550001", Message: `{"type":"text"}`}
	rec, created, err := sends.CreateSend(ctx, seed)
	if err != nil || !created || rec.State != store.OutboundPending {
		t.Fatalf("first create: %+v created=%v err=%v", rec, created, err)
	}
	again, created, err := sends.CreateSend(ctx, seed)
	if err != nil || created || again.State != store.OutboundPending || again.RequestHash != "h1" {
		t.Fatalf("replay: created=%v err=%v", created, err)
	}
	seed.RequestHash = "h2"
	if _, _, err := sends.CreateSend(ctx, seed); !errors.Is(err, store.ErrIdempotencyMismatch) {
		t.Fatalf("other body with the same key: err %v, want ErrIdempotencyMismatch", err)
	}
}

// TestParkMarksOnceAndReleaseOnce walks the token lifecycle on the records: the first auth error
// marks the tenant, later sends park without marking, a send that met an error with an older
// token parks nothing, BeginSend never sends a parked record, and a release after a new token
// makes each parked send pending once, in park order.
func TestParkMarksOnceAndReleaseOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	sends, tns, out, tok := sendStores(t)
	seed := func(key string) store.OutboundRecord {
		return store.OutboundRecord{IdempotencyKey: key, TenantID: "acme", PhoneNumberID: "100", To: "15550001", Message: `{"type":"text"}`}
	}
	// A send begun (sending) then refused for the token.
	if _, _, err := out.BeginSend(ctx, seed("k1")); err != nil {
		t.Fatal(err)
	}
	res, err := sends.Park(ctx, store.ParkRequest{Seed: seed("k1"), AuthError: "code 190", TokenSetAt: tok.TokenSetAt})
	if err != nil || !res.Parked || !res.Marked {
		t.Fatalf("first auth error: %+v %v, want parked and marked", res, err)
	}
	res, err = sends.Park(ctx, store.ParkRequest{Seed: seed("k2"), AuthError: "code 190", TokenSetAt: tok.TokenSetAt})
	if err != nil || !res.Parked || res.Marked {
		t.Fatalf("second auth error: %+v %v, want parked, not marked again", res, err)
	}
	if res, err := sends.Park(ctx, store.ParkRequest{Seed: seed("k3")}); err != nil || !res.Parked {
		t.Fatalf("later send: %+v %v", res, err)
	}
	if dec, _, err := out.BeginSend(ctx, seed("k1")); err != nil || dec != store.AlreadyDone {
		t.Fatalf("BeginSend of a parked record: %v %v, want AlreadyDone", dec, err)
	}
	if got, _ := tns.NeedsReauth(ctx); !cmp.Equal(got, []string{"acme"}) {
		t.Fatalf("NeedsReauth = %v", got)
	}
	if _, err := sends.ReleaseParked(ctx, "acme"); err == nil {
		t.Fatal("release while needs_reauth: no error")
	}
	_, err = tns.SetAccessToken(ctx, "acme", []byte("sealed2"))
	if err != nil {
		t.Fatal(err)
	}
	// An auth error met with the old token after the new one was set: nothing parks.
	if res, err := sends.Park(ctx, store.ParkRequest{Seed: seed("k4"), AuthError: "code 190", TokenSetAt: tok.TokenSetAt}); err != nil || res.Parked || res.Marked {
		t.Fatalf("stale auth error: %+v %v, want nothing", res, err)
	}
	released, err := sends.ReleaseParked(ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, r := range released {
		keys = append(keys, r.IdempotencyKey)
		if r.State != store.OutboundPending || r.ReleaseGen != 1 || r.To == "" || r.Message == "" {
			t.Errorf("released %s: %+v", r.IdempotencyKey, r)
		}
	}
	if diff := cmp.Diff([]string{"k1", "k2", "k3"}, keys); diff != "" {
		t.Fatalf("released (-want, +got):\n%s", diff)
	}
	// A second release before the tasks ran hands the same records back (same generation).
	again, err := sends.ReleaseParked(ctx, "acme")
	if err != nil || len(again) != 3 || again[0].ReleaseGen != 1 {
		t.Fatalf("second release: %d records, %v", len(again), err)
	}
	for _, k := range keys {
		if err := sends.ReleaseDone(ctx, k, 1); err != nil {
			t.Fatal(err)
		}
	}
	if done, err := sends.ReleaseParked(ctx, "acme"); err != nil || len(done) != 0 {
		t.Fatalf("release after the tasks ran: %d records, %v", len(done), err)
	}
	if dec, rec, err := out.BeginSend(ctx, seed("k2")); err != nil || dec != store.Send || rec.To == "" {
		t.Fatalf("BeginSend after release: %v %+v %v", dec, rec, err)
	}
}

func TestAPIKeysVerifyAndRevoke(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, _ := testenv.Store(t)
	keys := store.NewAPIKeys(db, store.Options{})
	key, id, hash, err := apikey.New()
	if err != nil {
		t.Fatal(err)
	}
	if err := keys.CreateAPIKey(ctx, store.APIKeyRecord{ID: id, TenantID: "nobody", Hash: hash}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("key of an unknown tenant: %v", err)
	}
	tn := &tenant.Tenant{ID: "acme", Name: "Acme", Language: "en", Audience: tenant.AudiencePublic,
		PhoneNumbers: []tenant.PhoneNumber{{PhoneNumberID: "100", WABAID: "200"}}}
	tn.ApplyDefaults()
	if _, err := store.NewTenants(db, store.Options{}).Apply(ctx, tn, false); err != nil {
		t.Fatal(err)
	}
	if err := keys.CreateAPIKey(ctx, store.APIKeyRecord{ID: id, TenantID: "acme", Hash: hash}); err != nil {
		t.Fatal(err)
	}
	gotID, ok := apikey.ID(key)
	rec, err := keys.GetAPIKey(ctx, gotID)
	if !ok || err != nil || !apikey.Match(key, rec.Hash) || rec.Revoked() || rec.TenantID != "acme" {
		t.Fatalf("lookup: ok=%v %+v %v", ok, rec, err)
	}
	if apikey.Match(key+"x", rec.Hash) {
		t.Fatal("a wrong key matches")
	}
	if err := keys.RevokeAPIKey(ctx, id); err != nil {
		t.Fatal(err)
	}
	if rec, _ := keys.GetAPIKey(ctx, id); !rec.Revoked() {
		t.Fatal("revoked key not revoked")
	}
}
