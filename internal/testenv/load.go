package testenv

import (
	"sync"
	"sync/atomic"
	"time"
)

// Load is what RunConcurrently measured.
type Load struct {
	Elapsed time.Duration
	// CPU is the test process's CPU time over the run (CPUTime).
	CPU    time.Duration
	Failed int64
}

// RunConcurrently calls f for i = 1..n from `workers` goroutines at once, so that `workers`
// calls are in flight until the last ones (a service's concurrency), and returns the wall and
// CPU time the run took and how many calls failed.
func RunConcurrently(n int64, workers int, f func(i int64) error) Load {
	var next, failed atomic.Int64
	cpu0, start := CPUTime(), time.Now()
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := next.Add(1); i <= n; i = next.Add(1) {
				if err := f(i); err != nil {
					failed.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	return Load{Elapsed: time.Since(start), CPU: CPUTime() - cpu0, Failed: failed.Load()}
}
