package loadgen

import (
	"context"
	"sync"
	"time"
)

// CallResult is what RunCalls measured.
type CallResult struct {
	Calls   int
	Errors  int
	Elapsed time.Duration
	// Throughput is successful calls per second of Elapsed.
	Throughput float64
	// Latency is of the successful calls, whose durations Latencies holds.
	Latency     Summary
	Latencies   []time.Duration
	FirstErrors []string
}

// Add folds o, another run of the same calls, into r: a measurement made in rounds, interleaved
// with another one, so that both see the same drift of the machine.
func (r *CallResult) Add(o CallResult) {
	r.Calls += o.Calls
	r.Errors += o.Errors
	r.Elapsed += o.Elapsed
	r.Latencies = append(r.Latencies, o.Latencies...)
	for _, e := range o.FirstErrors {
		if len(r.FirstErrors) < 5 {
			r.FirstErrors = append(r.FirstErrors, e)
		}
	}
	r.Latency = Summarize(r.Latencies)
	r.Throughput = 0
	if s := r.Elapsed.Seconds(); s > 0 {
		r.Throughput = float64(len(r.Latencies)) / s
	}
}

// RunCalls makes n calls, concurrency at a time, and measures them: the same shape of load as
// Run, for calls that are not webhook requests (wapipe bench --floor times the webhook's two
// unavoidable calls, made directly, with it). call gets the index of its call, 0 to n-1.
func RunCalls(ctx context.Context, n, concurrency int, call func(ctx context.Context, i int) error) CallResult {
	type sample struct {
		d   time.Duration
		err error
	}
	jobs := make(chan int)
	samples := make(chan sample, concurrency)
	var wg sync.WaitGroup
	begin := time.Now()
	for range concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				start := time.Now()
				err := call(ctx, i)
				samples <- sample{time.Since(start), err}
			}
		}()
	}
	go func() {
		defer close(jobs)
		for i := range n {
			select {
			case jobs <- i:
			case <-ctx.Done():
				return
			}
		}
	}()
	go func() {
		wg.Wait()
		close(samples)
	}()
	var res CallResult
	var lat []time.Duration
	for s := range samples {
		res.Calls++
		if s.err != nil {
			res.Errors++
			if len(res.FirstErrors) < 5 {
				res.FirstErrors = append(res.FirstErrors, s.err.Error())
			}
			continue
		}
		lat = append(lat, s.d)
	}
	res.Elapsed = time.Since(begin)
	res.Latency, res.Latencies = Summarize(lat), lat
	if s := res.Elapsed.Seconds(); s > 0 {
		res.Throughput = float64(len(lat)) / s
	}
	return res
}
