package store_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/wapipe/wapipe/internal/assistant"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/tenant"
	"github.com/wapipe/wapipe/internal/testenv"
)

func newGuard(t *testing.T) *store.Guard {
	t.Helper()
	db, _ := testenv.Store(t)
	return store.NewGuard(db, store.Options{})
}

func TestReserveCallIsExactUnderConcurrency(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	g := newGuard(t)
	const turns, quota = 100, 50
	var mu sync.Mutex
	granted := 0
	var wg sync.WaitGroup
	start := make(chan struct{})
	began := time.Now()
	for i := range turns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			// One call of each of 100 conversations.
			dec, err := g.ReserveCall(ctx, assistant.CallReservation{TenantID: "acme-bus", Period: "2026-11",
				CallID: fmt.Sprintf("call-conv-%d", i), Limit: quota, Limited: true})
			if err != nil {
				t.Errorf("ReserveCall %d: %v", i, err)
				return
			}
			if dec.Granted {
				mu.Lock()
				granted++
				mu.Unlock()
			}
		}()
	}
	close(start)
	wg.Wait()
	t.Logf("figure: %d concurrent reservations in %v", turns, time.Since(began))
	if granted != quota {
		t.Errorf("%d calls granted, want %d", granted, quota)
	}
	usage, err := g.Usage(ctx, "acme-bus", "2026-11")
	if err != nil {
		t.Fatalf("Usage: %v", err)
	}
	if usage != quota {
		t.Errorf("usage = %d, want %d", usage, quota)
	}
}

func TestReserveCallIsIdempotentPerCallID(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	res := func(id string, limit int) assistant.CallReservation {
		return assistant.CallReservation{TenantID: "acme-bus", Period: "2026-11", CallID: id, Limit: limit, Limited: limit > 0}
	}
	tests := []struct {
		name      string
		calls     []assistant.CallReservation
		want      []bool
		wantUsage int
	}{
		{"a redone call is granted again without counting", []assistant.CallReservation{res("a", 2), res("a", 2), res("a", 2)}, []bool{true, true, true}, 1},
		{"a call granted before the quota was met stays granted", []assistant.CallReservation{res("a", 1), res("b", 1), res("a", 1)}, []bool{true, false, true}, 1},
		{"a refused call counts nothing", []assistant.CallReservation{res("a", 1), res("b", 1), res("b", 1)}, []bool{true, false, false}, 1},
		{"unlimited counts every call once", []assistant.CallReservation{res("a", 0), res("b", 0), res("a", 0)}, []bool{true, true, true}, 2},
		{"a raised quota grants again", []assistant.CallReservation{res("a", 1), res("b", 1), res("b", 2)}, []bool{true, false, true}, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g := newGuard(t)
			for i, c := range tc.calls {
				got, err := g.ReserveCall(ctx, c)
				if err != nil {
					t.Fatalf("ReserveCall %d: %v", i, err)
				}
				if got.Granted != tc.want[i] {
					t.Errorf("ReserveCall %d (%s) = %v, want %v", i, c.CallID, got, tc.want[i])
				}
			}
			if u, err := g.Usage(ctx, "acme-bus", "2026-11"); err != nil || u != tc.wantUsage {
				t.Errorf("Usage = %d, %v; want %d", u, err, tc.wantUsage)
			}
		})
	}
}

