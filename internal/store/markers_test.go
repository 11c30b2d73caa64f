package store_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"cloud.google.com/go/firestore"
	"github.com/google/go-cmp/cmp"

	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/testenv"
)

func newMarkers(t *testing.T) (*store.Markers, *firestore.Client, *clock) {
	fs, _ := testenv.Firestore(t)
	clk := &clock{now: time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)}
	return store.NewMarkers(store.NewDB(fs), store.MarkerOptions{TTL: 7 * 24 * time.Hour, Now: clk.Now,
		EventRef: func(id string) string { return "ev_" + id[len(id)-3:] }}), fs, clk
}

// TestMarkIfNew: the first call marks the event, every later one finds it marked, and the
// marker keeps its first delivery's fields.
func TestMarkIfNew(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, fs, clk := newMarkers(t)
	for i, want := range []bool{true, false, false} {
		clk.Add(time.Hour)
		got, err := s.MarkIfNew(ctx, "wamid.B/+=", "corr-"+string(rune('1'+i)))
		if err != nil || got != want {
			t.Fatalf("delivery %d: MarkIfNew = %v, %v; want %v", i+1, got, err, want)
		}
	}
	m, err := s.Get(ctx, "wamid.B/+=")
	if err != nil {
		t.Fatal(err)
	}
	created := time.Date(2026, 11, 22, 11, 0, 0, 0, time.UTC)
	want := store.Marker{EventID: "wamid.B/+=", State: store.MarkerReceived, CorrelationID: "corr-1",
		CreatedAt: created, ExpireAt: created.Add(7 * 24 * time.Hour), EventRef: "ev_/+="}
	if diff := cmp.Diff(want, m, cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) })); diff != "" {
		t.Errorf("marker (-want, +got):\n%s", diff)
	}
	// The id holds characters Firestore forbids in ids: it must be stored under its hash.
	if _, err := fs.Collection(store.InboundEvents).Doc(store.DocID("wamid.B/+=")).Get(ctx); err != nil {
		t.Errorf("marker not at its hashed id: %v", err)
	}
	if _, err := s.Get(ctx, "nope"); err != store.ErrNotFound {
		t.Errorf("Get(missing) = %v, want ErrNotFound", err)
	}
}

// TestConcurrentMarkIfNew: of 50 deliveries of one event at once, exactly one marks it new.
func TestConcurrentMarkIfNew(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _, _ := newMarkers(t)
	var isNew, seen atomic.Int32
	var wg sync.WaitGroup
	errs := make(chan error, 50)
	for range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fresh, err := s.MarkIfNew(ctx, "wamid.C", "corr")
			switch {
			case err != nil:
				errs <- err
			case fresh:
				isNew.Add(1)
			default:
				seen.Add(1)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if isNew.Load() != 1 || seen.Load() != 49 {
		t.Fatalf("new=%d seen=%d, want 1 and 49", isNew.Load(), seen.Load())
	}
}
