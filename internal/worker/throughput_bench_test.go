package worker_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/wapipe/wapipe/internal/keyedid"
	"github.com/wapipe/wapipe/internal/testenv"
	"github.com/wapipe/wapipe/internal/whatsapp"
	"github.com/wapipe/wapipe/tasks"
)

// BenchmarkOutboundThroughputAt80 is one worker instance at Cloud Run's default concurrency: 80
// process_outbound tasks in flight at all times, each a new text on the single-tenant default
// path (record begun, the acknowledgement sent to the fake Graph API, the record settled, the
// message marked read), against the Firestore emulator. It reports messages answered per second
// and the CPU per message: the whole test process's (worker, fake Graph API, in-process Cloud
// Tasks emulator, HTTP client), an upper bound for the worker; the Firestore emulator is a
// process of its own and not counted.
//
//	go test -run '^$' -bench OutboundThroughputAt80 -benchtime 2000x ./internal/worker/
func BenchmarkOutboundThroughputAt80(b *testing.B) {
	st := benchStack(b, nil)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 80, MaxConnsPerHost: 80}}
	post := func(id string) error {
		body, _ := json.Marshal(tasks.Outbound{IdempotencyKey: tasks.IdempotencyKey(keyedid.Dev(), id), CorrelationID: "bench", InboundEventID: "bench-" + id,
			PhoneNumberID: "PNID-BENCH", To: "16505551234", ReceivedAt: time.Now(),
			Message: whatsapp.Message{ID: id, Type: "text", From: "16505551234", Text: "hello"}})
		req, _ := http.NewRequest(http.MethodPost, st.WorkerURL+tasks.ProcessOutboundPath, bytes.NewReader(body))
		req.Header.Set(tasks.HeaderInternalToken, st.InternalToken)
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		out, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("process_outbound = %d %s", resp.StatusCode, out)
		}
		return nil
	}
	for i := range 100 {
		if err := post(fmt.Sprintf("wamid.warm-80-%d", i)); err != nil {
			b.Fatal(err)
		}
	}
	n := int64(b.N)
	b.ResetTimer()
	load := testenv.RunConcurrently(n, 80, func(i int64) error { return post(fmt.Sprintf("wamid.o80-%d-%d", n, i)) })
	b.StopTimer()
	if f := load.Failed; f > 0 {
		b.Fatalf("%d of %d tasks not answered 200", f, n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := st.Graph.WaitForSends(ctx, int(n)+100); err != nil {
		b.Fatalf("sends: %v", err)
	}
	b.ReportMetric(float64(n)/load.Elapsed.Seconds(), "messages/s")
	b.ReportMetric(float64(load.CPU.Microseconds())/1000/float64(n), "cpu-ms/message")
}
