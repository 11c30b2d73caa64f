package webhook_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sethvargo/go-envconfig"

	"github.com/wapipe/wapipe/internal/config"
	"github.com/wapipe/wapipe/internal/httpserver"
	"github.com/wapipe/wapipe/internal/httpserver/httpservertest"
	"github.com/wapipe/wapipe/internal/testenv"
	"github.com/wapipe/wapipe/internal/webhook"
	"github.com/wapipe/wapipe/internal/whatsapp"
	"github.com/wapipe/wapipe/tasks"
)

// bulkPayload is a genuine delivery of about size bytes: one message (id msgID) and Meta-style
// bulk (many statuses).
func bulkPayload(msgID string, size int) []byte {
	var sb strings.Builder
	fmt.Fprintf(&sb, `{"object":"whatsapp_business_account","entry":[{"id":"WABA","changes":[{"field":"messages","value":{"messaging_product":"whatsapp","metadata":{"display_phone_number":"1555","phone_number_id":"PNID1"},"messages":[{"from":"1650","id":%q,"timestamp":"1","type":"text","text":{"body":"hi"}}],"statuses":[`, msgID)
	for i := 0; sb.Len() < size-300; i++ {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, `{"id":"wamid.s%07d","status":"delivered","timestamp":"1763800000","recipient_id":"16505550000","conversation":{"id":"c%07d","origin":{"type":"service"}},"pricing":{"billable":true,"pricing_model":"CBP","category":"service"}}`, i, i)
	}
	sb.WriteString(`]}}]}]}`)
	return []byte(sb.String())
}

// attack keeps n slow uploads in flight from the client address from (a loopback address), each
// declaring the 4 MiB cap with a well-formed wrong signature and sending rate bytes a second:
// one that is answered is replaced at once. stop ends them and returns how they were answered.
func attack(t testing.TB, rawURL, from string, n, rate int) (stop func() map[int]int) {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	const tick = 100 * time.Millisecond
	opts := httpservertest.Options{From: from, Header: http.Header{whatsapp.SignatureHeader: {wrongSignature}},
		Declared: webhook.MaxBodyBytes, Chunk: rate / 10, Tick: tick}
	done := make(chan struct{})
	var mu sync.Mutex
	codes := map[int]int{}
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				up, err := httpservertest.Start(u.Host, u.Path, opts)
				if err != nil {
					t.Errorf("slow upload: %v", err)
					return
				}
				answered := make(chan int, 1)
				go func() {
					code, _, _ := up.Wait(time.Minute)
					answered <- code
				}()
				select {
				case code := <-answered:
					mu.Lock()
					codes[code]++
					mu.Unlock()
				case <-done:
					up.Close()
					return
				}
				up.Close()
			}
		})
	}
	return func() map[int]int {
		close(done)
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		return codes
	}
}

// TestUnverifiedBytesCappedPerAddress is issue 35 item 5: 13 uploads at 300 KiB/s (above the
// body's floor rate, so never cut off) with a well-formed wrong X-Hub-Signature-256, from one
// address, kept in flight. Without a cap they fill the growth area of MAX_INFLIGHT_BODY_BYTES and
// a genuine delivery then gets 503; with WEBHOOK_UNVERIFIED_BYTES_PER_ADDRESS they hold at most
// their address's share, and genuine deliveries of 205 KB and 3.9 MB from another address are
// both answered 200 with their tasks created. Only the attacking address is refused (503).
func TestUnverifiedBytesCappedPerAddress(t *testing.T) {
	if testing.Short() {
		t.Skip("holds slow uploads for several seconds")
	}
	t.Parallel()
	budget := httpserver.NewClientBudget(webhook.DefaultMaxInflightBodyBytes, webhook.DefaultUnverifiedBytesPerAddress, 0)
	e := newEnv(t, envOptions{httpserver: true, deps: func(d *webhook.Deps) { d.Bodies = budget }})
	const attacker, meta = "127.0.0.2", "127.0.0.3"
	stop := attack(t, e.url, attacker, 13, 300<<10)
	// The uploads have taken all they can once one of them is refused for want of room.
	testenv.Eventually(t, 30*time.Second, func() bool { return e.logs.Has("body_budget_exhausted") },
		"the slow uploads never filled the budget")
	held := budget.InUse()

	client := httpservertest.ClientFrom(meta)
	var statuses []int
	for _, d := range []struct {
		id   string
		size int
	}{{"wamid.genuine-205kb", 205_000}, {"wamid.genuine-3.9mb", 3_900_000}} {
		status, latency := postSigned(t, client, e.url, bulkPayload(d.id, d.size))
		t.Logf("genuine %d-byte delivery: %d in %s, %d KiB of the budget held by the uploads", d.size, status, latency.Round(time.Millisecond), held>>10)
		statuses = append(statuses, status)
	}
	codes := stop()
	t.Logf("slow uploads answered %v; budget peak %d KiB", codes, budget.Peak()>>10)
	if !slices.Equal(statuses, []int{http.StatusOK, http.StatusOK}) {
		t.Fatalf("genuine deliveries answered %v while the uploads ran, want [200 200]", statuses)
	}
	var ids []string
	for _, task := range e.wantTasks(2) {
		var in tasks.Inbound
		if err := json.Unmarshal(task.GetHttpRequest().GetBody(), &in); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, in.InboundEventID)
	}
	slices.Sort(ids)
	if !slices.Equal(ids, []string{"wamid.genuine-205kb", "wamid.genuine-3.9mb"}) {
		t.Errorf("tasks of %v, want the two genuine deliveries", ids)
	}
	if peak := budget.Peak(); peak > webhook.DefaultUnverifiedBytesPerAddress+2*(webhook.MaxBodyBytes*3/2) {
		t.Errorf("budget peaked at %d KiB: more than the attacker's share and the two deliveries", peak>>10)
	}
	for code := range codes {
		if code != http.StatusServiceUnavailable && code != http.StatusUnauthorized && code != 0 {
			t.Errorf("slow uploads answered %d, want 503 (its address's share full) or 401 (signature)", code)
		}
	}
	if !strings.Contains(e.logs.String(), `"scope":"address"`) {
		t.Error("no body_budget_exhausted line with scope address")
	}
	testenv.Eventually(t, 10*time.Second, func() bool { return budget.InUse() == 0 }, "body bytes still charged after every request ended")
}

