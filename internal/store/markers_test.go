package store_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"cloud.google.com/go/firestore"

	"github.com/wapipe/wapipe/internal/dedupe"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/testenv"
)

func newMarkers(t *testing.T) (*store.Markers, *firestore.Client, *clock) {
	fs, _ := testenv.Firestore(t)
	clk := &clock{now: time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)}
	return store.NewMarkers(store.NewDB(fs), store.MarkerOptions{TTL: 7 * 24 * time.Hour, Lease: 30 * time.Second, Now: clk.Now}), fs, clk
}

func TestLifecycle(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	type step struct {
		name   string
		do     func(s *store.Markers, clk *clock) (dedupe.Result, error)
		want   dedupe.Outcome
		over   bool
		attemp int64
	}
	begin := func(s *store.Markers, _ *clock) (dedupe.Result, error) { return s.Begin(ctx, "wamid.A", "corr") }
	tests := []struct {
		name  string
		steps []step
	}{
		{"new then in flight", []step{
			{"first", begin, dedupe.Acquired, false, 1},
			{"second while leased", begin, dedupe.InFlight, false, 1},
		}},
		{"completed is a duplicate", []step{
			{"first", begin, dedupe.Acquired, false, 1},
			{"complete and begin", func(s *store.Markers, c *clock) (dedupe.Result, error) {
				if err := s.Complete(ctx, "wamid.A", "projects/p/locations/l/queues/q/tasks/x"); err != nil {
					return dedupe.Result{}, err
				}
				return begin(s, c)
			}, dedupe.Duplicate, false, 1},
			{"even after the lease", func(s *store.Markers, c *clock) (dedupe.Result, error) {
				c.Add(time.Hour)
				return begin(s, c)
			}, dedupe.Duplicate, false, 1},
		}},
		{"released is taken over at once", []step{
			{"first", begin, dedupe.Acquired, false, 1},
			{"release and begin", func(s *store.Markers, c *clock) (dedupe.Result, error) {
				if err := s.Release(ctx, "wamid.A"); err != nil {
					return dedupe.Result{}, err
				}
				return begin(s, c)
			}, dedupe.Acquired, true, 2},
		}},
		{"stale lease is taken over", []step{
			{"first", begin, dedupe.Acquired, false, 1},
			{"just before the lease ends", func(s *store.Markers, c *clock) (dedupe.Result, error) {
				c.Add(29 * time.Second)
				return begin(s, c)
			}, dedupe.InFlight, false, 1},
			{"after the lease", func(s *store.Markers, c *clock) (dedupe.Result, error) {
				c.Add(2 * time.Second)
				return begin(s, c)
			}, dedupe.Acquired, true, 2},
			{"the new owner holds a new lease", begin, dedupe.InFlight, false, 2},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, _, clk := newMarkers(t)
			for _, st := range tc.steps {
				got, err := st.do(s, clk)
				if err != nil {
					t.Fatalf("%s: %v", st.name, err)
				}
				if got.Outcome != st.want || got.TakenOver != st.over || got.Attempt != st.attemp {
					t.Fatalf("%s: got %v taken_over=%v attempt=%d, want %v taken_over=%v attempt=%d",
						st.name, got.Outcome, got.TakenOver, got.Attempt, st.want, st.over, st.attemp)
				}
			}
		})
	}
}

func TestMarkerFields(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, fs, clk := newMarkers(t)
	if _, err := s.Begin(ctx, "wamid.B/+=", "corr-1"); err != nil {
		t.Fatal(err)
	}
	m, err := s.Get(ctx, "wamid.B/+=")
	if err != nil {
		t.Fatal(err)
	}
	if want := clk.Now().Add(7 * 24 * time.Hour); !m.ExpireAt.Equal(want) {
		t.Errorf("expire_at = %v, want now + DEDUPE_TTL = %v", m.ExpireAt, want)
	}
	if m.State != dedupe.StatePending || m.CorrelationID != "corr-1" || m.EventID != "wamid.B/+=" {
		t.Errorf("marker = %+v", m)
	}
	// The id holds characters Firestore forbids in ids: it must be stored under its hash.
	if _, err := fs.Collection(store.InboundEvents).Doc(store.DocID("wamid.B/+=")).Get(ctx); err != nil {
		t.Errorf("marker not at its hashed id: %v", err)
	}
	if _, err := s.Get(ctx, "nope"); err != store.ErrNotFound {
		t.Errorf("Get(missing) = %v, want ErrNotFound", err)
	}
}

// TestConcurrentBegin: of 50 deliveries of one event at once, exactly one owns it.
func TestConcurrentBegin(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _, _ := newMarkers(t)
	var acquired, inFlight atomic.Int32
	var wg sync.WaitGroup
	errs := make(chan error, 50)
	for range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := s.Begin(ctx, "wamid.C", "corr")
			if err != nil {
				errs <- err
				return
			}
			switch r.Outcome {
			case dedupe.Acquired:
				acquired.Add(1)
			case dedupe.InFlight:
				inFlight.Add(1)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if acquired.Load() != 1 || inFlight.Load() != 49 {
		t.Fatalf("acquired=%d in_flight=%d, want 1 and 49", acquired.Load(), inFlight.Load())
	}
}

// TestStaleTakeoverRace: two deliveries finding the same stale marker cannot both take it over.
func TestStaleTakeoverRace(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _, clk := newMarkers(t)
	if _, err := s.Begin(ctx, "wamid.D", "corr"); err != nil {
		t.Fatal(err)
	}
	clk.Add(time.Minute)
	var acquired atomic.Int32
	var wg sync.WaitGroup
	for range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := s.Begin(ctx, "wamid.D", "corr")
			if err != nil {
				t.Error(err)
				return
			}
			if r.Outcome == dedupe.Acquired {
				acquired.Add(1)
			}
		}()
	}
	wg.Wait()
	if acquired.Load() != 1 {
		t.Fatalf("%d deliveries took over the stale marker, want 1", acquired.Load())
	}
}
