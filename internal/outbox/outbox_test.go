package outbox_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/wapipe/wapipe/internal/graph"
	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/internal/outbox"
	"github.com/wapipe/wapipe/internal/refusal"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/taskqueue"
	"github.com/wapipe/wapipe/internal/tenant"
	"github.com/wapipe/wapipe/internal/testenv"
	"github.com/wapipe/wapipe/tasks"
)

func TestMain(m *testing.M) { os.Exit(testenv.RunWithFirestore(m)) }

// withKey is an Outbox whose LOG_HASH_KEY is key (at least 32 bytes).
func withKey(key string) *outbox.Outbox {
	h, err := logging.NewHasher(key)
	if err != nil {
		panic(err)
	}
	return &outbox.Outbox{Hasher: h}
}

// TestMessageIDIsKeyed: knowing a tenant id and an Idempotency-Key does not give the message id,
// hence not the record key either (issue 21): the id depends on the server's secret, and is none
// of the hashes computable without it.
func TestMessageIDIsKeyed(t *testing.T) {
	t.Parallel()
	server := withKey(strings.Repeat("s", 40))
	id := server.MessageID("acme-bus", "order-42")
	plain := sha256.Sum256([]byte("api\x00acme-bus\x00order-42"))
	for _, tc := range []struct {
		name  string
		guess string
	}{
		{"the unkeyed hash used before", "msg_" + hex.EncodeToString(plain[:16])},
		{"the same derivation with the public dev key", (&outbox.Outbox{Hasher: logging.DevHasher()}).MessageID("acme-bus", "order-42")},
		{"the same derivation with another key", withKey(strings.Repeat("x", 40)).MessageID("acme-bus", "order-42")},
		{"another tenant, same key", server.MessageID("bali-tours", "order-42")},
		{"same tenant, another key", server.MessageID("acme-bus", "order-43")},
	} {
		if tc.guess == id || tasks.SendKey(tc.guess) == tasks.SendKey(id) {
			t.Errorf("%s gives the id", tc.name)
		}
	}
	if again := server.MessageID("acme-bus", "order-42"); again != id {
		t.Errorf("the same tenant and key give %s then %s: a replay would not find its message", id, again)
	}
	if len(id) != len("msg_")+32 || !strings.HasPrefix(id, "msg_") {
		t.Errorf("id %q: want msg_ and 32 hex digits (the api's id form)", id)
	}
}

type enqueued struct {
	mu    sync.Mutex
	tasks []taskqueue.Task
}

func (e *enqueued) Enqueue(_ context.Context, t taskqueue.Task) (taskqueue.Result, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.tasks = append(e.tasks, t)
	return taskqueue.Result{Name: t.ID}, nil
}

// TestIdempotencyKeyReplayFindsARecordMadeBeforeKeying: a record made under the unkeyed id
// (before this change) is still the answer to a replay of its Idempotency-Key, so the message is
// not sent twice; a new key gets the keyed id. Against the Firestore emulator.
func TestIdempotencyKeyReplayFindsARecordMadeBeforeKeying(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, _ := testenv.Store(t)
	tenants := store.NewTenants(db, store.Options{})
	tn := &tenant.Tenant{ID: "acme-bus", Name: "Acme", Language: "en", Audience: tenant.AudiencePublic,
		PhoneNumbers: []tenant.PhoneNumber{{PhoneNumberID: "100", WABAID: "200"}}}
	tn.ApplyDefaults()
	if _, err := tenants.Apply(ctx, tn, false); err != nil {
		t.Fatal(err)
	}
	sends := store.NewSends(db, store.Options{})
	q := &enqueued{}
	ob := withKey(strings.Repeat("s", 40))
	ob.Tenants, ob.Sends, ob.Tasks = tenants, sends, q
	msg := graph.Message{Type: "template", Template: &graph.Template{Name: "hello", Language: graph.Language{Code: "en"}}}
	req := outbox.Request{TenantID: "acme-bus", To: "33612345678", Message: msg, IdempotencyKey: "old-key"}

	// What the api stored before ids were keyed, for Idempotency-Key old-key.
	first, err := (&outbox.Outbox{Tenants: tenants, Sends: legacyOnly{sends}, Tasks: q, Hasher: ob.Hasher}).Send(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	plain := sha256.Sum256([]byte("api\x00acme-bus\x00old-key"))
	legacyID := "msg_" + hex.EncodeToString(plain[:16])
	if _, err := sends.GetSend(ctx, tasks.SendKey(legacyID)); err != nil {
		t.Fatalf("legacy record not stored: %v (first id %s)", err, first.ID)
	}

	replay, err := ob.Send(ctx, req)
	if err != nil || replay.ID != legacyID || !replay.Replay {
		t.Fatalf("replay of a key used before keying: id %s replay %v (%v), want %s, a replay", replay.ID, replay.Replay, err, legacyID)
	}
	other := req
	other.To = "33600000000"
	if _, err := ob.Send(ctx, other); err == nil || !strings.Contains(err.Error(), refusal.IdempotencyKeyReused) {
		t.Errorf("the old key with another body: %v, want %s", err, refusal.IdempotencyKeyReused)
	}
	fresh := req
	fresh.IdempotencyKey = "new-key"
	res, err := ob.Send(ctx, fresh)
	if err != nil || res.ID != ob.MessageID("acme-bus", "new-key") || res.Replay {
		t.Errorf("a new key: id %s replay %v (%v), want the keyed id, new", res.ID, res.Replay, err)
	}
}

// legacyOnly makes an Outbox store its record under the unkeyed id, as the code before keying
// did: it rewrites the key and id of the record CreateSend makes.
type legacyOnly struct{ *store.Sends }

func (l legacyOnly) CreateSend(ctx context.Context, seed store.OutboundRecord) (store.OutboundRecord, bool, error) {
	plain := sha256.Sum256([]byte("api\x00" + seed.TenantID + "\x00old-key"))
	seed.APIMessageID = "msg_" + hex.EncodeToString(plain[:16])
	seed.IdempotencyKey = tasks.SendKey(seed.APIMessageID)
	return l.Sends.CreateSend(ctx, seed)
}
