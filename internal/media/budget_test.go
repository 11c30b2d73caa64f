package media_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"testing"
	"time"

	"github.com/wapipe/wapipe/internal/assistant"
	"github.com/wapipe/wapipe/internal/graph"
	"github.com/wapipe/wapipe/internal/graph/graphfake"
	"github.com/wapipe/wapipe/internal/media"
)

// TestBudget: charges add up to the budget's size; a charge that does not fit within the wait
// fails with ErrBusy (which the assistant redoes later: assistant.ErrRetry) and takes nothing;
// one turn is never charged more than the whole budget; Release gives everything back, once.
func TestBudget(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b, err := media.NewBudget(100, 20*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	first, second := b.NewCharge(), b.NewCharge()
	if err := first.Add(ctx, 60); err != nil {
		t.Fatalf("first 60 of 100: %v", err)
	}
	err = second.Add(ctx, 50)
	if !errors.Is(err, media.ErrBusy) || !errors.Is(err, assistant.ErrRetry) {
		t.Fatalf("50 more with 60 of 100 held: %v, want ErrBusy wrapping assistant.ErrRetry", err)
	}
	if got := second.Held(); got != 0 || b.InUse() != 60 {
		t.Errorf("after the refusal: the charge holds %d, the budget %d in use; want 0 and 60", got, b.InUse())
	}
	if err := second.Add(ctx, 40); err != nil {
		t.Fatalf("40 more: %v", err)
	}
	first.Release()
	first.Release() // twice: nothing more given back
	if got := b.InUse(); got != 40 {
		t.Errorf("%d in use after the first released, want 40", got)
	}
	// Alone, a turn asking for more than the whole budget gets all of it, and runs.
	second.Release()
	big := b.NewCharge()
	if err := big.Add(ctx, 500); err != nil || big.Held() != 100 {
		t.Errorf("500 of an idle 100: %v, holding %d; want the whole budget", err, big.Held())
	}
	big.Release()
	if b.InUse() != 0 || b.Peak() != 100 {
		t.Errorf("in use %d, peak %d; want 0 and 100", b.InUse(), b.Peak())
	}
	// A charge waiting for budget gets it when another turn releases within the wait.
	patient, err := media.NewBudget(100, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	waiter, holder := patient.NewCharge(), patient.NewCharge()
	if err := holder.Add(ctx, 100); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- waiter.Add(ctx, 10) }()
	holder.Release()
	if err := <-done; err != nil {
		t.Errorf("charge waiting for a release: %v", err)
	}
	waiter.Release()
	// The nil charge (no budget) charges nothing.
	var none *media.Charge
	if err := none.Add(ctx, 1<<40); err != nil || none.Held() != 0 {
		t.Errorf("nil charge: %v, holding %d", err, none.Held())
	}
	none.Release()
}

// TestBudgetConfig: MEDIA_INFLIGHT_BYTES must hold one file at the cap, charged three times its
// size.
func TestBudgetConfig(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		cfg     media.Config
		wantErr bool
	}{
		{"defaults", media.Config{}, false},
		{"three files' worth", media.Config{MaxBytes: 1 << 20, InflightBytes: 3 << 20}, false},
		{"under one file's footprint", media.Config{MaxBytes: 1 << 20, InflightBytes: 3<<20 - 1}, true},
		{"default budget, 20 MiB cap", media.Config{MaxBytes: media.MaxAllowedBytes}, false},
		{"negative", media.Config{InflightBytes: -1}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g, err := graph.NewClient("https://graph.example/"+graph.Version, "", nil)
			if err != nil {
				t.Fatal(err)
			}
			f, err := media.New(g, tc.cfg)
			if (err != nil) != tc.wantErr {
				t.Fatalf("media.New: %v, want error %v", err, tc.wantErr)
			}
			if err == nil && tc.cfg.InflightBytes == 0 && f.Budget().Size() != media.DefaultInflightBytes {
				t.Errorf("budget %d, want the default %d", f.Budget().Size(), media.DefaultInflightBytes)
			}
		})
	}
}

// TestFetchCharges: a file of announced size n is charged Footprint*(n+1) before its download,
// and read into that one buffer; a file whose size the lookup understates, or does not give, is
// charged as it arrives (its outgrown buffers too). With the budget held by other turns, the
// fetch fails with ErrBusy before any download: nothing is read that cannot be charged.
func TestFetchCharges(t *testing.T) {
	t.Parallel()
	data := make([]byte, 300_000)
	if _, err := rand.Read(data); err != nil {
		t.Fatal(err)
	}
	n := int64(len(data))
	tests := []struct {
		name string
		opts []graphfake.MediaOption
		// want is the least and most the turn's charge may hold once the file is read.
		least, most int64
	}{
		{"size announced", nil, media.Footprint * (n + 1), media.Footprint * (n + 1)},
		{"size understated", []graphfake.MediaOption{graphfake.WithLookupFileSize(1000)}, media.Footprint * n, media.Footprint*2*n + 2*n},
		{"size unknown", []graphfake.MediaOption{graphfake.WithLookupFileSize(0), graphfake.WithoutContentLength()},
			media.Footprint * n, media.Footprint*2*n + 2*n},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newStack(t, media.Config{})
			m := msg("image", s.fake.AddMedia(data, "image/jpeg", tc.opts...), "", "")
			c := s.f.NewCharge()
			att, err := s.f.Fetch(context.Background(), token, m, c)
			if err != nil {
				t.Fatalf("Fetch: %v", err)
			}
			if !bytes.Equal(att.Data, data) || att.SHA256 != hexSHA(data) {
				t.Errorf("got %d bytes (sha256 %s), want the file's %d", len(att.Data), att.SHA256, n)
			}
			if got := c.Held(); got < tc.least || got > tc.most {
				t.Errorf("charged %d bytes for a %d-byte file, want %d to %d", got, n, tc.least, tc.most)
			}
			if got := s.f.Budget().InUse(); got != c.Held() {
				t.Errorf("budget in use %d, the turn's charge %d", got, c.Held())
			}
			c.Release()
			if got := s.f.Budget().InUse(); got != 0 {
				t.Errorf("%d bytes in use after release", got)
			}
		})
	}

	t.Run("budget held", func(t *testing.T) {
		t.Parallel()
		budget, err := media.NewBudget(media.DefaultInflightBytes, 50*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		s := newStack(t, media.Config{})
		f := s.f.WithBudget(budget)
		others := budget.NewCharge()
		if err := others.Add(context.Background(), media.DefaultInflightBytes-media.Footprint*n); err != nil {
			t.Fatal(err)
		}
		mf := s.fake.AddMedia(data, "image/jpeg")
		c := f.NewCharge()
		_, err = f.Fetch(context.Background(), token, msg("image", mf, "", ""), c)
		if !errors.Is(err, media.ErrBusy) || !errors.Is(err, assistant.ErrRetry) {
			t.Fatalf("Fetch with the budget held: %v, want ErrBusy (retry)", err)
		}
		for _, r := range s.fake.Requests() {
			if r.Kind == graphfake.KindDownload {
				t.Errorf("the file was downloaded without budget")
			}
		}
		if c.Held() != 0 {
			t.Errorf("the refused turn holds %d bytes", c.Held())
		}
		others.Release()
		if _, err := f.Fetch(context.Background(), token, msg("image", mf, "", ""), c); err != nil {
			t.Fatalf("Fetch once released: %v", err)
		}
		c.Release()
	})
}
