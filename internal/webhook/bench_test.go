package webhook_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/taskqueue"
	"github.com/wapipe/wapipe/internal/whatsapp"
	"github.com/wapipe/wapipe/tasks"
)

// payloadOfSize is a Meta delivery of about n bytes: one message and as many statuses as fit.
func payloadOfSize(n int) []byte {
	var sb strings.Builder
	sb.WriteString(`{"object":"whatsapp_business_account","entry":[{"id":"WABA","changes":[{"field":"messages","value":{"messaging_product":"whatsapp","metadata":{"display_phone_number":"1555","phone_number_id":"PNID1"},"contacts":[{"profile":{"name":"A"},"wa_id":"16505551234"}],"messages":[{"from":"16505551234","id":"wamid.bench","timestamp":"1763800000","type":"text","text":{"body":"hello"}}],"statuses":[`)
	for i := 0; sb.Len() < n-200; i++ {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, `{"id":"wamid.s%07d","status":"delivered","timestamp":"1763800000","recipient_id":"16505550000","pricing":{"billable":true,"pricing_model":"CBP","category":"service"}}`, i)
	}
	sb.WriteString(`]}}]}]}`)
	return []byte(sb.String())
}

// BenchmarkSignatureAndParse is the webhook's CPU cost before any I/O: the HMAC over the raw
// bytes and the inbound_event_id (whatsapp.EventID, which decodes only what the id needs).
func BenchmarkSignatureAndParse(b *testing.B) {
	for _, size := range []struct {
		name string
		n    int
	}{{"1KB", 1 << 10}, {"100KB", 100 << 10}, {"3MB", 3 << 20}} {
		body := payloadOfSize(size.n)
		sig := whatsapp.Sign(body, appSecret)
		b.Run(size.name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				if !whatsapp.VerifySignature(sig, body, appSecret) {
					b.Fatal("signature")
				}
				if _, err := whatsapp.EventID(body); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkHandlerVsRawCalls measures, in one run against the emulators, the handler's end-to-end
// latency for a 1 KB text delivery beside the raw cost of the two calls it cannot avoid (one
// Firestore create and one CreateTask, made directly). Each iteration does one of each, so both
// see the same load and the same emulator warmth; the difference is the handler's own overhead.
func BenchmarkHandlerVsRawCalls(b *testing.B) {
	e := newEnv(b, envOptions{})
	ctx := context.Background()
	raw := func(id string) time.Duration {
		start := time.Now()
		if _, err := e.fs.Collection(store.InboundEvents).Doc(store.DocID(id)).Create(ctx, map[string]any{
			"inbound_event_id": id, "state": "pending", "created_at": start, "expire_at": start}); err != nil {
			b.Fatal(err)
		}
		if _, err := e.tq.Enqueue(ctx, taskqueue.Task{Queue: tasks.InboundQueueID, ID: tasks.InboundTaskID(id),
			Path: tasks.ProcessInboundPath, Body: textPayload(id)}); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	handler := func(id string) time.Duration {
		body := textPayload(id)
		req, _ := http.NewRequest(http.MethodPost, e.url, bytes.NewReader(body))
		req.Header.Set("X-Hub-Signature-256", whatsapp.Sign(body, appSecret))
		start := time.Now()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		d := time.Since(start)
		if resp.StatusCode != 200 {
			b.Fatalf("status %d", resp.StatusCode)
		}
		return d
	}
	// The emulator is a JVM: let it warm up before measuring.
	for i := range 300 {
		raw(fmt.Sprintf("wamid.warm-r-%d", i))
		handler(fmt.Sprintf("wamid.warm-h-%d", i))
	}
	var hl, rl []time.Duration
	i := 0
	for b.Loop() {
		i++
		hl = append(hl, handler(fmt.Sprintf("wamid.bench-h-%d-%d", b.N, i)))
		rl = append(rl, raw(fmt.Sprintf("wamid.bench-r-%d-%d", b.N, i)))
	}
	h, r := percentiles(hl), percentiles(rl)
	b.ReportMetric(h[0], "handler-p50-ms")
	b.ReportMetric(h[1], "handler-p95-ms")
	b.ReportMetric(h[2], "handler-p99-ms")
	b.ReportMetric(r[0], "raw-p50-ms")
	b.ReportMetric(r[1], "raw-p95-ms")
	b.ReportMetric(r[2], "raw-p99-ms")
	b.ReportMetric(h[0]-r[0], "overhead-p50-ms")
}

// percentiles returns p50, p95 and p99 in milliseconds.
func percentiles(lat []time.Duration) [3]float64 {
	slices.Sort(lat)
	at := func(p float64) float64 {
		return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))].Microseconds()) / 1000
	}
	return [3]float64{at(0.50), at(0.95), at(0.99)}
}

// BenchmarkHandlerParallel posts 1 KB text deliveries to the handler over HTTP from 8 goroutines,
// against the emulators: the load to profile the handler under (go test -bench HandlerParallel
// -cpuprofile cpu.out -benchmem).
func BenchmarkHandlerParallel(b *testing.B) {
	e := newEnv(b, envOptions{})
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
	var n atomic.Int64
	post := func(id string) {
		body := textPayload(id)
		req, _ := http.NewRequest(http.MethodPost, e.url, bytes.NewReader(body))
		req.Header.Set("X-Hub-Signature-256", whatsapp.Sign(body, appSecret))
		resp, err := client.Do(req)
		if err != nil {
			b.Error(err)
			return
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			b.Errorf("status %d", resp.StatusCode)
		}
	}
	for i := range 200 {
		post(fmt.Sprintf("wamid.warm-p-%d", i))
	}
	b.ReportAllocs()
	b.SetParallelism(max(1, 8/runtime.GOMAXPROCS(0)))
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			post(fmt.Sprintf("wamid.par-%d-%d", b.N, n.Add(1)))
		}
	})
}
