package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/wapipe/wapipe/internal/loadgen"
	"github.com/wapipe/wapipe/internal/operator"
)

const benchUsage = `Usage: wapipe bench [flags]

Posts --n signed, unique text messages to the webhook, --concurrency at a time (or paced at
--rate per second), and stops by itself after --n messages or --duration. Prints the throughput,
the webhook's answer time p50/p95/p99/max and the status codes. With --wait-replies it then
polls the fake Graph API (GET /_fake/requests at --graph-url) until every accepted message has
its reply, matched by biz_opaque_callback_data or the quoted message id, and prints the end-to-end
latency (send → reply at the fake). End-to-end throughput is bounded by the outbound queue's
rate limit (wa-outbound: 10 dispatches/s in tasks/queues.yaml).

With --api-key it loads the api service instead (--api-url, default http://127.0.0.1:8083):
POST /v1/messages of --n template messages to --to, --concurrency at a time, and prints the
accepted messages per second and the answer time p50/p95/p99.

Traffic stays on this machine: a non-loopback --url or --graph-url is refused unless
--allow-remote. Exits 1 when a request failed, or a reply is missing or duplicated.`

// benchRun is one run of `wapipe bench`: its flags.
type benchRun struct {
	cfg                              loadgen.Config
	graphURL                         string
	allowRemote, waitReplies, asJSON bool
	replyTimeout                     time.Duration
	quiet                            bool
	floor                            floorFlags
	api                              apiBench
}

// flags registers the flags of `wapipe bench` on a new flag set.
func (b *benchRun) flags() *flagSet {
	fs := newFlagSet("bench", benchUsage+floorUsage)
	cfg := &b.cfg
	fs.StringVar(&cfg.URL, "url", defaultWebhookURL, "webhook URL")
	fs.StringVar(&cfg.Secret, "secret", env("WHATSAPP_APP_SECRET", devAppSecret), "Meta app secret that signs the bodies (env WHATSAPP_APP_SECRET; default the devstack dev secret)")
	fs.IntVar(&cfg.N, "n", 100, fmt.Sprintf("messages to send (at most %d)", loadgen.MaxMessages))
	fs.IntVar(&cfg.Concurrency, "concurrency", 8, "requests in flight at once")
	fs.Float64Var(&cfg.Rate, "rate", 0, "start requests at this many per second (0: as fast as --concurrency allows)")
	fs.DurationVar(&cfg.Duration, "duration", time.Minute, "cap on the sending phase")
	fs.StringVar(&cfg.From, "from", "", "sender's WhatsApp id (default: Meta's sample number)")
	b.floor.register(fs)
	fs.BoolVar(&b.allowRemote, "allow-remote", false, "allow a URL that is not on this machine (loopback)")
	fs.BoolVar(&b.waitReplies, "wait-replies", false, "wait for every reply at the fake Graph API and measure end to end")
	fs.StringVar(&b.graphURL, "graph-url", "http://127.0.0.1:8090", "the fake Graph API (for --wait-replies)")
	fs.DurationVar(&b.replyTimeout, "reply-timeout", 3*time.Minute, "cap on the wait for replies")
	fs.BoolVar(&b.asJSON, "json", false, "print the results as JSON")
	fs.BoolVar(&b.quiet, "quiet", false, "no progress on stderr")
	fs.StringVar(&b.api.key, "api-key", "", "bench the api service with this API key (wapipe tenants api-key) instead of the webhook")
	fs.StringVar(&b.api.url, "api-url", "http://127.0.0.1:8083", "the api service (with --api-key)")
	fs.StringVar(&b.api.to, "to", "15550001234", "recipient of the api bench's messages (with --api-key)")
	fs.StringVar(&b.api.number, "phone-number-id", "", "the tenant's number to send from, when it has several (with --api-key)")
	return fs
}

