package api_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wapipe/wapipe/internal/api"
	"github.com/wapipe/wapipe/internal/apikey"
	"github.com/wapipe/wapipe/internal/devstack"
	"github.com/wapipe/wapipe/internal/httpserver/httpservertest"
	"github.com/wapipe/wapipe/internal/refusal"
	"github.com/wapipe/wapipe/internal/signup"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/testenv"
)

// countingKeys counts the API key lookups (Firestore reads) the api makes.
type countingKeys struct {
	api.KeyReader
	reads atomic.Int64
}

func (k *countingKeys) GetAPIKey(ctx context.Context, id string) (store.APIKeyRecord, error) {
	k.reads.Add(1)
	return k.KeyReader.GetAPIKey(ctx, id)
}

// newCountedStack is newStack with the api's key lookups counted; tenantExtra, when given, is
// added to the tenant's file.
func newCountedStack(t testing.TB, tenantExtra ...string) (*stack, *countingKeys) {
	keys := &countingKeys{}
	s := newStack(t, strings.Join(tenantExtra, ""), func(o *devstack.Options) {
		o.API = append(o.API, func(d *api.Deps) { keys.KeyReader = d.Keys; d.Keys = keys })
	})
	return s, keys
}

const templateBody = `{"to":"` + contact + `","type":"template","template":{"name":"hello_world","language":{"code":"en_US"}}}`

// call sends one request from client and returns its status, Retry-After and error code.
func call(t testing.TB, client *http.Client, method, url, key, body string) (int, string, string) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var e struct {
		Error struct{ Code, Message string }
	}
	b, _ := io.ReadAll(resp.Body)
	_ = json.Unmarshal(b, &e)
	return resp.StatusCode, resp.Header.Get("Retry-After"), e.Error.Code
}

// TestUnknownKeysLimitedPerAddress is issue 22 item 7: one client address hammering with unknown
// (well-formed) keys is answered 429 rate_limited with Retry-After once past its burst, and the
// key lookups its requests cost stay within the address limit; meanwhile another address with a
// valid key is served.
func TestUnknownKeysLimitedPerAddress(t *testing.T) {
	t.Parallel()
	s, keys := newCountedStack(t)
	attacker, other := httpservertest.ClientFrom("127.0.0.2"), httpservertest.ClientFrom("127.0.0.3")
	const n = 150
	codes := map[int]int{}
	start := time.Now()
	for range n {
		key, _, _, err := apikey.New()
		if err != nil {
			t.Fatal(err)
		}
		code, retry, errCode := call(t, attacker, http.MethodPost, s.APIURL+"/v1/messages", key, templateBody)
		codes[code]++
		if code == http.StatusTooManyRequests {
			if secs, err := strconv.Atoi(retry); err != nil || secs < 1 {
				t.Errorf("429 with Retry-After %q, want whole seconds", retry)
			}
			if errCode != refusal.RateLimited {
				t.Errorf("429 with error code %q, want %q", errCode, refusal.RateLimited)
			}
		}
	}
	elapsed := time.Since(start)
	reads := keys.reads.Load()
	// The burst, and the rate over the time the flood took.
	bound := int64(api.DefaultAddressBurst + api.DefaultAddressRate*elapsed.Seconds() + 1)
	t.Logf("%d unknown keys from one address in %s: answers %v, %d key lookups (bound %d)", n, elapsed.Round(time.Millisecond), codes, reads, bound)
	if codes[http.StatusTooManyRequests] == 0 || codes[http.StatusUnauthorized]+codes[http.StatusTooManyRequests] != n {
		t.Errorf("answers %v, want only 401 and 429, some 429", codes)
	}
	if reads > bound || reads != int64(codes[http.StatusUnauthorized]) {
		t.Errorf("%d key lookups for %d 401s, want one per 401 and at most %d", reads, codes[http.StatusUnauthorized], bound)
	}

	// Another address with the tenant's key is served.
	if code, _, errCode := call(t, other, http.MethodPost, s.APIURL+"/v1/messages", s.key, templateBody); code != http.StatusAccepted {
		t.Errorf("a valid key from another address: %d %s, want 202", code, errCode)
	}
	if !strings.Contains(s.logs.String(), `"event":"api_rate_limited"`) {
		t.Error("no api_rate_limited log line")
	}
}

// keyLimitFile is a tenant file's limits.api of keyRate a second and keyBurst at once: the
// tests that run a key past its limit set one, as the default burst (1,000) takes long to spend.
const (
	keyRate      = 50
	keyBurst     = 100
	keyLimitFile = "limits:\n  api: {per_second: 50, burst: 100}\n"
)

