package store_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/wapipe/wapipe/internal/assistant"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/tenant"
	"github.com/wapipe/wapipe/internal/testenv"
	"github.com/wapipe/wapipe/internal/turnstate"
)

// The store's Guard is the assistant's, on Firestore. The check lives in a test so that the
// store's build does not import package assistant (and the LLM client with it).
var _ assistant.Guard = (*store.Guard)(nil)

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
			dec, err := g.ReserveCall(ctx, turnstate.CallReservation{TenantID: "acme-bus", Period: "2026-11",
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
	res := func(id string, limit int) turnstate.CallReservation {
		return turnstate.CallReservation{TenantID: "acme-bus", Period: "2026-11", CallID: id, Limit: limit, Limited: limit > 0}
	}
	tests := []struct {
		name      string
		calls     []turnstate.CallReservation
		want      []bool
		wantUsage int
	}{
		{"a redone call is granted again without counting", []turnstate.CallReservation{res("a", 2), res("a", 2), res("a", 2)}, []bool{true, true, true}, 1},
		{"a call granted before the quota was met stays granted", []turnstate.CallReservation{res("a", 1), res("b", 1), res("a", 1)}, []bool{true, false, true}, 1},
		{"a refused call counts nothing", []turnstate.CallReservation{res("a", 1), res("b", 1), res("b", 1)}, []bool{true, false, false}, 1},
		{"unlimited counts every call once", []turnstate.CallReservation{res("a", 0), res("b", 0), res("a", 0)}, []bool{true, true, true}, 2},
		{"a raised quota grants again", []turnstate.CallReservation{res("a", 1), res("b", 1), res("b", 2)}, []bool{true, false, true}, 2},
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
	res := func(sender, period, id string) turnstate.CallReservation {
		return turnstate.CallReservation{TenantID: "acme-bus", Period: period, CallID: id, Limit: quota, Limited: true,
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
			if _, err := g.ReserveCall(ctx, turnstate.CallReservation{TenantID: tenantID, Period: period, CallID: fmt.Sprint(tenantID, period, i)}); err != nil {
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
	decisions := map[string]turnstate.RateDecision{}
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range hits {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			d, err := g.HitSender(ctx, turnstate.SenderHit{TenantID: "acme-bus", Sender: "6281234567890",
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
	again, err := g.HitSender(ctx, turnstate.SenderHit{TenantID: "acme-bus", Sender: "6281234567890", MessageID: "wamid.0", At: at, Limit: limit})
	if err != nil {
		t.Fatalf("HitSender again: %v", err)
	}
	if again != decisions["wamid.0"] {
		t.Errorf("wamid.0 counted again = %+v, want its first answer %+v", again, decisions["wamid.0"])
	}
	if next, err := g.HitSender(ctx, turnstate.SenderHit{TenantID: "acme-bus", Sender: "6281234567890", MessageID: "wamid.new", At: at, Limit: limit}); err != nil || !next.Limited || next.First {
		t.Errorf("a 26th message = %+v, %v; want silently limited", next, err)
	}
	// Another sender has a window of its own.
	if d, err := g.HitSender(ctx, turnstate.SenderHit{TenantID: "acme-bus", Sender: "628999", MessageID: "wamid.x", At: at, Limit: limit}); err != nil || d.Limited {
		t.Errorf("another sender's first message = %+v, %v; want not limited", d, err)
	}
}

// newGuardFS returns a guard and a client on the same project, to read the usage documents.
func newGuardFS(t *testing.T) (*store.Guard, *firestore.Client) {
	t.Helper()
	fs, _ := testenv.Firestore(t)
	return store.NewGuard(store.NewDB(fs), store.Options{}), fs
}

// usageDocs reads a tenant's usage document's own count and its shards' counts.
func usageDocs(t *testing.T, fs *firestore.Client, tenantID, period string) (own int, shards map[string]int) {
	t.Helper()
	ctx := context.Background()
	ref := fs.Collection(store.Usage).Doc(store.UsageID(tenantID, period))
	if snap, err := ref.Get(ctx); err == nil {
		n, _ := snap.DataAt("count")
		own = int(n.(int64))
	} else if status.Code(err) != codes.NotFound {
		t.Fatalf("read usage document: %v", err)
	}
	shards = map[string]int{}
	snaps, err := ref.Collection(store.UsageShards).Documents(ctx).GetAll()
	if err != nil {
		t.Fatalf("read usage shards: %v", err)
	}
	for _, s := range snaps {
		n, _ := s.DataAt("count")
		shards[s.Ref.ID] = int(n.(int64))
	}
	return own, shards
}

// TestReserveCallSpreadsOverShards: a busy tenant's calls do not all write one document. Far
// from the quota each call increments one of 32 shards, taken in turn, so 96 calls write each
// shard 3 times and the usage document not at all; the usage is the sum.
func TestReserveCallSpreadsOverShards(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tests := []struct {
		name  string
		quota int
	}{
		{"unlimited", 0},
		{"far from the quota", 1000},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g, fs := newGuardFS(t)
			const calls = 96
			// One after another: concurrent calls spread the same way, but a lost
			// compare-and-set (which a redo follows) moves the next call one shard on.
			for i := range calls {
				dec, err := g.ReserveCall(ctx, turnstate.CallReservation{TenantID: "acme-bus", Period: "2026-11",
					CallID: fmt.Sprintf("call-%d", i), Limit: tc.quota, Limited: tc.quota > 0, Sender: fmt.Sprint("62811", i)})
				if err != nil || !dec.Granted {
					t.Fatalf("ReserveCall %d = %+v, %v; want granted", i, dec, err)
				}
			}
			own, shards := usageDocs(t, fs, "acme-bus", "2026-11")
			if own != 0 || len(shards) != 32 {
				t.Errorf("usage document %d, %d shards; want 0 and 32", own, len(shards))
			}
			for id, n := range shards {
				if n != calls/32 {
					t.Errorf("shard %s took %d calls, want %d", id, n, calls/32)
				}
			}
			if u, err := g.Usage(ctx, "acme-bus", "2026-11"); err != nil || u != calls {
				t.Errorf("Usage = %d, %v; want %d", u, err, calls)
			}
		})
	}
}

// TestReserveCallCountsTheTailExactly: the last store.ExactTail calls of a quota are counted on
// the tenant's one usage document, so a quota is met exactly: the calls before the tail go to
// the shards, the tail's to the document, and nothing past the quota. A usage document written
// before the shards existed (last month's deployment) still counts.
func TestReserveCallCountsTheTailExactly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	g, fs := newGuardFS(t)
	const quota, before = store.ExactTail + 30, 5
	if _, err := fs.Collection(store.Usage).Doc(store.UsageID("acme-bus", "2026-11")).Set(ctx,
		map[string]any{"tenant_id": "acme-bus", "period": "2026-11", "count": before}); err != nil {
		t.Fatal(err)
	}
	granted := 0
	for i := range quota + 10 {
		dec, err := g.ReserveCall(ctx, turnstate.CallReservation{TenantID: "acme-bus", Period: "2026-11",
			CallID: fmt.Sprintf("call-%d", i), Limit: quota, Limited: true})
		if err != nil {
			t.Fatalf("ReserveCall %d: %v", i, err)
		}
		if dec.Granted {
			granted++
		}
	}
	if granted != quota-before {
		t.Errorf("%d calls granted, want %d", granted, quota-before)
	}
	own, shards := usageDocs(t, fs, "acme-bus", "2026-11")
	sharded := 0
	for _, n := range shards {
		sharded += n
	}
	if want := quota - store.ExactTail - before; sharded != want || own != before+store.ExactTail {
		t.Errorf("shards took %d calls and the usage document counts %d; want %d and %d", sharded, own, want, before+store.ExactTail)
	}
	if u, err := g.Usage(ctx, "acme-bus", "2026-11"); err != nil || u != quota {
		t.Errorf("Usage = %d, %v; want %d", u, err, quota)
	}
	if ids, err := g.OverQuota(ctx, "2026-11", map[string]int{"acme-bus": quota}); err != nil || !slices.Equal(ids, []string{"acme-bus"}) {
		t.Errorf("OverQuota = %v, %v; want [acme-bus]", ids, err)
	}
}

// TestReserveCallQuotaMarginUnderConcurrency: with the shards, a quota past store.ExactTail is
// kept within its documented margin under concurrency: every call refused was refused at the
// quota (no call lost below it), and at most the reservations in flight at once (here 20) pass
// it. The usage counts exactly the calls granted.
func TestReserveCallQuotaMarginUnderConcurrency(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	g := newGuard(t)
	const quota, calls, inFlight = store.ExactTail + 150, 300, 20
	var granted atomic.Int64
	ids := make(chan int)
	var wg sync.WaitGroup
	for range inFlight {
		wg.Go(func() {
			for i := range ids {
				dec, err := g.ReserveCall(ctx, turnstate.CallReservation{TenantID: "acme-bus", Period: "2026-11",
					CallID: fmt.Sprintf("call-%d", i), Limit: quota, Limited: true, Sender: fmt.Sprint("62811", i)})
				if err != nil {
					t.Errorf("ReserveCall %d: %v", i, err)
				}
				if dec.Granted {
					granted.Add(1)
				}
			}
		})
	}
	for i := range calls {
		ids <- i
	}
	close(ids)
	wg.Wait()
	n := int(granted.Load())
	t.Logf("figure: %d granted of a quota of %d, %d in flight", n, quota, inFlight)
	if n < quota || n > quota+inFlight {
		t.Errorf("%d calls granted, want %d to %d", n, quota, quota+inFlight)
	}
	if u, err := g.Usage(ctx, "acme-bus", "2026-11"); err != nil || u != n {
		t.Errorf("Usage = %d, %v; want the %d granted", u, err, n)
	}
}