// TestUnverifiedShareConfig: WEBHOOK_UNVERIFIED_BYTES_PER_ADDRESS defaults to a quarter of
// MAX_INFLIGHT_BODY_BYTES (16 MiB by default), never under one delivery at the body cap nor over
// the budget, and a value outside those bounds stops start-up.
func TestUnverifiedShareConfig(t *testing.T) {
	t.Parallel()
	base := map[string]string{
		"APP_ENV": "dev", "GOOGLE_CLOUD_PROJECT": "p", "TASKS_LOCATION": "us-central1",
		"INTERNAL_TASK_BASE_URL": "http://worker", "INTERNAL_TASK_TOKEN": "0123456789abcdef",
		"LOG_HASH_KEY":        "0123456789abcdef0123456789abcdef-log-key",
		"WHATSAPP_APP_SECRET": "app-secret-value", "WHATSAPP_VERIFY_TOKEN": "verify",
	}
	tests := []struct {
		name    string
		change  map[string]string
		want    int64
		wantErr bool
	}{
		{"default", nil, 16 << 20, false},
		{"a quarter of a larger budget", map[string]string{"MAX_INFLIGHT_BODY_BYTES": "134217728"}, 32 << 20, false},
		{"one delivery at the cap in a small budget", map[string]string{"MAX_INFLIGHT_BODY_BYTES": "8388608"}, 6 << 20, false},
		{"the whole of a budget of one delivery", map[string]string{"MAX_INFLIGHT_BODY_BYTES": "4194304"}, 4 << 20, false},
		{"set", map[string]string{"WEBHOOK_UNVERIFIED_BYTES_PER_ADDRESS": "8388608"}, 8 << 20, false},
		{"under one delivery at the cap", map[string]string{"WEBHOOK_UNVERIFIED_BYTES_PER_ADDRESS": "1048576"}, 0, true},
		{"over the budget", map[string]string{"WEBHOOK_UNVERIFIED_BYTES_PER_ADDRESS": "104857600"}, 0, true},
		{"negative", map[string]string{"WEBHOOK_UNVERIFIED_BYTES_PER_ADDRESS": "-1"}, 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var cfg webhook.Config
			err := config.Load(context.Background(), envconfig.MapLookuper(testenv.Env(base, tc.change)), &cfg)
			if tc.wantErr {
				if err == nil || !strings.Contains(err.Error(), "WEBHOOK_UNVERIFIED_BYTES_PER_ADDRESS") {
					t.Fatalf("error %v, want one naming WEBHOOK_UNVERIFIED_BYTES_PER_ADDRESS", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.UnverifiedBytesPerAddress != tc.want {
				t.Errorf("WEBHOOK_UNVERIFIED_BYTES_PER_ADDRESS = %d, want %d", cfg.UnverifiedBytesPerAddress, tc.want)
			}
		})
	}
}
