package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/wapipe/wapipe/internal/loadgen"
	"github.com/wapipe/wapipe/internal/operator"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/taskqueue"
	"github.com/wapipe/wapipe/internal/whatsapp"
	"github.com/wapipe/wapipe/tasks"
)

// floorUsage ends bench's usage.
const floorUsage = `

With --floor it measures the webhook against its floor instead: at each concurrency of --levels,
--n times the two calls the webhook cannot avoid (one Firestore create in inbound_events and one
CreateTask on the inbound queue, made directly with the connection flags), then --n signed
requests to the webhook over HTTP, and prints p50/p95/p99, req/s and the webhook/floor ratio. The
inbound queue is paused for the run, so the worker does not compete for the CPU, and every task
the run made is deleted after it (the queue is resumed unless it was paused before). Each level
alternates --rounds rounds of floor calls and webhook requests, so both see the same drift of a
shared machine.`

// floorFlags are bench --floor's settings.
type floorFlags struct {
	on     bool
	levels string
	warmup int
	rounds int
	c      connFlags
	q      queueFlags
}

func (f *floorFlags) register(fs *flagSet) {
	fs.BoolVar(&f.on, "floor", false, "measure the webhook against its floor (one Firestore create + one CreateTask), --n of each per level")
	fs.StringVar(&f.levels, "levels", "1,8", "with --floor: the concurrencies to measure, comma-separated")
	fs.IntVar(&f.warmup, "warmup", 200, "with --floor: calls of each kind before measuring (the emulators are JVMs and warm up)")
	fs.IntVar(&f.rounds, "rounds", 5, "with --floor: rounds per level, floor and webhook alternating")
	f.c.register(fs)
	f.q.register(fs)
}

// floorLevel is one concurrency's figures.
type floorLevel struct {
	Concurrency int
	Floor       loadgen.CallResult
	Webhook     loadgen.CallResult
}

func (l floorLevel) ratio(p func(loadgen.Summary) time.Duration) float64 {
	if f := p(l.Floor.Latency); f > 0 {
		return float64(p(l.Webhook.Latency)) / float64(f)
	}
	return 0
}

func p50(s loadgen.Summary) time.Duration { return s.P50 }
func p95(s loadgen.Summary) time.Duration { return s.P95 }