// TestReserveCallSenderShare: one contact's calls are capped at its share of the month while
// the tenant's quota has room, exactly under concurrency; the refusal says it is the contact's;
// other contacts and other months are not affected; a redone call is not counted twice.
func TestReserveCallSenderShare(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	g := newGuard(t)
	const share, quota, turns = 4, 100, 20
	res := func(sender, period, id string) assistant.CallReservation {
		return assistant.CallReservation{TenantID: "acme-bus", Period: period, CallID: id, Limit: quota, Limited: true,
			Sender: sender, SenderLimit: share, SenderLimited: true}
	}
	var mu sync.Mutex
	granted, shareRefusals := 0, 0
	var wg sync.WaitGroup
	for i := range turns {
		wg.Go(func() {
			dec, err := g.ReserveCall(ctx, res("6281111", "2026-11", fmt.Sprintf("call-a-%d", i)))
			if err != nil {
				t.Errorf("ReserveCall %d: %v", i, err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if dec.Granted {
				granted++
			}
			if dec.SenderShare {
				shareRefusals++
			}
		})
	}
	wg.Wait()
	if granted != share || shareRefusals != turns-share {
		t.Errorf("%d granted and %d refused as the contact's share, want %d and %d", granted, shareRefusals, share, turns-share)
	}
	if dec, err := g.ReserveCall(ctx, res("6281111", "2026-11", "call-a-0")); err != nil || (dec.Granted && dec.SenderShare) {
		t.Errorf("a redone call: %+v, %v", dec, err)
	}
	if dec, err := g.ReserveCall(ctx, res("6282222", "2026-11", "call-b-0")); err != nil || !dec.Granted {
		t.Errorf("another contact: %+v, %v; want granted", dec, err)
	}
	if dec, err := g.ReserveCall(ctx, res("6281111", "2026-12", "call-a-dec")); err != nil || !dec.Granted {
		t.Errorf("the same contact next month: %+v, %v; want granted", dec, err)
	}
	raised := res("6281111", "2026-11", "call-a-raised")
	raised.SenderLimit = share + 1
	if dec, err := g.ReserveCall(ctx, raised); err != nil || !dec.Granted {
		t.Errorf("a raised share: %+v, %v; want granted", dec, err)
	}
	if u, err := g.Usage(ctx, "acme-bus", "2026-11"); err != nil || u != share+2 {
		t.Errorf("tenant usage = %d, %v; want %d: refusals count nothing", u, err, share+2)
	}
	// The tenant's quota refuses before the share, and says so.
	full := res("6283333", "2026-11", "call-c-0")
	full.Limit = share + 2
	if dec, err := g.ReserveCall(ctx, full); err != nil || dec.Granted || dec.SenderShare {
		t.Errorf("tenant quota used up: %+v, %v; want refused, not as the contact's share", dec, err)
	}
}

func TestUsageAndOverQuota(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	g := newGuard(t)
	reserve := func(tenantID, period string, n int) {
		for i := range n {
			if _, err := g.ReserveCall(ctx, assistant.CallReservation{TenantID: tenantID, Period: period, CallID: fmt.Sprint(tenantID, period, i)}); err != nil {
				t.Fatalf("ReserveCall: %v", err)
			}
		}
	}
	reserve("full", "2026-11", 2)
	reserve("under", "2026-11", 1)
	reserve("unlimited", "2026-11", 3)
	reserve("under", "2026-10", 5) // last month's usage does not count
	if u, err := g.Usage(ctx, "nobody", "2026-11"); err != nil || u != 0 {
		t.Errorf("Usage of a tenant with no calls = %d, %v; want 0", u, err)
	}
	if u, err := g.Usage(ctx, "under", "2026-10"); err != nil || u != 5 {
		t.Errorf("Usage = %d, %v; want 5", u, err)
	}
	ids, err := g.OverQuota(ctx, "2026-11", map[string]int{"full": 2, "under": 2, "idle": 1})
	if err != nil {
		t.Fatalf("OverQuota: %v", err)
	}
	if !slices.Equal(ids, []string{"full"}) {
		t.Errorf("OverQuota = %v, want [full]", ids)
	}
}

func TestSenderWindowIsExactUnderConcurrency(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	g := newGuard(t)
	const hits = 25
	limit := tenant.Limit{Max: 20, Per: 5 * time.Minute}
	at := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	var limited, first int
	decisions := map[string]assistant.RateDecision{}
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range hits {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			d, err := g.HitSender(ctx, assistant.SenderHit{TenantID: "acme-bus", Sender: "6281234567890",
				MessageID: fmt.Sprintf("wamid.%d", i), At: at.Add(time.Duration(i) * time.Millisecond), Limit: limit})
			if err != nil {
				t.Errorf("HitSender %d: %v", i, err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			decisions[fmt.Sprintf("wamid.%d", i)] = d
			if d.Limited {
				limited++
			}
			if d.First {
				first++
			}
		}()
	}
	close(start)
	wg.Wait()
	if limited != hits-limit.Max || first != 1 {
		t.Errorf("%d limited (%d first), want %d limited and exactly one first", limited, first, hits-limit.Max)
	}
	// A redone turn gets the answer its first attempt got, and counts nothing.
	again, err := g.HitSender(ctx, assistant.SenderHit{TenantID: "acme-bus", Sender: "6281234567890", MessageID: "wamid.0", At: at, Limit: limit})
	if err != nil {
		t.Fatalf("HitSender again: %v", err)
	}
	if again != decisions["wamid.0"] {
		t.Errorf("wamid.0 counted again = %+v, want its first answer %+v", again, decisions["wamid.0"])
	}
	if next, err := g.HitSender(ctx, assistant.SenderHit{TenantID: "acme-bus", Sender: "6281234567890", MessageID: "wamid.new", At: at, Limit: limit}); err != nil || !next.Limited || next.First {
		t.Errorf("a 26th message = %+v, %v; want silently limited", next, err)
	}
	// Another sender has a window of its own.
	if d, err := g.HitSender(ctx, assistant.SenderHit{TenantID: "acme-bus", Sender: "628999", MessageID: "wamid.x", At: at, Limit: limit}); err != nil || d.Limited {
		t.Errorf("another sender's first message = %+v, %v; want not limited", d, err)
	}
}
