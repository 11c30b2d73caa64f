package webhook_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"testing"

	"github.com/wapipe/wapipe/internal/testenv"
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