func parseLevels(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > 256 {
			return nil, fmt.Errorf("--levels: %q is not a concurrency from 1 to 256", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// runBenchFloor is wapipe bench --floor.
func runBenchFloor(ctx context.Context, cfg loadgen.Config, f floorFlags, asJSON, quiet bool, stdout, stderr io.Writer) error {
	levels, err := f.check(cfg)
	if err != nil {
		return err
	}
	if err := f.c.resolve(); err != nil {
		return err
	}
	progress := func(format string, args ...any) {
		if !quiet {
			fmt.Fprintf(stderr, "bench --floor: "+format+"\n", args...)
		}
	}
	db, err := f.c.conn.Store(ctx)
	if err != nil {
		return err
	}
	defer db.Close()
	admin, err := f.c.conn.Queues(ctx)
	if err != nil {
		return err
	}
	defer admin.Close()
	tq, err := taskqueue.New(ctx, taskqueue.Config{
		ProjectID: f.c.conn.Project, Location: f.c.conn.Location, EmulatorHost: f.c.conn.TasksEmulatorHost,
		BaseURL: env("INTERNAL_TASK_BASE_URL", "http://127.0.0.1:8081"), Token: env("INTERNAL_TASK_TOKEN", "bench-floor"),
	})
	if err != nil {
		return err
	}
	defer tq.Close()

	// Paused, the inbound queue keeps every task the run makes from reaching the worker.
	st, err := admin.QueueStats(ctx, f.q.inbound)
	if err != nil {
		return err
	}
	if !st.Paused {
		if err := admin.PauseQueue(ctx, f.q.inbound); err != nil {
			return err
		}
	}
	b := &floorBench{markers: store.NewMarkers(db, store.MarkerOptions{}), tq: tq, queue: f.q.inbound, from: cfg.From}
	defer func() {
		// Clean up on a context of its own: an interrupted run still leaves nothing behind.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
		defer cancel()
		progress("deleting the %d tasks the run made", len(b.made))
		if err := b.cleanup(cctx, admin); err != nil {
			fmt.Fprintf(stderr, "bench --floor: %v\n", err)
		}
		if !st.Paused {
			if err := admin.ResumeQueue(cctx, f.q.inbound); err != nil {
				fmt.Fprintf(stderr, "bench --floor: %v\n", err)
			}
		}
	}()

	out := b.measure(ctx, cfg, f, levels, progress)
	if asJSON {
		err = operator.WriteJSON(stdout, floorJSON(cfg, out))
	} else {
		_, err = io.WriteString(stdout, floorReport(cfg, out))
	}
	if err != nil {
		return err
	}
	return floorVerdict(out)
}

// check reads --levels and refuses an --n or --rounds the run cannot make.
func (f floorFlags) check(cfg loadgen.Config) ([]int, error) {
	levels, err := parseLevels(f.levels)
	if err != nil {
		return nil, usageError{err.Error()}
	}
	if cfg.N < 1 || cfg.N > loadgen.MaxMessages {
		return nil, usageErrorf("--n must be 1 to %d", loadgen.MaxMessages)
	}
	if f.rounds < 1 || f.rounds > cfg.N {
		return nil, usageErrorf("--rounds must be 1 to --n")
	}
	return levels, nil
}

// measure warms up, then measures each concurrency of levels. Each level alternates rounds of
// floor calls and webhook requests, so that both sides see the same drift of a shared machine
// (the emulators, other processes).
func (b *floorBench) measure(ctx context.Context, cfg loadgen.Config, f floorFlags, levels []int, progress func(string, ...any)) []floorLevel {
	client := loadgen.NewClient(256, 30*time.Second)
	if f.warmup > 0 {
		progress("warming up: %d floor calls and %d webhook requests", f.warmup, f.warmup)
		b.run(ctx, f.warmup, 8)
		b.webhook(ctx, client, cfg, f.warmup, 8)
	}
	var out []floorLevel
	for _, c := range levels {
		l := floorLevel{Concurrency: c}
		for r := range f.rounds {
			n := cfg.N / f.rounds
			if r < cfg.N%f.rounds {
				n++
			}
			progress("concurrency %d, round %d of %d: %d floor calls, %d webhook requests", c, r+1, f.rounds, n, n)
			l.Floor.Add(b.run(ctx, n, c))
			l.Webhook.Add(b.webhook(ctx, client, cfg, n, c))
		}
		out = append(out, l)
		if ctx.Err() != nil {
			break
		}
	}
	return out
}

// floorBench makes the floor's calls: the webhook's two, directly.
type floorBench struct {
	markers *store.Markers
	tq      *taskqueue.Client
	queue   string
	from    string
	made    []string // task ids to delete after the run
}

func (b *floorBench) run(ctx context.Context, n, concurrency int) loadgen.CallResult {
	type prepared struct {
		id   string
		body []byte
	}
	// Bodies are made before the clock starts: the floor is the two calls and nothing else.
	calls := make([]prepared, n)
	for i := range calls {
		id := whatsapp.NewMessageID()
		payload := whatsapp.SampleText(whatsapp.SampleOptions{From: b.from, MessageID: id}, fmt.Sprintf("bench message %d", i+1))
		body, _ := json.Marshal(tasks.Inbound{InboundEventID: id, CorrelationID: "bench-floor", ReceivedAt: time.Now().UTC(), Payload: payload})
		calls[i] = prepared{id, body}
		b.made = append(b.made, tasks.InboundTaskID(id))
	}
	return loadgen.RunCalls(ctx, n, concurrency, func(ctx context.Context, i int) error {
		p := calls[i]
		if _, err := b.markers.MarkIfNew(ctx, p.id, "bench-floor"); err != nil {
			return err
		}
		_, err := b.tq.Enqueue(ctx, taskqueue.Task{Queue: b.queue, ID: tasks.InboundTaskID(p.id), Path: tasks.ProcessInboundPath,
			Body: p.body, CorrelationID: "bench-floor"})
		return err
	})
}

// webhook posts n signed text deliveries to the webhook, concurrency at a time; a call fails
// unless it is answered 200.
func (b *floorBench) webhook(ctx context.Context, client *http.Client, cfg loadgen.Config, n, concurrency int) loadgen.CallResult {
	bodies := make([][]byte, n)
	for i := range bodies {
		id := whatsapp.NewMessageID()
		bodies[i] = whatsapp.SampleText(whatsapp.SampleOptions{From: b.from, MessageID: id}, fmt.Sprintf("bench message %d", i+1))
		b.made = append(b.made, tasks.InboundTaskID(id))
	}
	return loadgen.RunCalls(ctx, n, concurrency, func(ctx context.Context, i int) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, cfg.URL, bytes.NewReader(bodies[i]))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(whatsapp.SignatureHeader, whatsapp.Sign(bodies[i], cfg.Secret))
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("webhook answered %d", resp.StatusCode)
		}
		return nil
	})
}

