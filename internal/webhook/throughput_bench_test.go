package webhook_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wapipe/wapipe/internal/httpserver"
	"github.com/wapipe/wapipe/internal/httpserver/httpservertest"
	"github.com/wapipe/wapipe/internal/testenv"
	"github.com/wapipe/wapipe/internal/webhook"
	"github.com/wapipe/wapipe/internal/whatsapp"
)

// BenchmarkThroughputAt80 is one webhook instance at Cloud Run's default concurrency: 80
// deliveries in flight at all times (1 KB texts, each new), against the Firestore emulator and a
// Cloud Tasks emulator (the inbound queue paused). It reports deliveries answered per second and
// the CPU per delivery: the whole test process's, so it also counts the in-process Cloud Tasks
// emulator and the HTTP client, an upper bound for the service (the Firestore emulator is a
// process of its own and not counted).
//
//	go test -run '^$' -bench ThroughputAt80 -benchtime 4000x ./internal/webhook/
func BenchmarkThroughputAt80(b *testing.B) {
	e := newEnv(b, envOptions{})
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 80, MaxConnsPerHost: 80}}
	post := func(id string) error {
		body := textPayload(id)
		req, _ := http.NewRequest(http.MethodPost, e.url, bytes.NewReader(body))
		req.Header.Set("X-Hub-Signature-256", whatsapp.Sign(body, appSecret))
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("status %d", resp.StatusCode)
		}
		return nil
	}
	for i := range 200 {
		if err := post(fmt.Sprintf("wamid.warm-80-%d", i)); err != nil {
			b.Fatal(err)
		}
	}
	n := int64(b.N)
	b.ResetTimer()
	load := testenv.RunConcurrently(n, 80, func(i int64) error { return post(fmt.Sprintf("wamid.t80-%d-%d", n, i)) })
	b.StopTimer()
	if f := load.Failed; f > 0 {
		b.Fatalf("%d of %d deliveries not answered 200", f, n)
	}
	b.ReportMetric(float64(n)/load.Elapsed.Seconds(), "deliveries/s")
	b.ReportMetric(float64(load.CPU.Microseconds())/1000/float64(n), "cpu-ms/delivery")
}

// BenchmarkMixedTraffic is one webhook instance (the real server, MAX_INFLIGHT_BODY_BYTES and
// WEBHOOK_UNVERIFIED_BYTES_PER_ADDRESS at their defaults) taking Meta's mixed traffic from one
// address, 16 deliveries in flight: of every 50, one of 3.9 MB (stored out of band), four of
// 205 KB and 45 texts of 1 KB, against the Firestore emulator and a Cloud Tasks emulator (the
// inbound queue paused). In the second case 13 uploads at 300 KiB/s with a well-formed wrong
// signature run from another address all along, each replaced as soon as it is answered. It
// reports deliveries answered per second, the genuine deliveries not answered 200 (refused; the
// goal: 0), the latency of small and large ones (small-p50-ms, small-p95-ms, large-p95-ms, large
// meaning 205 KB and up), the heap's peak and the body budget's.
//
//	go test -run '^$' -bench MixedTraffic -benchtime 500x ./internal/webhook/
func BenchmarkMixedTraffic(b *testing.B) {
	for _, attacked := range []bool{false, true} {
		name := "genuine"
		if attacked {
			name = "under-attack"
		}
		b.Run(name, func(b *testing.B) { benchMixed(b, attacked) })
	}
}

func benchMixed(b *testing.B, attacked bool) {
	budget := httpserver.NewClientBudget(webhook.DefaultMaxInflightBodyBytes, webhook.DefaultUnverifiedBytesPerAddress, 0)
	e := newEnv(b, envOptions{httpserver: true, deps: func(d *webhook.Deps) { d.Bodies = budget }})
	client := httpservertest.ClientFrom("127.0.0.3")
	client.Transport.(*http.Transport).MaxIdleConnsPerHost = 16
	bodies := map[int]int{0: 3_900_000, 1: 205_000, 2: 205_000, 3: 205_000, 4: 205_000}
	n := int64(b.N)
	var mu sync.Mutex
	var small, large []time.Duration
	var refused atomic.Int64
	post := func(i int64) error {
		size := bodies[int(i%50)]
		body := textPayload(fmt.Sprintf("wamid.mixed-%t-%d-%d", attacked, n, i))
		if size > 0 {
			body = bulkPayload(fmt.Sprintf("wamid.mixed-%t-%d-%d", attacked, n, i), size)
		}
		req, _ := http.NewRequest(http.MethodPost, e.url, bytes.NewReader(body))
		req.Header.Set(whatsapp.SignatureHeader, whatsapp.Sign(body, appSecret))
		start := time.Now()
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		d := time.Since(start)
		if resp.StatusCode != http.StatusOK {
			refused.Add(1)
			return fmt.Errorf("status %d", resp.StatusCode)
		}
		mu.Lock()
		defer mu.Unlock()
		if size > 0 {
			large = append(large, d)
		} else {
			small = append(small, d)
		}
		return nil
	}
	stop := func() map[int]int { return nil }
	if attacked {
		stop = attack(b, e.url, "127.0.0.2", 13, 300<<10)
		testenv.Eventually(b, 30*time.Second, func() bool { return e.logs.Has("body_budget_exhausted") },
			"the slow uploads never filled their share")
	}
	runtime.GC()
	peak := httpservertest.HeapPeak()
	b.ResetTimer()
	load := testenv.RunConcurrently(n, 16, post)
	b.StopTimer()
	heap := peak()
	stop()
	b.ReportMetric(float64(n)/load.Elapsed.Seconds(), "deliveries/s")
	b.ReportMetric(float64(refused.Load()), "refused")
	if len(small) > 0 {
		p := percentiles(small)
		b.ReportMetric(p[0], "small-p50-ms")
		b.ReportMetric(p[1], "small-p95-ms")
	}
	if len(large) > 0 {
		b.ReportMetric(percentiles(large)[1], "large-p95-ms")
	}
	b.ReportMetric(float64(heap)/(1<<20), "heap-peak-MiB")
	b.ReportMetric(float64(budget.Peak())/(1<<20), "budget-peak-MiB")
}
