package worker_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wapipe/wapipe/internal/assistant"
	"github.com/wapipe/wapipe/internal/devstack"
	"github.com/wapipe/wapipe/internal/operator"
	"github.com/wapipe/wapipe/internal/testenv"
	"github.com/wapipe/wapipe/internal/whatsapp"
	"github.com/wapipe/wapipe/internal/worker"
)

// timedEngine records how long each turn of the worker's assistant took, by message type.
type timedEngine struct {
	worker.TurnEngine
	mu    sync.Mutex
	turns map[string][]time.Duration
}

func (e *timedEngine) Turn(ctx context.Context, in assistant.Input) (assistant.Outcome, error) {
	start := time.Now()
	out, err := e.TurnEngine.Turn(ctx, in)
	d := time.Since(start)
	e.mu.Lock()
	e.turns[in.Message.Type] = append(e.turns[in.Message.Type], d)
	e.mu.Unlock()
	return out, err
}

func (e *timedEngine) take(typ string) []time.Duration {
	e.mu.Lock()
	defer e.mu.Unlock()
	d := e.turns[typ]
	e.turns[typ] = nil
	return d
}

// mediaBench is the local stack with its sample tenant (mode llm), the worker's turns timed, and
// a 1 MB image (random bytes: nothing compresses on the way) held by the fake Graph API.
type mediaBench struct {
	st     *devstack.Stack
	engine *timedEngine
	image  whatsapp.SampleMediaFile
	seq    atomic.Int64
}

func newMediaBench(b *testing.B) *mediaBench {
	b.Helper()
	mb := &mediaBench{engine: &timedEngine{turns: map[string][]time.Duration{}}}
	host := testenv.FirestoreHost(b)
	_, project := testenv.Firestore(b)
	unthrottled := testenv.FastQueues(b)
	st, err := devstack.Start(context.Background(), devstack.Options{FirestoreHost: host, Project: project, Queues: unthrottled,
		Logs:   func(string) io.Writer { return io.Discard },
		Worker: []func(*worker.Deps){func(d *worker.Deps) { mb.engine.TurnEngine = d.Assistant; d.Assistant = mb.engine }}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(st.Stop)
	mb.st = st
	data := make([]byte, 1_000_000)
	if _, err := rand.Read(data); err != nil {
		b.Fatal(err)
	}
	f := st.Graph.AddMedia(data, "image/jpeg")
	mb.image = whatsapp.SampleMediaFile{ID: f.ID, MIMEType: f.MIMEType, SHA256: f.SHA256, Caption: "Bus 03 AC mati"}
	return mb
}

// post delivers the image (or, with text, a text) from a fresh contact, so no rate limit applies.
func (mb *mediaBench) post(text string) error {
	from := fmt.Sprintf("3369%07d", mb.seq.Add(1))
	o := whatsapp.SampleOptions{From: from}
	payload := whatsapp.SampleMedia(o, "image", mb.image)
	if text != "" {
		payload = whatsapp.SampleText(o, text)
	}
	res, err := operator.Post(context.Background(), http.DefaultClient, mb.st.WebhookURL, mb.st.AppSecret, payload)
	if err != nil {
		return err
	}
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("webhook answered %d", res.StatusCode)
	}
	return nil
}

func (mb *mediaBench) mustPost(b *testing.B, text string) {
	b.Helper()
	if err := mb.post(text); err != nil {
		b.Fatal(err)
	}
}

// waitTurns waits until n turns of typ were timed and returns them.
func (mb *mediaBench) waitTurns(b *testing.B, typ string, n int) []time.Duration {
	var got []time.Duration
	testenv.Eventually(b, 60*time.Second, func() bool {
		got = append(got, mb.engine.take(typ)...)
		return len(got) >= n
	}, "fewer than %d %s turns", n, typ)
	return got
}

// BenchmarkMediaTurn1MB is the worker's turn for a 1 MB image with its caption, against the
// fake Gemini, which answers at once: the Graph lookup and download, the sha256 check, the
// request's base64 and the fake's reading of it (turn-p50-ms). text-turn-p50-ms is the same
// turn for a text, and overhead-p50-ms the difference: what the image adds (the goal:
// under 60 ms on the local stack).
func BenchmarkMediaTurn1MB(b *testing.B) {
	mb := newMediaBench(b)
	for range 3 { // warm the clients and the emulators
		mb.mustPost(b, "hello")
		mb.mustPost(b, "")
	}
	mb.waitTurns(b, "text", 3)
	mb.waitTurns(b, "image", 3)
	var images, texts []time.Duration
	for b.Loop() {
		mb.mustPost(b, "")
		images = append(images, mb.waitTurns(b, "image", 1)...)
		mb.mustPost(b, "hello")
		texts = append(texts, mb.waitTurns(b, "text", 1)...)
	}
	img, txt := latencyPercentiles(images), latencyPercentiles(texts)
	b.ReportMetric(img[0], "turn-p50-ms")
	b.ReportMetric(img[1], "turn-p95-ms")
	b.ReportMetric(txt[0], "text-turn-p50-ms")
	b.ReportMetric(img[0]-txt[0], "overhead-p50-ms")
}

// BenchmarkMediaTurns20AtOnce delivers 20 image messages at once per iteration and reports the
// peak heap in use while their turns run (peak-heap-MiB; the goal for the worker: under
// 150 MiB). The process holds the whole local stack: the fakes' copies (the Graph fake's file,
// the Gemini fake's decoded requests) count too, so the worker's own share is lower.
func BenchmarkMediaTurns20AtOnce(b *testing.B) {
	mb := newMediaBench(b)
	mb.mustPost(b, "")
	mb.waitTurns(b, "image", 1)
	runtime.GC()
	var base runtime.MemStats
	runtime.ReadMemStats(&base)
	stop := testenv.HeapPeak(5 * time.Millisecond)
	for b.Loop() {
		var wg sync.WaitGroup
		errs := make(chan error, 20)
		for range 20 {
			wg.Go(func() { errs <- mb.post("") })
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				b.Fatal(err)
			}
		}
		mb.waitTurns(b, "image", 20)
	}
	b.ReportMetric(float64(stop())/(1<<20), "peak-heap-MiB")
	b.ReportMetric(float64(base.HeapInuse)/(1<<20), "base-heap-MiB")
}