func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	b := &benchRun{}
	pos, err := b.flags().parse(args, stdout)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageErrorf("unexpected argument %q", pos[0])
	}
	if b.api.key != "" {
		return b.runAPI(ctx, stdout)
	}
	if err := b.checkWebhook(); err != nil {
		return err
	}
	if b.floor.on {
		return runBenchFloor(ctx, b.cfg, b.floor, b.asJSON, b.quiet, stdout, stderr)
	}
	if !b.quiet {
		b.cfg.Progress = func(p loadgen.Progress) {
			fmt.Fprintf(stderr, "bench: %s: %d/%d started, %d answered\n", p.Elapsed.Round(time.Second), p.Started, p.Target, p.Answered)
		}
	}
	res, err := loadgen.Run(ctx, b.cfg)
	if err != nil {
		return usageError{err.Error()}
	}
	replies, err := b.replies(ctx, res, stderr)
	if err != nil {
		return err
	}
	if b.asJSON {
		err = operator.WriteJSON(stdout, benchJSON(b.cfg, res, replies))
	} else {
		_, err = io.WriteString(stdout, benchReport(b.cfg, res, replies))
	}
	if err != nil {
		return err
	}
	return benchVerdict(res, replies)
}

// runAPI loads the api service instead of the webhook (--api-key).
func (b *benchRun) runAPI(ctx context.Context, stdout io.Writer) error {
	if err := loadgen.CheckLocal(b.api.url); err != nil && !b.allowRemote {
		return usageErrorf("--api-url: %v", err)
	}
	b.api.n, b.api.conc = b.cfg.N, max(b.cfg.Concurrency, 1)
	r := b.api.run(ctx)
	r.write(stdout)
	if r.Failed > 0 {
		return exitError{code: 1, msg: fmt.Sprintf("%d request(s) not accepted", r.Failed)}
	}
	return nil
}

// checkWebhook refuses a webhook bench's URLs off this machine (unless --allow-remote) and a
// reply timeout that is not positive.
func (b *benchRun) checkWebhook() error {
	if !b.allowRemote {
		if err := loadgen.CheckLocal(b.cfg.URL); err != nil {
			return usageErrorf("--url: %v", err)
		}
		if b.waitReplies {
			if err := loadgen.CheckLocal(b.graphURL); err != nil {
				return usageErrorf("--graph-url: %v", err)
			}
		}
	}
	if b.replyTimeout <= 0 {
		return usageErrorf("--reply-timeout must be positive")
	}
	return nil
}

// replies waits for the replies of res's sends at the fake Graph API (--wait-replies); nil
// without it.
func (b *benchRun) replies(ctx context.Context, res *loadgen.Result, stderr io.Writer) (*loadgen.Replies, error) {
	if !b.waitReplies || len(res.Sent) == 0 {
		return nil, nil
	}
	rc := loadgen.ReplyConfig{GraphURL: b.graphURL, Sent: res.Sent, Timeout: b.replyTimeout}
	if k, err := keyerFromEnv(); err == nil {
		rc.Keyer = k
	}
	if !b.quiet {
		last := time.Time{}
		rc.Progress = func(seen, want int, elapsed time.Duration) {
			if time.Since(last) >= time.Second || seen == want {
				last = time.Now()
				fmt.Fprintf(stderr, "bench: waiting for replies: %d/%d after %s\n", seen, want, elapsed.Round(time.Second))
			}
		}
	}
	return loadgen.WaitReplies(ctx, rc)
}

