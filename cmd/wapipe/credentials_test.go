package main

import (
	"context"
	"strings"
	"testing"

	"github.com/wapipe/wapipe/internal/actioncall"
	"github.com/wapipe/wapipe/internal/apikey"
	"github.com/wapipe/wapipe/internal/store"
)

func TestTenantsCredentialsPrintedOnce(t *testing.T) {
	e := newTenantEnv(t)
	t.Setenv("APP_ENV", "dev")
	t.Setenv("KMS_KEY_NAME", "")
	mustCLI(t, e.args("apply", "-f", sampleFile)...)
	ctx := context.Background()

	key := lastLine(mustCLI(t, e.args("api-key", "sunrise-bus")...))
	id, ok := apikey.ID(key)
	if !ok {
		t.Fatalf("api-key printed %q, not a key", key)
	}
	rec, err := store.NewAPIKeys(store.NewDB(e.fs), store.Options{}).GetAPIKey(ctx, id)
	if err != nil || rec.TenantID != "sunrise-bus" || !apikey.Match(key, rec.Hash) || strings.Contains(rec.Hash, key) {
		t.Fatalf("stored key %+v %v", rec, err)
	}

	link := lastLine(mustCLI(t, e.args("connect-link", "--public-url", "https://api.example", "sunrise-bus")...))
	if !strings.HasPrefix(link, "https://api.example/integrations/meta/whatsapp/connect?state=") {
		t.Fatalf("connect-link printed %q", link)
	}
	if _, _, err := cli(t, e.args("connect-link", "--public-url", "", "sunrise-bus")...); err == nil {
		t.Fatal("connect-link without a public URL succeeded")
	}

	secret := lastLine(mustCLI(t, e.args("action-secret", "sunrise-bus")...))
	snap, err := e.fs.Collection(store.TenantsCollection).Doc("sunrise-bus").Get(ctx)
	if err != nil || !strings.HasPrefix(secret, actioncall.SecretPrefix) {
		t.Fatalf("action-secret printed %q: %v", secret, err)
	}
	sealed, _ := snap.DataAt("action_secret")
	if b, _ := sealed.([]byte); len(b) == 0 || strings.Contains(string(b), secret) {
		t.Fatal("action secret not stored sealed")
	}
	if _, _, err := cli(t, e.args("api-key", "nobody")...); err == nil {
		t.Fatal("api-key of an unknown tenant succeeded")
	}
}
