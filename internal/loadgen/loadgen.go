// Package loadgen measures wapipe under load: it posts signed, unique WhatsApp text messages to a
// webhook at a set concurrency or rate, bounded in count and time, and reports throughput, the
// webhook's answer time percentiles and status codes; then, against the fake Graph API, it waits
// for every reply and reports the end-to-end latency from send to reply.
//
// Traffic stays on this machine unless the caller allows otherwise (CheckLocal): a load test is
// never pointed at somebody else's server by accident.
package loadgen

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/wapipe/wapipe/internal/whatsapp"
)

// MaxMessages bounds one run.
const MaxMessages = 100_000

// Config is one load run.
type Config struct {
	// URL is the webhook's POST URL.
	URL string
	// Secret signs the bodies (X-Hub-Signature-256).
	Secret string
	// N is how many messages to send.
	N int
	// Concurrency is how many requests may be in flight at once.
	Concurrency int
	// Rate, when > 0, paces request starts at Rate per second (still capped by Concurrency);
	// 0 sends as fast as Concurrency allows.
	Rate float64
	// Duration caps the sending phase: no request starts after it. Requests in flight finish.
	Duration time.Duration
	// From is the sender's WhatsApp id of every message; when empty each message comes from its
	// own contact (BenchSender), as real load does: one contact's burst would only measure the
	// tenant's conversation rate limit.
	From string
	// Client sends the requests; a client tuned for Concurrency connections when nil.
	Client *http.Client
	// Progress, when set, is called about every ProgressEvery (1 s by default) while sending.
	Progress      func(Progress)
	ProgressEvery time.Duration
}

// Progress is a snapshot of a run.
type Progress struct {
	Started, Answered, Target int
	Elapsed                   time.Duration
}

// Result is what a run measured.
type Result struct {
	Target   int
	Started  int
	Answered int
	// Errors counts requests that got no HTTP answer (network errors, timeouts).
	Errors int
	// Codes counts the webhook's status codes.
	Codes   map[int]int
	Elapsed time.Duration
	// Throughput is answered requests per second of Elapsed.
	Throughput float64
	// Latency is the webhook's answer time: request start to the answer's body read.
	Latency Summary
	// StoppedEarly says why the run sent fewer than Target ("duration cap", "cancelled").
	StoppedEarly string
	// Sent maps the id of every message the webhook accepted (2xx) to the time its request
	// started: the start of its end-to-end latency.
	Sent map[string]time.Time
	// FirstErrors are up to five transport errors, for the report.
	FirstErrors []string
}

// Summary describes a set of durations.
type Summary struct {
	Count                    int
	Min, Mean, P50, P95, P99 time.Duration
	Max                      time.Duration
}

// Summarize computes a Summary; percentiles are nearest-rank.
func Summarize(ds []time.Duration) Summary {
	if len(ds) == 0 {
		return Summary{}
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	var sum time.Duration
	for _, d := range s {
		sum += d
	}
	return Summary{
		Count: len(s), Min: s[0], Max: s[len(s)-1], Mean: sum / time.Duration(len(s)),
		P50: Percentile(s, 50), P95: Percentile(s, 95), P99: Percentile(s, 99),
	}
}

// Percentile returns the nearest-rank p-th percentile of sorted durations.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	return sorted[min(max(rank, 1), len(sorted))-1]
}

// CheckLocal refuses a URL whose host is not on this machine (loopback: 127.0.0.0/8, ::1,
// localhost).
func CheckLocal(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return fmt.Errorf("%q is not an absolute http(s) URL", raw)
	}
	host := u.Hostname()
	if strings.EqualFold(host, "localhost") {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("%s is not a loopback address: load stays on this machine unless --allow-remote", host)
}

func (c *Config) validate() error {
	var errs []error
	if c.N < 1 || c.N > MaxMessages {
		errs = append(errs, fmt.Errorf("n must be 1 to %d, got %d", MaxMessages, c.N))
	}
	if c.Concurrency < 1 || c.Concurrency > 1024 {
		errs = append(errs, fmt.Errorf("concurrency must be 1 to 1024, got %d", c.Concurrency))
	}
	if c.Rate < 0 {
		errs = append(errs, fmt.Errorf("rate must not be negative"))
	}
	if c.Duration <= 0 {
		errs = append(errs, fmt.Errorf("duration must be positive"))
	}
	return errors.Join(errs...)
}

// NewClient returns an HTTP client that keeps up to conns connections to one host.
func NewClient(conns int, timeout time.Duration) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns, tr.MaxIdleConnsPerHost, tr.MaxConnsPerHost = conns, conns, conns
	return &http.Client{Transport: tr, Timeout: timeout}
}

type sample struct {
	latency time.Duration
	code    int
	err     error
	id      string
	start   time.Time
}

