package store_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/testenv"
)

// TestStrandedConversations: Stranded finds the conversations whose lease expired before the
// cutoff and was never released (a holder killed mid-drain), and none other: not a lease still
// held, not one that expired after the cutoff (the grace), not a released one, not one never
// taken. ClearExpiredLease then releases such a lease, so it is not found again, but leaves a
// lease taken over since (a higher fence) alone.
func TestStrandedConversations(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, _ := testenv.Store(t)
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *store.ConversationStore {
		return store.NewConversationStore(db, store.Options{Now: func() time.Time { return now.Add(d) }})
	}
	touch := &store.Touch{TenantID: "acme-bus", PhoneNumberID: "1065", ContactID: "ct_1", InboundAt: now}
	take := func(id string, ago, lease time.Duration) store.Lease {
		t.Helper()
		conv, taken, err := at(-ago).Acquire(ctx, id, "holder-"+id, lease, touch)
		if err != nil || !taken {
			t.Fatalf("Acquire %s: %v, %v", id, taken, err)
		}
		return conv.Lease
	}
	// Killed five minutes ago holding a 60 s lease; killed 90 s ago (expired 30 s ago, inside a
	// one-minute grace); holding now; drained and released four minutes ago.
	killed := take("conv_killed", 5*time.Minute, time.Minute)
	take("conv_recent", 90*time.Second, time.Minute)
	take("conv_held", 10*time.Second, time.Minute)
	released := take("conv_released", 5*time.Minute, time.Minute)
	if err := at(-4*time.Minute).Release(ctx, "conv_released", released); err != nil {
		t.Fatal(err)
	}

	ids := func() []string {
		t.Helper()
		convs, err := at(0).Stranded(ctx, now.Add(-time.Minute), 10)
		if err != nil {
			t.Fatalf("Stranded: %v", err)
		}
		var ids []string
		for _, c := range convs {
			ids = append(ids, c.ID)
		}
		return ids
	}
	if got := ids(); !slices.Equal(got, []string{"conv_killed"}) {
		t.Fatalf("Stranded = %v, want [conv_killed]", got)
	}

	// A lease taken over since the sweep read it is not released.
	taker := take("conv_killed", 0, -time.Second) // taken and expired at once: free again, fence 2
	if taker.Fence != killed.Fence+1 {
		t.Fatalf("take-over fence %d, want %d", taker.Fence, killed.Fence+1)
	}
	if cleared, err := at(0).ClearExpiredLease(ctx, "conv_killed", killed); err != nil || cleared {
		t.Errorf("ClearExpiredLease with the old fence = %v, %v; want not cleared", cleared, err)
	}
	// A lease not expired yet is not released.
	held, err := at(0).Get(ctx, "conv_held")
	if err != nil {
		t.Fatal(err)
	}
	if cleared, err := at(0).ClearExpiredLease(ctx, "conv_held", held.Lease); err != nil || cleared {
		t.Errorf("ClearExpiredLease of a held lease = %v, %v; want not cleared", cleared, err)
	}
	// The expired one is, and is no longer stranded; its fence stays.
	if cleared, err := at(0).ClearExpiredLease(ctx, "conv_killed", taker); err != nil || !cleared {
		t.Fatalf("ClearExpiredLease = %v, %v; want cleared", cleared, err)
	}
	if got := ids(); len(got) != 0 {
		t.Errorf("Stranded after the release = %v, want none", got)
	}
	conv, err := at(0).Get(ctx, "conv_killed")
	if err != nil || conv.Lease.Holder != "" || conv.Lease.Fence != taker.Fence || !conv.Lease.Free(now) {
		t.Errorf("lease after the release = %+v (%v), want free with fence %d", conv.Lease, err, taker.Fence)
	}
}
