package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wapipe/wapipe/internal/graph/graphfake"
	"github.com/wapipe/wapipe/internal/whatsapp"
)

// The chaos run's traffic: Meta's deliveries of plain messages, the assistant tenant's contacts
// who book and confirm, and a business sending through /v1/messages with idempotency keys.

// deliveries is what deliverAll did.
type deliveries struct {
	mu        sync.Mutex
	accepted  []string
	answers   map[int]int
	posts     atomic.Int64
	transport atomic.Int64
}

func (d *deliveries) answered(code int) {
	d.mu.Lock()
	d.answers[code]++
	d.mu.Unlock()
}

func (d *deliveries) codes() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	keys := make([]int, 0, len(d.answers))
	for c := range d.answers {
		keys = append(keys, c)
	}
	sort.Ints(keys)
	parts := make([]string, len(keys))
	for i, c := range keys {
		parts[i] = fmt.Sprintf("%d×%d", c, d.answers[c])
	}
	return strings.Join(parts, " ")
}

// forEach runs fn(i) for i in [0, n), concurrency at a time.
func forEach(n, concurrency int, fn func(i int)) {
	jobs := make(chan int)
	var wg sync.WaitGroup
	for range max(1, concurrency) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				fn(i)
			}
		}()
	}
	for i := range n {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
}

// deliverAll sends n messages to the default number (no tenant: the single-tenant ack), each
// from its own contact, concurrency at a time, redelivering each until it is answered 200, as
// Meta does.
func deliverAll(ctx context.Context, url string, n, concurrency int, d *deliveries) {
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: concurrency}}
	forEach(n, concurrency, func(i int) {
		id := whatsapp.NewMessageID()
		body := whatsapp.SampleText(whatsapp.SampleOptions{MessageID: id, From: fmt.Sprintf("1650%07d", i)}, fmt.Sprintf("chaos message %d", i+1))
		if postUntilOK(ctx, client, url, body, d) {
			d.mu.Lock()
			d.accepted = append(d.accepted, id)
			d.mu.Unlock()
		}
	})
}

// postUntilOK posts a signed body until it is answered 200, backing off as Meta does (faster).
func postUntilOK(ctx context.Context, client *http.Client, url string, body []byte, d *deliveries) bool {
	wait := 100 * time.Millisecond
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline) && ctx.Err() == nil; {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(whatsapp.SignatureHeader, whatsapp.Sign(body, chaosSecret))
		resp, err := client.Do(req)
		if d != nil {
			d.posts.Add(1)
		}
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if d != nil {
				d.answered(resp.StatusCode)
			}
			if resp.StatusCode == http.StatusOK {
				return true
			}
		} else if d != nil {
			d.transport.Add(1)
		}
		time.Sleep(wait)
		wait = min(2*wait, 2*time.Second)
	}
	return false
}

// bookingContact is the wa_id of the i-th contact of the assistant tenant.
func bookingContact(i int) string { return fmt.Sprintf("1651%07d", i) }

// apiContact is the recipient of the i-th api send: one contact per send, so Graph's sends to
// it count that send's deliveries whatever its record key is.
func apiContact(i int) string { return fmt.Sprintf("1652%07d", i) }

// bookings is what the assistant tenant's contacts did.
type bookings struct {
	booked, prompted, confirmed atomic.Int64
	mu                          sync.Mutex
	problems                    []string
	// late are the contacts whose prompt did not come while the traffic ran (its task waits
	// for a replay): they confirm once it comes, as a person would.
	late []int
}

func (b *bookings) problem(format string, args ...any) {
	b.mu.Lock()
	b.problems = append(b.problems, fmt.Sprintf(format, args...))
	b.mu.Unlock()
}

// booker drives the assistant tenant's contacts.
type booker struct {
	url    string
	fake   *graphfake.Fake
	number string
	d      *deliveries
	b      *bookings
	client *http.Client
}

// bookAll has n contacts of the assistant tenant each ask for a booking, wait for the prompt
// with the confirm buttons, and tap confirm_yes on it, as a person would.
func (k *booker) bookAll(ctx context.Context, n, concurrency int) {
	forEach(n, concurrency, func(i int) {
		o := whatsapp.SampleOptions{PhoneNumberID: k.number, From: bookingContact(i), MessageID: whatsapp.NewMessageID()}
		text := fmt.Sprintf("book bus %02d for Client %d on 1 March", i%6+1, i)
		if !postUntilOK(ctx, k.client, k.url, whatsapp.SampleText(o, text), k.d) {
			k.b.problem("%s: the booking request was never accepted", o.From)
			return
		}
		k.b.booked.Add(1)
		if !k.confirm(ctx, i, 2*time.Minute) {
			k.b.mu.Lock()
			k.b.late = append(k.b.late, i)
			k.b.mu.Unlock()
		}
	})
}

// confirmLate confirms the late contacts' bookings, whose prompts came after the traffic.
func (k *booker) confirmLate(ctx context.Context) int {
	k.b.mu.Lock()
	late := k.b.late
	k.b.late = nil
	k.b.mu.Unlock()
	for _, i := range late {
		if !k.confirm(ctx, i, 30*time.Second) {
			k.b.problem("%s: no confirmation prompt, even after the replays; it got %s", bookingContact(i), sentTo(k.fake, bookingContact(i)))
		}
	}
	return len(late)
}