// TestKeyLimited: one API key used from several addresses (each within its own limit) is held to
// its key's limit: 429 rate_limited past the burst, while another key of the same tenant is
// served.
func TestKeyLimited(t *testing.T) {
	t.Parallel()
	s, _ := newCountedStack(t, keyLimitFile)
	second, err := s.creds.APIKey(context.Background(), "acme")
	if err != nil {
		t.Fatal(err)
	}
	// Eight addresses at once, each within its own limit, until the key's limit answers (on a
	// loaded machine the requests may come barely faster than the key's rate).
	var mu sync.Mutex
	codes := map[int]int{}
	var limited atomic.Bool
	start := time.Now()
	deadline := start.Add(20 * time.Second)
	var wg sync.WaitGroup
	for i := range 8 {
		c := httpservertest.ClientFrom("127.0.0.3" + strconv.Itoa(i))
		wg.Go(func() {
			for !limited.Load() && time.Now().Before(deadline) {
				code, retry, errCode := call(t, c, http.MethodGet, s.APIURL+"/v1/messages/msg_unknown", s.key, "")
				mu.Lock()
				codes[code]++
				mu.Unlock()
				if code == http.StatusTooManyRequests {
					limited.Store(true)
					if retry == "" || errCode != refusal.RateLimited {
						t.Errorf("429 with Retry-After %q and code %q", retry, errCode)
					}
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	bound := int(keyBurst + keyRate*elapsed.Seconds() + 1)
	t.Logf("one key from 8 addresses for %s: answers %v (served bound %d)", elapsed.Round(time.Millisecond), codes, bound)
	if codes[http.StatusTooManyRequests] == 0 {
		t.Errorf("answers %v, want 429 past the key's limit", codes)
	}
	if served := codes[http.StatusNotFound]; served > bound {
		t.Errorf("%d served, want at most %d", served, bound)
	}
	if code, _, _ := call(t, httpservertest.ClientFrom("127.0.0.8"), http.MethodGet, s.APIURL+"/v1/messages/msg_unknown", second, ""); code != http.StatusNotFound {
		t.Errorf("another key of the tenant: %d, want 404 (served)", code)
	}
}

// openSlowSends opens n slow POST /v1/messages with the tenant's key, from 127.0.0.10 to 13 (each
// within its address's burst), declaring the body cap and trickling 16 bytes every 100 ms, and
// waits until every one has been authenticated: it is in its handler, reading its body.
func openSlowSends(t testing.TB, s *stack, keys *countingKeys, n int) []*httpservertest.Upload {
	t.Helper()
	u, _ := url.Parse(s.APIURL)
	var slow []*httpservertest.Upload
	for i := range n {
		up, err := httpservertest.Start(u.Host, "/v1/messages", httpservertest.Options{
			From:   "127.0.0.1" + strconv.Itoa(i%4),
			Header: http.Header{"Authorization": {"Bearer " + s.key}}, Declared: api.MaxBodyBytes, Chunk: 16, Tick: 100 * time.Millisecond,
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(up.Close)
		slow = append(slow, up)
	}
	testenv.Eventually(t, 10*time.Second, func() bool { return keys.reads.Load() >= int64(n) }, "the slow uploads were not all authenticated")
	return slow
}

// TestSlowUploadsAPI is issue 22 item 7's slow bodies: 80 uploads with a valid key (spread over
// addresses within their limits) trickle their bodies to POST /v1/messages; a genuine send from
// another address is answered 202 without waiting out their 2 s grace, and the slow ones are cut off with 408 after
// the body's grace.
func TestSlowUploadsAPI(t *testing.T) {
	if testing.Short() {
		t.Skip("holds 80 slow uploads for a few seconds")
	}
	t.Parallel()
	s, keys := newCountedStack(t)
	const uploads = 80
	peak := httpservertest.HeapPeak()
	slow := openSlowSends(t, s, keys, uploads)
	start := time.Now()
	code, _, errCode := call(t, httpservertest.ClientFrom("127.0.0.20"), http.MethodPost, s.APIURL+"/v1/messages", s.key, templateBody)
	latency := time.Since(start)
	t.Logf("genuine send: %d in %s with %d slow uploads open", code, latency.Round(time.Millisecond), uploads)
	if code != http.StatusAccepted {
		t.Errorf("genuine send: %d %s, want 202", code, errCode)
	}
	// Had it queued behind the slow uploads it would have waited out their 2 s grace: anything
	// under it is an answer that did not wait (a loaded machine may take well over the usual
	// few milliseconds, so the bound is the grace, not a latency goal).
	if latency >= 2*time.Second {
		t.Errorf("genuine send answered in %s, after the slow uploads' 2 s grace: it waited behind them", latency)
	}
	codes := map[int]int{}
	var first time.Duration
	for _, up := range slow {
		code, after, err := up.Wait(15 * time.Second)
		if err != nil {
			t.Errorf("slow upload: %v", err)
			continue
		}
		codes[code]++
		if first == 0 || after < first {
			first = after
		}
	}
	heap := peak()
	t.Logf("slow uploads answered %v, the first after %s; heap peak %.1f MiB", codes, first.Round(time.Millisecond), float64(heap)/(1<<20))
	if codes[http.StatusRequestTimeout] != uploads {
		t.Errorf("slow uploads answered %v, want all %d 408", codes, uploads)
	}
	if first < 2*time.Second {
		t.Errorf("a slow upload was cut after %s, before the 2 s grace", first)
	}
}

// BenchmarkSlowSendsMemory holds 80 slow POST /v1/messages open and sends genuine messages from
// another address meanwhile (20 by default: the api's limits cap what one key may send, and the
// uploads are cut off after 2 s): it reports the heap's peak and the genuine sends' latency
// (go test -bench SlowSendsMemory -run '^$' -benchtime 20x).
func BenchmarkSlowSendsMemory(b *testing.B) {
	s, keys := newCountedStack(b)
	runtime.GC()
	peak := httpservertest.HeapPeak()
	slow := openSlowSends(b, s, keys, 80)
	client := httpservertest.ClientFrom("127.0.0.21")
	var lat []float64
	for b.Loop() {
		start := time.Now()
		if code, _, errCode := call(b, client, http.MethodPost, s.APIURL+"/v1/messages", s.key, templateBody); code != http.StatusAccepted {
			b.Fatalf("genuine send: %d %s", code, errCode)
		}
		lat = append(lat, float64(time.Since(start).Microseconds())/1000)
	}
	heap := peak()
	for _, up := range slow {
		up.Close()
	}
	slices.Sort(lat)
	b.ReportMetric(float64(heap)/(1<<20), "heap-peak-MiB")
	b.ReportMetric(lat[len(lat)/2], "genuine-p50-ms")
	b.ReportMetric(lat[len(lat)-1], "genuine-max-ms")
}

// postAtOnce posts n requests from client, all released at the same moment, and counts their
// answers by status; codes holds the error codes of the refused ones.
func postAtOnce(t testing.TB, client *http.Client, n int, method, url, key, body string) (statuses map[int]int, codes map[string]int) {
	t.Helper()
	statuses, codes = map[int]int{}, map[string]int{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range n {
		wg.Go(func() {
			<-start
			code, _, errCode := call(t, client, method, url, key, body)
			mu.Lock()
			defer mu.Unlock()
			statuses[code]++
			if errCode != "" {
				codes[errCode]++
			}
		})
	}
	close(start)
	wg.Wait()
	return statuses, codes
}

// TestBurstOfValidSendsAccepted is issue 35 item 7: a business's server posts 1,000 sends at
// once from one address with one valid key, and every one is accepted (202), to be paced by the
// tenant's send queue; before, the address limit (20/s, burst 40) counted them and refused most
// with 429.
func TestBurstOfValidSendsAccepted(t *testing.T) {
	if testing.Short() {
		t.Skip("posts 1,000 sends")
	}
	t.Parallel()
	s, keys := newCountedStack(t)
	const n = 1000
	start := time.Now()
	statuses, codes := postAtOnce(t, httpservertest.ClientFrom("127.0.0.40"), n, http.MethodPost, s.APIURL+"/v1/messages", s.key, templateBody)
	t.Logf("%d sends at once from one address with one key: %v %v in %s, %d key lookups", n, statuses, codes,
		time.Since(start).Round(time.Millisecond), keys.reads.Load())
	if statuses[http.StatusAccepted] != n {
		t.Errorf("answers %v (codes %v), want all %d 202", statuses, codes, n)
	}
}

// TestAddressCountsOnlyRequestsWithoutAValidKey (issue 35 item 7): from one address, requests with
// a valid key are never counted against the address (more than its burst are served), while
// requests without one (no key, a malformed key, an unknown key, the right id with a wrong
// secret) are: past the address's burst they get 429, and the Firestore reads they cost stay
// within the address limit. An address over its limit is refused before any lookup, so while it
// stays over, a valid key from it waits too (the price of never reading for a flood).
func TestAddressCountsOnlyRequestsWithoutAValidKey(t *testing.T) {
	t.Parallel()
	s, keys := newCountedStack(t)
	from := httpservertest.ClientFrom("127.0.0.41")
	get := func(key string) (int, string) {
		code, _, errCode := call(t, from, http.MethodGet, s.APIURL+"/v1/messages/msg_unknown", key, "")
		return code, errCode
	}
	valid := 2 * api.DefaultAddressBurst
	for i := range valid {
		if code, errCode := get(s.key); code != http.StatusNotFound {
			t.Fatalf("valid request %d of %d from one address: %d %s, want 404 (served)", i+1, valid, code, errCode)
		}
	}

	unknown, _, _, err := apikey.New()
	if err != nil {
		t.Fatal(err)
	}
	wrongSecret := s.key[:len(s.key)-4] + "AAAA"
	if wrongSecret == s.key {
		wrongSecret = s.key[:len(s.key)-4] + "BBBB"
	}
	bad := []string{"", "not-a-key", apikey.Prefix + "zz", unknown, wrongSecret}
	reads := keys.reads.Load()
	statuses := map[int]int{}
	start := time.Now()
	const n = 120
	for i := range n {
		code, errCode := get(bad[i%len(bad)])
		statuses[code]++
		if code == http.StatusTooManyRequests && errCode != refusal.RateLimited {
			t.Errorf("429 with code %q, want %q", errCode, refusal.RateLimited)
		}
	}
	elapsed := time.Since(start)
	lookups := keys.reads.Load() - reads
	bound := int(api.DefaultAddressBurst + api.DefaultAddressRate*elapsed.Seconds() + 1)
	t.Logf("%d requests without a valid key in %s: %v, %d key lookups (served bound %d)", n, elapsed.Round(time.Millisecond), statuses, lookups, bound)
	if statuses[http.StatusTooManyRequests] == 0 || statuses[http.StatusUnauthorized]+statuses[http.StatusTooManyRequests] != n {
		t.Errorf("answers %v, want only 401 and 429, some 429", statuses)
	}
	if statuses[http.StatusUnauthorized] > bound {
		t.Errorf("%d answered 401, want at most the address limit's %d", statuses[http.StatusUnauthorized], bound)
	}
	if lookups > int64(bound) {
		t.Errorf("%d key lookups, want at most the address limit's %d", lookups, bound)
	}
	if code, _ := get(s.key); code != http.StatusTooManyRequests {
		t.Errorf("a valid key from the address over its limit: %d, want 429 before the lookup", code)
	}
	// Another address is not affected.
	if code, _, errCode := call(t, httpservertest.ClientFrom("127.0.0.42"), http.MethodGet, s.APIURL+"/v1/messages/msg_unknown", s.key, ""); code != http.StatusNotFound {
		t.Errorf("a valid key from another address: %d %s, want 404 (served)", code, errCode)
	}
}

// TestTenantKeyLimit (issue 35 item 7): a tenant's file sets the limit of its keys
// (limits.api): past its burst the key gets 429 rate_limited, whatever the api's default
// (1,000), and a tenant without one has the default.
func TestTenantKeyLimit(t *testing.T) {
	t.Parallel()
	s, _ := newCountedStack(t, "limits:\n  api: {per_second: 0.1, burst: 5}\n")
	client := httpservertest.ClientFrom("127.0.0.43")
	statuses, codes := postAtOnce(t, client, 12, http.MethodGet, s.APIURL+"/v1/messages/msg_unknown", s.key, "")
	if statuses[http.StatusNotFound] != 5 || statuses[http.StatusTooManyRequests] != 7 || codes[refusal.RateLimited] != 7 {
		t.Errorf("12 at once with limits.api burst 5: %v %v, want 5 served (404), 7 refused 429 %s", statuses, codes, refusal.RateLimited)
	}
	if !strings.Contains(s.logs.String(), `"scope":"key"`) {
		t.Error(`no api_rate_limited line with "scope":"key"`)
	}
	// Another key of the tenant has a bucket of its own, to the same limit.
	second, err := s.creds.APIKey(context.Background(), "acme")
	if err != nil {
		t.Fatal(err)
	}
	if statuses, _ := postAtOnce(t, client, 6, http.MethodGet, s.APIURL+"/v1/messages/msg_unknown", second, ""); statuses[http.StatusNotFound] != 5 {
		t.Errorf("another key of the tenant, 6 at once: %v, want its own burst of 5 served", statuses)
	}
}

// TestConnectRoutesLimitedPerAddress is the red team's KMS flood: every request to the connect
// routes may open a sealed state (a Cloud KMS call) before anything is known of it. One address
// gets signup.ConnectBurst of them, then 429 with Retry-After, beside the address limit of the
// other keyless routes.
func TestConnectRoutesLimitedPerAddress(t *testing.T) {
	t.Parallel()
	s := newStack(t, "")
	codes := map[int]int{}
	var retryAfter string
	for range signup.ConnectBurst + 5 {
		resp, err := http.Get(s.APIURL + signup.ConnectPath + "?state=forged-state")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		codes[resp.StatusCode]++
		if resp.StatusCode == http.StatusTooManyRequests {
			retryAfter = resp.Header.Get("Retry-After")
		}
	}
	if codes[http.StatusTooManyRequests] != 5 || retryAfter == "" {
		t.Errorf("answers %v (Retry-After %q), want %d served and 5 × 429 with Retry-After", codes, retryAfter, signup.ConnectBurst)
	}
}
