package media_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"log/slog"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"google.golang.org/genai"

	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/internal/media"
	"github.com/wapipe/wapipe/internal/testenv"
	"github.com/wapipe/wapipe/internal/whatsapp"
)

// benchStack is a fake Graph holding a 1 MB photo's worth of random bytes (random: nothing
// compresses on the way), the message naming it, and a context whose logger discards.
func benchStack(b *testing.B) (*stack, whatsapp.Message, context.Context) {
	s := newStack(b, media.Config{})
	data := make([]byte, 1_000_000)
	if _, err := rand.Read(data); err != nil {
		b.Fatal(err)
	}
	m := msg("image", s.fake.AddMedia(data, "image/jpeg"), "Bus 03 AC mati", "")
	return s, m, logging.WithLogger(context.Background(), slog.New(slog.DiscardHandler))
}

// fetchAndEncode is a turn's media overhead without the LLM: the Graph lookup and download
// over HTTP, the sha256 check, and the request part's JSON (base64) as the genai client encodes
// it.
func fetchAndEncode(ctx context.Context, f *media.Fetcher, m whatsapp.Message) (int, error) {
	att, err := f.Fetch(ctx, token, m, nil)
	if err != nil {
		return 0, err
	}
	body, err := json.Marshal(&genai.Content{Role: "user", Parts: []*genai.Part{
		{Text: "[The user sent a photo (image/jpeg), attached here.]"},
		{InlineData: &genai.Blob{MIMEType: att.MIMEType, Data: att.Data}},
		{Text: "Bus 03 AC mati"},
	}})
	return len(body), err
}

// BenchmarkFetchAndEncode1MB reports the overhead of one 1 MB image turn (excluding the LLM),
// with its median in p50-ms (the goal: under 60 ms on the local stack).
func BenchmarkFetchAndEncode1MB(b *testing.B) {
	s, m, ctx := benchStack(b)
	var times []time.Duration
	b.SetBytes(1_000_000)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		if _, err := fetchAndEncode(ctx, s.f, m); err != nil {
			b.Fatal(err)
		}
		times = append(times, time.Since(start))
		s.fake.Reset() // the fake's request log would grow without bound
	}
	b.StopTimer()
	slices.Sort(times)
	if len(times) > 0 {
		b.ReportMetric(float64(times[len(times)/2].Microseconds())/1000, "p50-ms")
		b.ReportMetric(float64(times[len(times)*99/100].Microseconds())/1000, "p99-ms")
	}
}

// BenchmarkFetch20AtOnce runs 20 such turns at once per iteration and reports the peak heap in
// use while they run (peak-heap-MiB; the goal for the worker: under 150 MiB), sampled
// every millisecond.
func BenchmarkFetch20AtOnce(b *testing.B) {
	s, m, ctx := benchStack(b)

	runtime.GC()
	var base runtime.MemStats
	runtime.ReadMemStats(&base)
	stop := testenv.HeapPeak(time.Millisecond)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		var wg sync.WaitGroup
		errs := make(chan error, 20)
		for range 20 {
			wg.Go(func() {
				if _, err := fetchAndEncode(ctx, s.f, m); err != nil {
					errs <- err
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			b.Fatal(err)
		}
		s.fake.Reset()
	}
	b.StopTimer()
	b.ReportMetric(float64(stop())/(1<<20), "peak-heap-MiB")
	b.ReportMetric(float64(base.HeapInuse)/(1<<20), "base-heap-MiB")
}
