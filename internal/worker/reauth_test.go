package worker_test

import (
	"context"
	"testing"
	"time"

	"github.com/wapipe/wapipe/internal/keyedid"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/tenantcache"
	"github.com/wapipe/wapipe/internal/testenv"
	"github.com/wapipe/wapipe/internal/worker"
	"github.com/wapipe/wapipe/tasks"
)

// TestRefusedTokenIsNotUsedAgain: once the Graph API refused a tenant's token, the worker that
// learnt it makes no further call with it (no send, no mark-as-read), although its cached tenant
// record still says ok: the next replies park without a Graph call. The tenant cache lives a
// minute here, so without the refusal the stale record would send with the refused token.
func TestRefusedTokenIsNotUsedAgain(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{worker: []func(*worker.Deps){func(d *worker.Deps) {
		d.Tenants = tenantcache.NewTenantCache(d.Members.(tenantcache.TenantReader), time.Minute)
	}}})
	const refused = "tenant-token-refused"
	a := s.applyTenant(s.ops(), tenantFile("acme-bus", numberA, "en", "public", ""), refused)
	s.Graph.RevokeToken(refused)
	ctx := context.Background()
	parked := func(id string) {
		t.Helper()
		testenv.Eventually(t, 20*time.Second, func() bool {
			rec, err := s.records.GetOutbound(ctx, tasks.IdempotencyKey(keyedid.Dev(), id))
			return err == nil && rec.State == store.OutboundParked
		}, "the reply to %s never parked", id)
	}
	first := s.say(numberA, contact, "hello")
	parked(first)
	var later []string
	for _, text := range []string{"one more", "and another", "still there?"} {
		id := s.say(numberA, contact, text)
		parked(id)
		later = append(later, id)
	}
	s.idle(tasks.TenantQueueID(a))

	// The first message's send and its mark-as-read run side by side, before the refusal is
	// known: those two at most. (The fake refuses a revoked token before it reads the call, so
	// the calls are counted by token, not by kind.)
	calls := 0
	for _, r := range s.Graph.Requests() {
		if r.Token == refused {
			calls++
		}
	}
	if calls == 0 || calls > 2 {
		t.Errorf("%d calls with the refused token for %d messages, want 1 or 2 (the first message's send and mark-as-read)", calls, 1+len(later))
	}
	if n := s.logs.Count("tenant_needs_reauth"); n != 1 {
		t.Errorf("tenant_needs_reauth logged %d times, want once", n)
	}
}