// confirm waits up to wait for contact i's prompt and taps confirm_yes on it; false when no
// prompt came.
func (k *booker) confirm(ctx context.Context, i int, wait time.Duration) bool {
	from := bookingContact(i)
	prompt := waitForPrompt(ctx, k.fake, from, wait)
	if prompt == "" {
		return false
	}
	k.b.prompted.Add(1)
	o := whatsapp.SampleOptions{PhoneNumberID: k.number, From: from, MessageID: whatsapp.NewMessageID(), ContextID: prompt}
	if !postUntilOK(ctx, k.client, k.url, whatsapp.SampleButtonReply(o, "confirm_yes", "Yes"), k.d) {
		k.b.problem("%s: the confirmation was never accepted", from)
		return true
	}
	k.b.confirmed.Add(1)
	return true
}

// waitForPrompt polls the fake Graph API for the first interactive message sent to to and
// returns its wamid, or "" after wait.
func waitForPrompt(ctx context.Context, fake *graphfake.Fake, to string, wait time.Duration) string {
	for deadline := time.Now().Add(wait); time.Now().Before(deadline) && ctx.Err() == nil; time.Sleep(200 * time.Millisecond) {
		for _, s := range fake.Sends() {
			if s.Body["to"] == to && s.Body["type"] == "interactive" && s.MessageID != "" {
				return s.MessageID
			}
		}
	}
	return ""
}

// sentTo describes what the fake took for to, for a failure's message: each send's type, its
// text (a test's own words) cut short, and whether the fake gave it an id.
func sentTo(fake *graphfake.Fake, to string) string {
	var parts []string
	for _, s := range fake.Sends() {
		if s.Body["to"] != to {
			continue
		}
		text := ""
		if t, ok := s.Body["text"].(map[string]any); ok {
			text, _ = t["body"].(string)
		}
		parts = append(parts, fmt.Sprintf("%v %q (id %v, key %v)", s.Body["type"], clipText(text, 60), s.MessageID != "", s.Body["biz_opaque_callback_data"]))
	}
	if len(parts) == 0 {
		return "nothing"
	}
	return strings.Join(parts, "; ")
}

func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// apiSends is what the business's sends through /v1/messages did.
type apiSends struct {
	mu sync.Mutex
	// ids are the message ids the api answered, per send.
	ids map[int][]string
	// posts counts the 202s; repeats the keys sent more than once; acrossKill the keys whose
	// sends spanned a kill of the api.
	posts, retries, acrossKill atomic.Int64
	answers                    deliveries
}

// sendAll makes n sends through /v1/messages, concurrency at a time, each with its own
// Idempotency-Key sent two or three times a few moments apart (as a client retries), each POST
// retried until answered 202 with the same key and body.
func sendAll(ctx context.Context, apiURL, apiKey string, n, concurrency int, api *service, a *apiSends) {
	client := &http.Client{Timeout: 10 * time.Second}
	forEach(n, concurrency, func(i int) {
		key := fmt.Sprintf("chaos-send-%d-%d", i, rand.Int64())
		body, _ := json.Marshal(map[string]any{
			"to": apiContact(i), "type": "template",
			"template": map[string]any{"name": "hello_world", "language": map[string]string{"code": "en_US"}},
		})
		killsBefore := api.kills.Load()
		times := 2 + rand.IntN(2)
		for range times {
			id := postSend(ctx, client, apiURL, apiKey, key, body, a)
			a.mu.Lock()
			a.ids[i] = append(a.ids[i], id)
			a.mu.Unlock()
			time.Sleep(time.Duration(rand.IntN(1500)) * time.Millisecond)
		}
		if api.kills.Load() != killsBefore {
			a.acrossKill.Add(1)
		}
	})
}

// postSend posts one send until it is answered 202 and returns the message id ("" when it never
// was).
func postSend(ctx context.Context, client *http.Client, apiURL, apiKey, key string, body []byte, a *apiSends) string {
	wait := 100 * time.Millisecond
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline) && ctx.Err() == nil; {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, apiURL+"/v1/messages", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+apiKey)
		req.Header.Set("Idempotency-Key", key)
		resp, err := client.Do(req)
		a.answers.posts.Add(1)
		if err == nil {
			var out struct {
				ID string `json:"id"`
			}
			derr := json.NewDecoder(resp.Body).Decode(&out)
			resp.Body.Close()
			a.answers.answered(resp.StatusCode)
			if resp.StatusCode == http.StatusAccepted && derr == nil && out.ID != "" {
				a.posts.Add(1)
				return out.ID
			}
		} else {
			a.answers.transport.Add(1)
		}
		a.retries.Add(1)
		time.Sleep(wait)
		wait = min(2*wait, 2*time.Second)
	}
	return ""
}

// sendsTo counts the sends the fake took, by recipient.
func sendsTo(fake *graphfake.Fake) map[string]int {
	out := map[string]int{}
	for _, s := range fake.Sends() {
		if to, _ := s.Body["to"].(string); to != "" {
			out[to]++
		}
	}
	return out
}

// repliesByKey counts the sends the fake took, by the idempotency key they carry.
func repliesByKey(fake *graphfake.Fake) map[string]int {
	out := map[string]int{}
	for _, s := range fake.Sends() {
		if key, _ := s.Body["biz_opaque_callback_data"].(string); key != "" {
			out[key]++
		}
	}
	return out
}
