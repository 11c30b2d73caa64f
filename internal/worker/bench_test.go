package worker_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"testing"
	"time"

	"cloud.google.com/go/cloudtasks/apiv2/cloudtaskspb"

	"github.com/wapipe/wapipe/internal/cloudtasksemu"
	"github.com/wapipe/wapipe/internal/devstack"
	"github.com/wapipe/wapipe/internal/llm/geminifake"
	"github.com/wapipe/wapipe/internal/tenant"
	"github.com/wapipe/wapipe/internal/tenantcache"
	"github.com/wapipe/wapipe/internal/testenv"
	"github.com/wapipe/wapipe/internal/whatsapp"
	"github.com/wapipe/wapipe/tasks"
)

func benchStack(b *testing.B, queues *tasks.QueueFile) *devstack.Stack {
	b.Helper()
	host := testenv.FirestoreHost(b)
	_, project := testenv.Firestore(b)
	st, err := devstack.Start(context.Background(), devstack.Options{FirestoreHost: host, Project: project, Queues: queues})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(st.Stop)
	return st
}

// BenchmarkFanOut100 is process_inbound's time for a delivery of 100 messages: normalise, trace,
// and create 100 outbound tasks (the outbound queue is paused, so no send competes).
func BenchmarkFanOut100(b *testing.B) {
	st := benchStack(b, nil)
	ctx := context.Background()
	tc, err := cloudtasksemu.NewClient(ctx, st.TasksAddr)
	if err != nil {
		b.Fatal(err)
	}
	defer tc.Close()
	if _, err := tc.PauseQueue(ctx, &cloudtaskspb.PauseQueueRequest{Name: st.QueuePath(tasks.OutboundQueueID)}); err != nil {
		b.Fatal(err)
	}
	run := func() time.Duration {
		payload := whatsapp.SampleBatch(whatsapp.SampleOptions{}, 100)
		body, _ := json.Marshal(tasks.Inbound{InboundEventID: fmt.Sprintf("bench-%d", time.Now().UnixNano()), CorrelationID: "bench", ReceivedAt: time.Now(), Payload: payload})
		req, _ := http.NewRequest(http.MethodPost, st.WorkerURL+tasks.ProcessInboundPath, bytes.NewReader(body))
		req.Header.Set(tasks.HeaderInternalToken, st.InternalToken)
		start := time.Now()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		out, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		d := time.Since(start)
		if resp.StatusCode != 200 {
			b.Fatalf("process_inbound = %d %s", resp.StatusCode, out)
		}
		return d
	}
	run() // warm the emulators
	var lat []time.Duration
	for b.Loop() {
		lat = append(lat, run())
	}
	p := latencyPercentiles(lat)
	b.ReportMetric(p[0], "p50-ms")
	b.ReportMetric(p[1], "p95-ms")
}

// BenchmarkInboundToGraph is one message's latency from the webhook's answer to its reply reaching
// the (fake) Graph API, through both queues of the emulator: with production's queue settings
// (wa-outbound dispatches 10 a second, so back-to-back messages wait for its token bucket) and
// with the rate limits lifted, which leaves the pipeline's own latency.
func BenchmarkInboundToGraph(b *testing.B) {
	unthrottled := tasks.DefaultQueues()
	for id, q := range unthrottled.Queues {
		q.RateLimits.MaxDispatchesPerSecond = 500
		unthrottled.Queues[id] = q
	}
	for _, bc := range []struct {
		name   string
		queues *tasks.QueueFile
	}{{"production_queues", nil}, {"unthrottled", unthrottled}} {
		b.Run(bc.name, func(b *testing.B) {
			st := benchStack(b, bc.queues)
			one := func(id string) time.Duration {
				payload := whatsapp.SampleText(whatsapp.SampleOptions{MessageID: id}, "hi")
				before := len(st.Graph.Sends())
				req, _ := http.NewRequest(http.MethodPost, st.WebhookURL, bytes.NewReader(payload))
				req.Header.Set("X-Hub-Signature-256", whatsapp.Sign(payload, st.AppSecret))
				start := time.Now()
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				if _, err := st.Graph.WaitForSends(ctx, before+1); err != nil {
					b.Fatal(err)
				}
				return time.Since(start)
			}
			for i := range 20 {
				one(fmt.Sprintf("wamid.warm-%d", i))
			}
			var lat []time.Duration
			i := 0
			for b.Loop() {
				i++
				lat = append(lat, one(fmt.Sprintf("wamid.bench-%d-%d", b.N, i)))
			}
			p := latencyPercentiles(lat)
			b.ReportMetric(p[0], "p50-ms")
			b.ReportMetric(p[1], "p95-ms")
		})
	}
}

