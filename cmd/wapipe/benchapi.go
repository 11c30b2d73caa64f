package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wapipe/wapipe/internal/loadgen"
)

// apiBench is `wapipe bench --api-key`: POST /v1/messages load.
type apiBench struct {
	url, key, to string
	number       string
	n, conc      int
}

// apiBenchResult is what an api bench measured.
type apiBenchResult struct {
	Accepted, Failed int
	Elapsed          time.Duration
	Answers          loadgen.Summary
	Codes            map[int]int
}

// run posts b.n template messages (templates are never held by the 24-hour window), b.conc at a
// time, each with its own Idempotency-Key, and measures the answers.
func (b apiBench) run(ctx context.Context) apiBenchResult {
	client := loadgen.NewClient(b.conc, 30*time.Second)
	var next atomic.Int64
	var mu sync.Mutex
	res := apiBenchResult{Codes: map[int]int{}}
	var lat []time.Duration
	run := fmt.Sprintf("%x", time.Now().UnixNano())
	number := ""
	if b.number != "" {
		number = `"phone_number_id":"` + b.number + `",`
	}
	body := `{"to":"` + b.to + `",` + number + `"type":"template","template":{"name":"hello_world","language":{"code":"en_US"}}}`
	start := time.Now()
	var wg sync.WaitGroup
	for range b.conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1)
				if i > int64(b.n) || ctx.Err() != nil {
					return
				}
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(b.url, "/")+"/v1/messages", strings.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Authorization", "Bearer "+b.key)
				req.Header.Set("Idempotency-Key", fmt.Sprintf("bench-%s-%d", run, i))
				t0 := time.Now()
				resp, err := client.Do(req)
				d := time.Since(t0)
				code := 0
				if err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					code = resp.StatusCode
				}
				mu.Lock()
				res.Codes[code]++
				if code == http.StatusAccepted {
					res.Accepted++
					lat = append(lat, d)
				} else {
					res.Failed++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	res.Elapsed = time.Since(start)
	res.Answers = loadgen.Summarize(lat)
	return res
}

func (r apiBenchResult) write(w io.Writer) {
	rate := 0.0
	if r.Elapsed > 0 {
		rate = float64(r.Accepted) / r.Elapsed.Seconds()
	}
	fmt.Fprintf(w, "api: %d accepted, %d failed in %s: %.1f accepted/s\n", r.Accepted, r.Failed, r.Elapsed.Round(time.Millisecond), rate)
	fmt.Fprintf(w, "answer time: p50 %s  p95 %s  p99 %s  max %s\n", r.Answers.P50.Round(time.Microsecond*100),
		r.Answers.P95.Round(time.Microsecond*100), r.Answers.P99.Round(time.Microsecond*100), r.Answers.Max.Round(time.Microsecond*100))
	fmt.Fprintf(w, "status codes: %v\n", r.Codes)
}
