package cloudtasksemu

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/cloudtasks/apiv2/cloudtaskspb"

	"github.com/wapipe/wapipe/tasks"
)

// BenchmarkCreateToDispatch measures, on an idle queue, the time from calling CreateTask to the
// request reaching the target, and reports its p50 and p95.
func BenchmarkCreateToDispatch(b *testing.B) {
	emu, err := Start(context.Background(), Options{})
	if err != nil {
		b.Fatalf("Start: %v", err)
	}
	defer emu.Stop()
	c := client(b, emu)
	arrived := make(chan time.Time, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- time.Now()
	}))
	defer srv.Close()
	q := mkQueue(b, c, parent(), "latency", nil, nil)
	ctx := context.Background()
	create := func() time.Duration {
		start := time.Now()
		if _, err := c.CreateTask(ctx, &cloudtaskspb.CreateTaskRequest{Parent: q, Task: httpTask(q, "", srv.URL)}); err != nil {
			b.Fatalf("CreateTask: %v", err)
		}
		return (<-arrived).Sub(start)
	}
	for range 50 { // warm the connections
		create()
	}

	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		lat = append(lat, create())
		// Keep the queue idle: let the token bucket refill (500/s by default) before the next.
		b.StopTimer()
		time.Sleep(2 * time.Millisecond)
		b.StartTimer()
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*95/100].Microseconds()), "p95-µs")
}

// BenchmarkBacklogMemory reports the heap each waiting task costs with 20,000 wapipe-shaped tasks
// (hashed name, three headers, a 300-byte JSON body) held in a paused queue.
func BenchmarkBacklogMemory(b *testing.B) {
	const n = 20000
	emu, err := Start(context.Background(), Options{})
	if err != nil {
		b.Fatalf("Start: %v", err)
	}
	defer emu.Stop()
	c := client(b, emu)
	ctx := context.Background()
	body := []byte(`{"inbound_event_id":"wamid.` + strings.Repeat("x", 240) + `","correlation_id":"c"}`)
	b.ResetTimer()
	for i := range b.N {
		q := mkQueue(b, c, parent(), fmt.Sprintf("backlog-%d", i), nil, nil)
		if _, err := c.PauseQueue(ctx, &cloudtaskspb.PauseQueueRequest{Name: q}); err != nil {
			b.Fatalf("PauseQueue: %v", err)
		}
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)

		var wg sync.WaitGroup
		for w := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for j := w; j < n; j += 8 {
					tk := httpTask(q, tasks.InboundTaskID(fmt.Sprint(i, "-", j)), "http://127.0.0.1:8080"+tasks.ProcessInboundPath)
					tk.GetHttpRequest().Body = body
					tk.GetHttpRequest().Headers = map[string]string{
						tasks.HeaderInternalToken: "local-internal-token",
						tasks.HeaderCorrelationID: fmt.Sprintf("%032x", j),
						"Content-Type":            "application/json",
					}
					if _, err := c.CreateTask(ctx, &cloudtaskspb.CreateTaskRequest{Parent: q, Task: tk}); err != nil {
						b.Errorf("CreateTask: %v", err)
						return
					}
				}
			}()
		}
		wg.Wait()
		runtime.GC()
		runtime.ReadMemStats(&after)
		per := float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / n
		b.ReportMetric(per, "bytes/task")
		b.ReportMetric(per-float64(len(body)), "overhead-bytes/task")
		b.StopTimer()
		if err := c.DeleteQueue(ctx, &cloudtaskspb.DeleteQueueRequest{Name: q}); err != nil {
			b.Fatalf("DeleteQueue: %v", err)
		}
		b.StartTimer()
	}
}
