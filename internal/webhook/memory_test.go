package webhook_test

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wapipe/wapipe/internal/httpserver/httpservertest"
	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/internal/testenv"
	"github.com/wapipe/wapipe/internal/webhook"
	"github.com/wapipe/wapipe/internal/whatsapp"
	"github.com/wapipe/wapipe/tasks"
)

// countingBody is a request body that records how many of its bytes were read.
type countingBody struct {
	r    io.Reader
	read atomic.Int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	b.read.Add(int64(n))
	return n, err
}

// TestSignatureCheckedBeforeBody: a missing or malformed X-Hub-Signature-256 is refused with 401
// before a byte of the body is read.
func TestSignatureCheckedBeforeBody(t *testing.T) {
	t.Parallel()
	body := textPayload("wamid.early")
	good := whatsapp.Sign(body, appSecret)
	tests := []struct {
		name   string
		header string
	}{
		{"missing", ""},
		{"no prefix", strings.TrimPrefix(good, "sha256=")},
		{"short", good[:len(good)-1]},
		{"long", good + "0"},
		{"not hex", "sha256=" + strings.Repeat("z", 64)},
		{"sha1", "sha1=" + strings.Repeat("0", 40)},
		{"two values", good + "," + good},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			hs := newHarness(t, "")
			b := &countingBody{r: bytes.NewReader(body)}
			req := httptest.NewRequest(http.MethodPost, webhook.Path, b)
			if tc.header != "" {
				req.Header.Set(whatsapp.SignatureHeader, tc.header)
			}
			hs.want(hs.do(req), 401, errorBody("invalid_signature"), "signature_invalid")
			if n := b.read.Load(); n != 0 {
				t.Errorf("%d body bytes read before refusing, want 0", n)
			}
			hs.wantNothingDone()
		})
	}
}

// filler is what slow bodies send.
var filler = bytes.Repeat([]byte(" "), 64<<10)

// slowBody trickles size bytes of filler, chunk bytes every tick, until stop closes.
type slowBody struct {
	left  int
	chunk int
	tick  time.Duration
	stop  <-chan struct{}
}

func (b *slowBody) Read(p []byte) (int, error) {
	if b.left == 0 {
		return 0, io.EOF
	}
	select {
	case <-b.stop:
		return 0, io.ErrUnexpectedEOF
	case <-time.After(b.tick):
	}
	// One copy, not a loop: under -race a byte-by-byte fill of 80 uploads' filler costs more CPU
	// than the server under test.
	n := copy(p[:min(len(p), b.chunk, b.left)], filler)
	b.left -= n
	return n, nil
}

// server is a webhook on fakes behind a real HTTP server, as the slow uploads need a socket;
// arrived counts the requests that reached it.
func server(t *testing.T, budget int64) (srv *httptest.Server, arrived *atomic.Int64) {
	t.Helper()
	logs := &testenv.LogBuffer{}
	cfg := &webhook.Config{InboundQueue: tasks.InboundQueueID, AppSecret: appSecret, VerifyToken: verifyToken,
		DedupeFailMode: webhook.FailClosed, MaxInflightBodyBytes: budget}
	h := webhook.NewServer(cfg, webhook.Deps{
		Dedupe: &fakeMarkers{}, Payloads: &fakePayloads{}, Tasks: &fakeQueue{},
		Logger:     logging.New(logs, logging.Options{Level: slog.LevelInfo}),
		CallBudget: time.Second,
	}).Routes()
	arrived = &atomic.Int64{}
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived.Add(1)
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, arrived
}

// TestSlowUnsignedUploadsBounded is issue 11's memory attack: 80 concurrent slow 4 MiB uploads
// (unsigned, or with a well-formed but wrong signature) and, while they are in flight, one valid
// signed delivery. The valid one is answered within a second and the heap stays under 128 MiB.
// Unsigned uploads are refused before their body is read; wrongly signed ones hold at most
// MAX_INFLIGHT_BODY_BYTES (charged as bytes arrive), the rest answered 503, or 408 when the
// server reading them all falls under the body's floor rate.
func TestSlowUnsignedUploadsBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("sends 80 slow uploads for a few seconds")
	}
	// Not parallel: the heap figure is the process's.
	tests := []struct {
		name      string
		signature string
	}{
		{"unsigned", ""},
		{"well-formed wrong signature", "sha256=" + strings.Repeat("ab", 32)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			const uploads, size = 80, webhook.MaxBodyBytes
			srv, arrived := server(t, webhook.DefaultMaxInflightBodyBytes)
			runtime.GC()
			var base runtime.MemStats
			runtime.ReadMemStats(&base)
			peak := httpservertest.HeapPeak()

			stop := make(chan struct{})
			codes := make(chan int, uploads)
			var wg sync.WaitGroup
			client := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 0, MaxIdleConnsPerHost: uploads + 1}}
			for range uploads {
				wg.Go(func() {
					// 4 MiB at 64 KiB every 20 ms: over a second per upload.
					req, _ := http.NewRequest(http.MethodPost, srv.URL+webhook.Path,
						&slowBody{left: size, chunk: 64 << 10, tick: 20 * time.Millisecond, stop: stop})
					req.ContentLength = size
					if tc.signature != "" {
						req.Header.Set(whatsapp.SignatureHeader, tc.signature)
					}
					resp, err := client.Do(req)
					if err != nil {
						codes <- 0
						return
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					codes <- resp.StatusCode
				})
			}
			// The valid delivery arrives once every upload has reached the server.
			testenv.Eventually(t, 10*time.Second, func() bool { return arrived.Load() >= uploads }, "uploads did not arrive")
			body := textPayload("wamid.valid-among-slow")
			req, _ := http.NewRequest(http.MethodPost, srv.URL+webhook.Path, bytes.NewReader(body))
			req.Header.Set(whatsapp.SignatureHeader, whatsapp.Sign(body, appSecret))
			start := time.Now()
			resp, err := client.Do(req)
			latency := time.Since(start)
			if err != nil {
				t.Fatalf("valid delivery: %v", err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()

			wg.Wait()
			close(stop)
			close(codes)
			p := peak()
			seen := map[int]int{}
			for c := range codes {
				seen[c]++
			}
			t.Logf("valid delivery: %d in %s; slow uploads answered %v; heap in use %.1f MiB before, peak %.1f MiB",
				resp.StatusCode, latency.Round(time.Millisecond), seen, float64(base.HeapInuse)/(1<<20), float64(p)/(1<<20))
			if latency > time.Second {
				t.Errorf("valid delivery answered in %s, want within 1 s", latency)
			}
			if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusServiceUnavailable {
				t.Errorf("valid delivery answered %d, want 200 (or 503, which Meta retries)", resp.StatusCode)
			}
			if tc.signature == "" && resp.StatusCode != http.StatusOK {
				t.Errorf("valid delivery answered %d among unsigned uploads, want 200", resp.StatusCode)
			}
			if p > 128<<20 {
				t.Errorf("heap peaked at %.1f MiB, want under 128 MiB", float64(p)/(1<<20))
			}
			want := map[int]bool{401: true, 408: true, 503: true}
			for c := range seen {
				if !want[c] && c != 0 {
					t.Errorf("slow uploads answered %d, want 401, 408 or 503", c)
				}
			}
		})
	}
}