func latencyPercentiles(lat []time.Duration) [2]float64 {
	slices.Sort(lat)
	at := func(p float64) float64 {
		return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))].Microseconds()) / 1000
	}
	return [2]float64{at(0.50), at(0.95)}
}

// BenchmarkTenantResolveCacheHit is tenant resolution on the hot path once the number is cached:
// what every routed message pays (target under 0.2 ms p50).
func BenchmarkTenantResolveCacheHit(b *testing.B) {
	tn := newFakeTenants(fakeTenant("acme", "106540352242922", "en", tenant.AudiencePublic, "EAAacme"))
	c := tenantcache.NewTenantCache(tn, time.Minute)
	ctx := context.Background()
	if _, err := c.GetByPhoneNumber(ctx, "106540352242922"); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if rec, err := c.GetByPhoneNumber(ctx, "106540352242922"); err != nil || rec.Tenant.ID != "acme" {
				b.Fatal(rec, err)
			}
		}
	})
}

// BenchmarkTurnOverhead measures what the pipeline adds before the assistant's LLM call: from
// posting a message to the webhook to the fake Gemini receiving the turn's request (webhook,
// inbound task, outbound task, conversation inbox and lease, tenant and member lookups, the
// sender and quota counters), one message at a time, each from its own contact. It reports
// p50/p95 in ms.
func BenchmarkTurnOverhead(b *testing.B) {
	st := benchStack(b, testenv.FastQueues(b))
	var lat []time.Duration
	for i := 0; b.Loop(); i++ {
		text := fmt.Sprintf("hello %d", i)
		body := whatsapp.SampleText(whatsapp.SampleOptions{From: fmt.Sprintf("1555%07d", i)}, text)
		start := time.Now()
		postBench(b, st, body)
		var at time.Time
		testenv.Eventually(b, 20*time.Second, func() bool {
			for _, r := range st.Gemini.Requests() {
				if r.Text == text {
					at = r.Time
					return true
				}
			}
			return false
		}, "no LLM request for %q", text)
		lat = append(lat, at.Sub(start))
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50_ms")
	b.ReportMetric(float64(lat[len(lat)*95/100].Microseconds())/1000, "p95_ms")
}

// BenchmarkSecondTurnStart measures how soon the second of two back-to-back messages of one
// contact starts its turn after the first turn's LLM answer (its commit follows at once): the
// running drain picks it up, with no Cloud Tasks retry in between. Reports p50/p95 in ms.
func BenchmarkSecondTurnStart(b *testing.B) {
	st := benchStack(b, testenv.FastQueues(b))
	const think = 300 * time.Millisecond
	if err := st.Gemini.AddRule(geminifake.Rule{Contains: "first", Respond: func(geminifake.Call) geminifake.Answer {
		time.Sleep(think)
		return geminifake.Answer{Intent: geminifake.GeneralQuery, Confidence: 0.9, Reply: "ok"}
	}}); err != nil {
		b.Fatal(err)
	}
	var gaps []time.Duration
	for i := 0; b.Loop(); i++ {
		from := fmt.Sprintf("1556%07d", i)
		first, second := fmt.Sprintf("first %d", i), fmt.Sprintf("second %d", i)
		now := time.Now()
		postBench(b, st, whatsapp.SampleText(whatsapp.SampleOptions{From: from, Timestamp: now}, first))
		postBench(b, st, whatsapp.SampleText(whatsapp.SampleOptions{From: from, Timestamp: now.Add(time.Second)}, second))
		var t1, t2 time.Time
		testenv.Eventually(b, 20*time.Second, func() bool {
			for _, r := range st.Gemini.Requests() {
				switch r.Text {
				case first:
					t1 = r.Time
				case second:
					t2 = r.Time
				}
			}
			return !t1.IsZero() && !t2.IsZero()
		}, "no LLM requests for the pair %d", i)
		gaps = append(gaps, t2.Sub(t1.Add(think)))
	}
	slices.Sort(gaps)
	b.ReportMetric(float64(gaps[len(gaps)/2].Microseconds())/1000, "p50_ms")
	b.ReportMetric(float64(gaps[len(gaps)*95/100].Microseconds())/1000, "p95_ms")
}

// postBench posts a signed payload to the stack's webhook and fails on any answer but 200.
func postBench(b *testing.B, st *devstack.Stack, body []byte) {
	b.Helper()
	if code := postSigned(b, st.WebhookURL, st.AppSecret, body); code != http.StatusOK {
		b.Fatalf("webhook answered %d", code)
	}
}
