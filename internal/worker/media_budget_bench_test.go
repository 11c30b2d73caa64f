package worker_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wapipe/wapipe/internal/devstack"
	"github.com/wapipe/wapipe/internal/media"
	"github.com/wapipe/wapipe/internal/operator"
	"github.com/wapipe/wapipe/internal/testenv"
	"github.com/wapipe/wapipe/internal/whatsapp"
	"github.com/wapipe/wapipe/internal/worker"
)

// The two tenants of the media budget benchmark: one receives the voice notes, the other texts
// at the same time. Their queues let 40 turns run at once, so the worker, not the queue, is what
// bounds the voice notes.
const (
	voiceNumber = "106540352242950"
	textNumber  = "106540352242951"
)

func benchTenant(id, number string) []byte {
	return []byte(fmt.Sprintf(`id: %s
name: %s
language: en
audience: public
phone_numbers:
  - {phone_number_id: %q, waba_id: "102290129340398"}
sending: {per_second: 500, max_concurrent: 40}
quota: {llm_calls_per_month: 1000000}
assistant:
  mode: llm
  model: gemini-2.5-flash
  instructions: You are the assistant of a tour-bus company. Answer briefly.
  action_url: http://127.0.0.1:8095/wapipe/actions
  intents:
    - {name: check_schedule, description: who drives which bus when, fields: {date: date}, confirm: false}
`, id, id, number))
}

// sinkGemini stands in for Vertex AI without holding what it is sent: it reads each request as
// a stream (the real Gemini is another machine: its memory is not the worker's), takes
// mediaDelay over a request that carries a file (the model listening to a voice note), and
// answers a general query.
func sinkGemini(mediaDelay time.Duration) *httptest.Server {
	answer := []byte(`{"candidates":[{"content":{"role":"model","parts":[{"text":"{\"intent\":\"general_query\",\"confidence\":0.9,\"reply\":\"Noted, thank you.\"}"}]},"finishReason":"STOP"}],` +
		`"usageMetadata":{"promptTokenCount":100,"candidatesTokenCount":10,"totalTokenCount":110},"modelVersion":"gemini-2.5-flash"}`)
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		if n > 1<<20 {
			time.Sleep(mediaDelay)
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(answer)
	}))
}

// countingWriter counts the log lines carrying an event, discarding them.
type countingWriter struct {
	event []byte
	n     atomic.Int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	c.n.Add(int64(bytes.Count(p, c.event)))
	return len(p), nil
}

// budgetBench is the local stack with the two tenants, the sink in place of Gemini, the worker's
// media budget at its default, and one 15 MiB voice note (random bytes: nothing compresses on the
// way) held by the fake Graph API, which every voice note names.
type budgetBench struct {
	st      *devstack.Stack
	budget  *media.Budget
	refused *countingWriter
	voice   whatsapp.SampleMediaFile
	seq     atomic.Int64
}

