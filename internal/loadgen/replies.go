package loadgen

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"time"

	"github.com/wapipe/wapipe/internal/keyedid"
	"github.com/wapipe/wapipe/tasks"
)

// ReplyConfig is a wait for the replies to a run's messages at the fake Graph API.
type ReplyConfig struct {
	// GraphURL is the fake Graph API's URL; only its scheme and host are used
	// (/_fake/requests is at its root).
	GraphURL string
	// Sent maps each message id to its send time (Result.Sent).
	Sent map[string]time.Time
	// Timeout bounds the wait.
	Timeout time.Duration
	// Poll is the polling interval; 250 ms when zero.
	Poll time.Duration
	// Client reads the fake; a 10 s-timeout client when nil.
	Client *http.Client
	// Progress, when set, is called after each poll.
	Progress func(seen, want int, elapsed time.Duration)
	// Keyer makes the reply keys the stack's worker makes (its LOG_HASH_KEY); the development
	// key's when nil.
	Keyer *keyedid.Keyer
}

// Replies is what the wait saw.
type Replies struct {
	Want int
	Seen int
	// Duplicates counts replies beyond the first for one message: wapipe promises none.
	Duplicates int
	// Missing are up to ten message ids with no reply when the wait ended.
	Missing []string
	// Latency is end to end: the webhook request's start to the reply's arrival at the fake.
	Latency Summary
	// Throughput is replies per second from the first send to the last reply.
	Throughput float64
	Elapsed    time.Duration
}

// fakeRequest is the part of graphfake's /_fake/requests entries the wait reads.
type fakeRequest struct {
	Kind   string    `json:"kind"`
	Status int       `json:"status"`
	Time   time.Time `json:"time"`
	Body   struct {
		BizOpaqueCallbackData string `json:"biz_opaque_callback_data"`
		Context               *struct {
			MessageID string `json:"message_id"`
		} `json:"context"`
	} `json:"body"`
}

// WaitReplies polls the fake Graph API until every message of cfg.Sent has a reply or the
// timeout passes. A reply is matched to its message by biz_opaque_callback_data (the idempotency
// key wapipe derives from the message id), or else by the quoted message id.
func WaitReplies(ctx context.Context, cfg ReplyConfig) (*Replies, error) {
	u, err := url.Parse(cfg.GraphURL)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("graph URL %q is not an absolute URL", cfg.GraphURL)
	}
	endpoint := u.Scheme + "://" + u.Host + "/_fake/requests"
	client := cfg.Client
	if client == nil {
		client = &http.Client{Timeout: 10 * time.Second}
	}
	poll := cfg.Poll
	if poll <= 0 {
		poll = 250 * time.Millisecond
	}
	byKey := make(map[string]string, len(cfg.Sent))
	var firstSend time.Time
	keyer := cfg.Keyer
	if keyer == nil {
		keyer = keyedid.Dev()
	}
	for id, t := range cfg.Sent {
		byKey[tasks.IdempotencyKey(keyer, id)] = id
		if firstSend.IsZero() || t.Before(firstSend) {
			firstSend = t
		}
	}
	begin := time.Now()
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	r := &Replies{Want: len(cfg.Sent)}
	var replies map[string][]time.Time
	tick := time.NewTicker(poll)
	defer tick.Stop()
	for {
		reqs, err := fetch(ctx, client, endpoint)
		if err != nil && ctx.Err() == nil {
			return nil, err
		}
		if err == nil {
			replies = match(reqs, byKey, cfg.Sent)
			if cfg.Progress != nil {
				cfg.Progress(len(replies), r.Want, time.Since(begin))
			}
		}
		if len(replies) >= r.Want || ctx.Err() != nil {
			break
		}
		select {
		case <-ctx.Done():
		case <-tick.C:
		}
	}
	r.Elapsed = time.Since(begin)
	var lat []time.Duration
	var last time.Time
	for id, ts := range replies {
		r.Seen++
		r.Duplicates += len(ts) - 1
		lat = append(lat, ts[0].Sub(cfg.Sent[id]))
		if ts[0].After(last) {
			last = ts[0]
		}
	}
	r.Latency = Summarize(lat)
	if d := last.Sub(firstSend).Seconds(); d > 0 {
		r.Throughput = float64(r.Seen) / d
	}
	var missing []string
	for id := range cfg.Sent {
		if _, ok := replies[id]; !ok {
			missing = append(missing, id)
		}
	}
	sort.Strings(missing)
	r.Missing = missing[:min(len(missing), 10)]
	return r, nil
}

func fetch(ctx context.Context, client *http.Client, endpoint string) ([]fakeRequest, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, endpoint, nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", endpoint, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 256))
		return nil, fmt.Errorf("GET %s: %s: %s (is it the fake Graph API?)", endpoint, resp.Status, b)
	}
	var out struct {
		Requests []fakeRequest `json:"requests"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return nil, fmt.Errorf("GET %s: decode: %w", endpoint, err)
	}
	return out.Requests, nil
}

// match returns, per message id of sent, the arrival times of its replies, oldest first.
func match(reqs []fakeRequest, byKey map[string]string, sent map[string]time.Time) map[string][]time.Time {
	out := map[string][]time.Time{}
	for _, q := range reqs {
		if q.Kind != "send" || q.Status != http.StatusOK {
			continue
		}
		id, ok := byKey[q.Body.BizOpaqueCallbackData]
		if !ok && q.Body.Context != nil {
			if _, known := sent[q.Body.Context.MessageID]; known {
				id, ok = q.Body.Context.MessageID, true
			}
		}
		if ok {
			out[id] = append(out[id], q.Time)
		}
	}
	for _, ts := range out {
		sort.Slice(ts, func(i, j int) bool { return ts[i].Before(ts[j]) })
	}
	return out
}