func benchReport(cfg loadgen.Config, res *loadgen.Result, replies *loadgen.Replies) string {
	var b strings.Builder
	mode := fmt.Sprintf("concurrency %d", cfg.Concurrency)
	if cfg.Rate > 0 {
		mode += fmt.Sprintf(", rate %.0f/s", cfg.Rate)
	}
	fmt.Fprintf(&b, "bench: %d messages to %s, %s\n", res.Target, cfg.URL, mode)
	fmt.Fprintf(&b, "sent %d, answered %d, transport errors %d in %s: %.1f req/s\n",
		res.Started, res.Answered, res.Errors, res.Elapsed.Round(time.Millisecond), res.Throughput)
	if res.StoppedEarly != "" {
		fmt.Fprintf(&b, "stopped early: %s\n", res.StoppedEarly)
	}
	codes := make([]int, 0, len(res.Codes))
	for c := range res.Codes {
		codes = append(codes, c)
	}
	slices.Sort(codes)
	parts := make([]string, len(codes))
	for i, c := range codes {
		parts[i] = fmt.Sprintf("%d×%d", c, res.Codes[c])
	}
	fmt.Fprintf(&b, "status codes: %s\n", strings.Join(parts, " "))
	for _, e := range res.FirstErrors {
		fmt.Fprintf(&b, "  error: %s\n", oneLine(e))
	}
	fmt.Fprintf(&b, "webhook answer time: %s\n", fmtSummary(res.Latency))
	if replies != nil {
		fmt.Fprintf(&b, "end to end (send → reply at the fake Graph API): %d/%d replies, %d duplicate(s), %.1f replies/s\n",
			replies.Seen, replies.Want, replies.Duplicates, replies.Throughput)
		fmt.Fprintf(&b, "end-to-end latency: %s\n", fmtSummary(replies.Latency))
		if len(replies.Missing) > 0 {
			fmt.Fprintf(&b, "missing replies (first %d): %s\n", len(replies.Missing), strings.Join(replies.Missing, " "))
		}
	}
	return b.String()
}

func fmtSummary(s loadgen.Summary) string {
	if s.Count == 0 {
		return "no samples"
	}
	r := func(d time.Duration) string { return d.Round(10 * time.Microsecond).String() }
	return fmt.Sprintf("p50 %s  p95 %s  p99 %s  max %s  (min %s, mean %s, n=%d)",
		r(s.P50), r(s.P95), r(s.P99), r(s.Max), r(s.Min), r(s.Mean), s.Count)
}

type summaryJSON struct {
	Count  int     `json:"count"`
	MinMS  float64 `json:"min_ms"`
	MeanMS float64 `json:"mean_ms"`
	P50MS  float64 `json:"p50_ms"`
	P95MS  float64 `json:"p95_ms"`
	P99MS  float64 `json:"p99_ms"`
	MaxMS  float64 `json:"max_ms"`
}

func toJSON(s loadgen.Summary) summaryJSON {
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	return summaryJSON{s.Count, ms(s.Min), ms(s.Mean), ms(s.P50), ms(s.P95), ms(s.P99), ms(s.Max)}
}

func benchJSON(cfg loadgen.Config, res *loadgen.Result, replies *loadgen.Replies) map[string]any {
	codes := map[string]int{}
	for c, n := range res.Codes {
		codes[fmt.Sprint(c)] = n
	}
	out := map[string]any{
		"url": cfg.URL, "n": res.Target, "concurrency": cfg.Concurrency, "rate": cfg.Rate,
		"started": res.Started, "answered": res.Answered, "errors": res.Errors, "stopped_early": res.StoppedEarly,
		"elapsed_s": res.Elapsed.Seconds(), "throughput_rps": res.Throughput, "status_codes": codes,
		"webhook_latency": toJSON(res.Latency),
	}
	if replies != nil {
		out["replies"] = map[string]any{
			"want": replies.Want, "seen": replies.Seen, "duplicates": replies.Duplicates, "missing": replies.Missing,
			"throughput_rps": replies.Throughput, "end_to_end_latency": toJSON(replies.Latency),
		}
	}
	return out
}

// benchVerdict fails the run when the pipeline did not do its job.
func benchVerdict(res *loadgen.Result, replies *loadgen.Replies) error {
	bad := res.Errors
	for c, n := range res.Codes {
		if c < 200 || c > 299 {
			bad += n
		}
	}
	switch {
	case bad > 0:
		return fmt.Errorf("%d of %d requests failed", bad, res.Started)
	case res.StoppedEarly != "":
		return fmt.Errorf("sent %d of %d messages: %s", res.Started, res.Target, res.StoppedEarly)
	case replies != nil && replies.Seen < replies.Want:
		return fmt.Errorf("%d of %d replies missing after %s", replies.Want-replies.Seen, replies.Want, replies.Elapsed.Round(time.Second))
	case replies != nil && replies.Duplicates > 0:
		return fmt.Errorf("%d duplicate replies", replies.Duplicates)
	}
	return nil
}
