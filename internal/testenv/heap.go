package testenv

import (
	"runtime"
	"sync/atomic"
	"time"
)

// HeapPeak samples the heap in use (runtime.MemStats.HeapInuse) every interval until the
// returned stop is called, which returns the largest value seen, in bytes: the peak memory a
// benchmark reports. Each sample stops the world briefly, so keep interval at a millisecond or
// more.
func HeapPeak(interval time.Duration) (stop func() uint64) {
	var peak atomic.Uint64
	done, sampled := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(sampled)
		t := time.NewTicker(interval)
		defer t.Stop()
		var ms runtime.MemStats
		sample := func() {
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > peak.Load() {
				peak.Store(ms.HeapInuse)
			}
		}
		// One sample at once: a stop before the first tick still reports the heap.
		sample()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				sample()
			}
		}
	}()
	return func() uint64 {
		close(done)
		<-sampled
		return peak.Load()
	}
}