func newBudgetBench(b *testing.B, inflight int64) *budgetBench {
	b.Helper()
	bb := &budgetBench{refused: &countingWriter{event: []byte(`"event":"media_budget_exhausted"`)}}
	sink := sinkGemini(time.Second)
	b.Cleanup(sink.Close)
	queues := testenv.FastQueues(b)
	// A refused turn is retried until it runs: the test queues' five attempts are not the
	// fifteen over an hour of the real ones.
	for id, q := range queues.Templates {
		q.RetryConfig.MaxAttempts = 1000
		queues.Templates[id] = q
	}
	_, project := testenv.Firestore(b)
	st, err := devstack.Start(context.Background(), devstack.Options{FirestoreHost: testenv.FirestoreHost(b), Project: project,
		Queues: queues, Tenants: [][]byte{benchTenant("bench-voice", voiceNumber), benchTenant("bench-text", textNumber)},
		Logs: func(c string) io.Writer {
			if c == "worker" {
				return bb.refused
			}
			return io.Discard
		},
		WorkerConfig: func(c *worker.Config) { c.LLMBaseURL, c.MediaInflightBytes = sink.URL, inflight },
		Worker:       []func(*worker.Deps){func(d *worker.Deps) { bb.budget = d.Media.(*media.Fetcher).Budget() }}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(st.Stop)
	bb.st = st
	data := make([]byte, media.DefaultMaxBytes)
	if _, err := rand.Read(data); err != nil {
		b.Fatal(err)
	}
	f := st.Graph.AddMedia(data, "audio/ogg")
	bb.voice = whatsapp.SampleMediaFile{ID: f.ID, MIMEType: f.MIMEType, SHA256: f.SHA256, Voice: true}
	return bb
}

// post delivers a voice note to the voice tenant, or a text to the text tenant, from a fresh
// contact, and returns the contact.
func (bb *budgetBench) post(voice bool) (string, error) {
	from := fmt.Sprintf("3368%07d", bb.seq.Add(1))
	payload := whatsapp.SampleText(whatsapp.SampleOptions{PhoneNumberID: textNumber, From: from}, "which bus drives tomorrow?")
	if voice {
		payload = whatsapp.SampleMedia(whatsapp.SampleOptions{PhoneNumberID: voiceNumber, From: from}, "audio", bb.voice)
	}
	res, err := operator.Post(context.Background(), http.DefaultClient, bb.st.WebhookURL, bb.st.AppSecret, payload)
	if err != nil {
		return "", err
	}
	if res.StatusCode != http.StatusOK {
		return "", fmt.Errorf("webhook answered %d", res.StatusCode)
	}
	return from, nil
}

// replies are the times of the first send to each contact the fake Graph API received.
func (bb *budgetBench) replies() map[string]time.Time {
	out := map[string]time.Time{}
	for _, r := range bb.st.Graph.Sends() {
		to, _ := r.Body["to"].(string)
		if _, seen := out[to]; !seen && to != "" {
			out[to] = r.Time
		}
	}
	return out
}

// waitReplies waits until every contact of sent has its reply.
func (bb *budgetBench) waitReplies(b *testing.B, sent map[string]time.Time) map[string]time.Time {
	b.Helper()
	var got map[string]time.Time
	testenv.Eventually(b, 5*time.Minute, func() bool {
		got = bb.replies()
		for c := range sent {
			if _, ok := got[c]; !ok {
				return false
			}
		}
		return true
	}, "not every message was answered")
	return got
}

// BenchmarkMediaBudget20VoiceNotes is issue 35 item 4: per iteration, 20 voice notes of 15 MiB
// (MEDIA_MAX_BYTES) reach one tenant at once, while another tenant's contacts send a text every
// 100 ms. The sink Gemini takes a second over each voice note. It reports the peak heap in use of
// the process while they run (peak-heap-MiB; the goal: under 200 MiB with the default
// MEDIA_INFLIGHT_BYTES) against the heap before (base-heap-MiB: the stack, and the fake Graph
// API's copy of the file), the budget's peak (budget-peak-MiB), the attempts refused for budget
// (refused-attempts, each retried), how long the 20 took (voice-notes-s), and the other tenant's
// text replies, from the webhook post to the send at the fake Graph API (text-p50-ms,
// text-p95-ms; goal: p95 under 2 s). The second case lifts the budget (1 GiB) to show what it
// holds back.
//
//	go test -run '^$' -bench MediaBudget20VoiceNotes -benchtime 2x ./internal/worker/
func BenchmarkMediaBudget20VoiceNotes(b *testing.B) {
	for _, bc := range []struct {
		name     string
		inflight int64
	}{
		{"default-96MiB", media.DefaultInflightBytes},
		{"lifted-1GiB", 1 << 30},
	} {
		b.Run(bc.name, func(b *testing.B) { benchVoiceNotes(b, bc.inflight) })
	}
}

func benchVoiceNotes(b *testing.B, inflight int64) {
	bb := newBudgetBench(b, inflight)
	warm := map[string]time.Time{}
	for _, voice := range []bool{true, false} {
		c, err := bb.post(voice)
		if err != nil {
			b.Fatal(err)
		}
		warm[c] = time.Now()
	}
	bb.waitReplies(b, warm)
	runtime.GC()
	var base runtime.MemStats
	runtime.ReadMemStats(&base)
	refusedBefore := bb.refused.n.Load()
	stop := testenv.HeapPeak(5 * time.Millisecond)
	var texts []time.Duration
	var voiceTime time.Duration
	for b.Loop() {
		took, txt := bb.round(b)
		voiceTime += took
		got := bb.waitReplies(b, txt)
		for c, at := range txt {
			texts = append(texts, got[c].Sub(at))
		}
	}
	peak := stop()
	p := latencyPercentiles(texts)
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
	b.ReportMetric(float64(base.HeapInuse)/(1<<20), "base-heap-MiB")
	b.ReportMetric(float64(bb.budget.Peak())/(1<<20), "budget-peak-MiB")
	b.ReportMetric(float64(bb.refused.n.Load()-refusedBefore)/float64(b.N), "refused-attempts")
	b.ReportMetric(voiceTime.Seconds()/float64(b.N), "voice-notes-s")
	b.ReportMetric(p[0], "text-p50-ms")
	b.ReportMetric(p[1], "text-p95-ms")
}

// round posts the 20 voice notes at once and a text every 100 ms until the voice notes are all
// answered; it returns how long the voice notes took and when each text was posted, by contact.
func (bb *budgetBench) round(b *testing.B) (took time.Duration, texts map[string]time.Time) {
	voices, texts := map[string]time.Time{}, map[string]time.Time{}
	var mu sync.Mutex
	start := time.Now()
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			at := time.Now()
			c, err := bb.post(false)
			if err != nil {
				b.Error(err)
				return
			}
			mu.Lock()
			texts[c] = at
			mu.Unlock()
		}
	})
	var posts sync.WaitGroup
	for range 20 {
		posts.Go(func() {
			at := time.Now()
			c, err := bb.post(true)
			if err != nil {
				b.Error(err)
				return
			}
			mu.Lock()
			voices[c] = at
			mu.Unlock()
		})
	}
	posts.Wait()
	bb.waitReplies(b, voices)
	took = time.Since(start)
	close(done)
	wg.Wait()
	return took, texts
}