// Run sends cfg.N messages and measures the webhook's answers. It stops by itself: after N
// messages, at the Duration cap, or when ctx ends.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	client := cfg.Client
	if client == nil {
		client = NewClient(cfg.Concurrency, 30*time.Second)
	}
	every := cfg.ProgressEvery
	if every <= 0 {
		every = time.Second
	}

	sendCtx, cancel := context.WithTimeout(ctx, cfg.Duration)
	defer cancel()
	jobs := make(chan int)
	samples := make(chan sample, cfg.Concurrency)
	rn := &runCounts{begin: time.Now()}

	var workers sync.WaitGroup
	for range cfg.Concurrency {
		workers.Add(1)
		go func() {
			defer workers.Done()
			for i := range jobs {
				samples <- send(ctx, client, cfg, i)
			}
		}()
	}
	stopped := make(chan string, 1)
	go rn.feed(ctx, sendCtx, cfg, jobs, stopped)
	go func() {
		workers.Wait()
		close(samples)
	}()

	res, lat := rn.collect(cfg, samples, every)
	res.Elapsed = time.Since(rn.begin)
	res.Started, res.Answered = rn.counts()
	select {
	case why := <-stopped:
		if res.Started < res.Target {
			res.StoppedEarly = why
		}
	default:
	}
	res.Latency = Summarize(lat)
	if s := res.Elapsed.Seconds(); s > 0 {
		res.Throughput = float64(res.Answered) / s
	}
	return res, nil
}

// runCounts is what a run has started and seen answered, read by the progress reports.
type runCounts struct {
	begin             time.Time
	mu                sync.Mutex
	started, answered int
}

// counts returns the messages started and answered so far.
func (rn *runCounts) counts() (started, answered int) {
	rn.mu.Lock()
	defer rn.mu.Unlock()
	return rn.started, rn.answered
}

// feed hands the message numbers to the workers at cfg.Rate, then closes jobs. When sendCtx
// ends first it says why on stopped.
func (rn *runCounts) feed(ctx, sendCtx context.Context, cfg Config, jobs chan<- int, stopped chan<- string) {
	defer close(jobs)
	for i := range cfg.N {
		if cfg.Rate > 0 {
			due := rn.begin.Add(time.Duration(float64(i) / cfg.Rate * float64(time.Second)))
			if d := time.Until(due); d > 0 {
				t := time.NewTimer(d)
				select {
				case <-t.C:
				case <-sendCtx.Done():
					t.Stop()
				}
			}
		}
		select {
		case jobs <- i:
			rn.mu.Lock()
			rn.started++
			rn.mu.Unlock()
		case <-sendCtx.Done():
		}
		if sendCtx.Err() != nil {
			why := "duration cap"
			if ctx.Err() != nil {
				why = "cancelled"
			}
			stopped <- why
			return
		}
	}
}

// collect reads the samples until the workers are done, reporting progress every interval, and
// returns the result so far with the answers' latencies.
func (rn *runCounts) collect(cfg Config, samples <-chan sample, every time.Duration) (*Result, []time.Duration) {
	res := &Result{Target: cfg.N, Codes: map[int]int{}, Sent: map[string]time.Time{}}
	var lat []time.Duration
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case s, ok := <-samples:
			if !ok {
				return res, lat
			}
			if s.err != nil {
				res.Errors++
				if len(res.FirstErrors) < 5 {
					res.FirstErrors = append(res.FirstErrors, s.err.Error())
				}
				continue
			}
			rn.mu.Lock()
			rn.answered++
			rn.mu.Unlock()
			res.Codes[s.code]++
			lat = append(lat, s.latency)
			if s.code >= 200 && s.code < 300 {
				res.Sent[s.id] = s.start
			}
		case <-tick.C:
			if cfg.Progress != nil {
				started, answered := rn.counts()
				cfg.Progress(Progress{Started: started, Answered: answered, Target: cfg.N, Elapsed: time.Since(rn.begin)})
			}
		}
	}
}

// BenchSender is the sender of the i-th message when Config.From is empty: a fictitious number in
// a range no real subscriber has (+1 555 01xx style), one per message.
func BenchSender(i int) string { return fmt.Sprintf("1555%07d", i) }

func send(ctx context.Context, client *http.Client, cfg Config, i int) sample {
	id := whatsapp.NewMessageID()
	from := cfg.From
	if from == "" {
		from = BenchSender(i)
	}
	body := whatsapp.SampleText(whatsapp.SampleOptions{From: from, MessageID: id}, fmt.Sprintf("bench message %d", i+1))
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, cfg.URL, bytes.NewReader(body))
	if err != nil {
		return sample{err: err, id: id}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Hub-Signature-256", whatsapp.Sign(body, cfg.Secret))
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return sample{err: err, id: id, start: start}
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return sample{latency: time.Since(start), code: resp.StatusCode, err: err, id: id, start: start}
}