func (b *floorBench) cleanup(ctx context.Context, admin *taskqueue.Admin) error {
	var errs []error
	res := loadgen.RunCalls(ctx, len(b.made), 8, func(ctx context.Context, i int) error {
		return admin.DeleteTask(ctx, admin.TaskPath(b.queue, b.made[i]))
	})
	if res.Errors > 0 {
		errs = append(errs, fmt.Errorf("%d of %d tasks not deleted: %s", res.Errors, res.Calls, strings.Join(res.FirstErrors, "; ")))
	}
	return errors.Join(errs...)
}

func floorReport(cfg loadgen.Config, levels []floorLevel) string {
	var b strings.Builder
	fmt.Fprintf(&b, "bench --floor: %d calls of each kind per level, in alternating rounds; webhook %s; floor = one Firestore create + one CreateTask\n", cfg.N, cfg.URL)
	for _, l := range levels {
		fmt.Fprintf(&b, "concurrency %d\n", l.Concurrency)
		fmt.Fprintf(&b, "  floor:   %s  %.1f req/s", fmtSummary(l.Floor.Latency), l.Floor.Throughput)
		if l.Floor.Errors > 0 {
			fmt.Fprintf(&b, "  (%d failed: %s)", l.Floor.Errors, oneLine(strings.Join(l.Floor.FirstErrors, "; ")))
		}
		fmt.Fprintf(&b, "\n  webhook: %s  %.1f req/s", fmtSummary(l.Webhook.Latency), l.Webhook.Throughput)
		if l.Webhook.Errors > 0 {
			fmt.Fprintf(&b, "  (%d failed: %s)", l.Webhook.Errors, oneLine(strings.Join(l.Webhook.FirstErrors, "; ")))
		}
		fmt.Fprintf(&b, "\n  ratio webhook/floor: p50 %.2f  p95 %.2f\n", l.ratio(p50), l.ratio(p95))
	}
	return b.String()
}

func floorJSON(cfg loadgen.Config, levels []floorLevel) map[string]any {
	var out []map[string]any
	for _, l := range levels {
		out = append(out, map[string]any{
			"concurrency": l.Concurrency,
			"floor":       map[string]any{"latency": toJSON(l.Floor.Latency), "throughput_rps": l.Floor.Throughput, "errors": l.Floor.Errors},
			"webhook":     map[string]any{"latency": toJSON(l.Webhook.Latency), "throughput_rps": l.Webhook.Throughput, "errors": l.Webhook.Errors},
			"ratio_p50":   l.ratio(p50),
			"ratio_p95":   l.ratio(p95),
		})
	}
	return map[string]any{"url": cfg.URL, "n": cfg.N, "levels": out}
}

func floorVerdict(levels []floorLevel) error {
	for _, l := range levels {
		if l.Floor.Errors > 0 || l.Webhook.Errors > 0 {
			return fmt.Errorf("concurrency %d: %d floor calls and %d webhook requests failed", l.Concurrency, l.Floor.Errors, l.Webhook.Errors)
		}
	}
	return nil
}
