package llm_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"

	"github.com/wapipe/wapipe/internal/llm"
	"github.com/wapipe/wapipe/internal/llm/geminifake"
)

// TestExtractSendsTheFileOnce: an attachment reaches the model as the inline data of the new
// message, whole (its bytes' hash compared) and with a Content-Length that matches the body, for
// files whose size is and is not a multiple of the encoder's chunk; the fake Gemini, which parses
// the request as Vertex AI would, reads it too.
func TestExtractSendsTheFileOnce(t *testing.T) {
	t.Parallel()
	for _, size := range []int{1, 2, 3, 49151, 49152, 49153, 1_000_001} {
		data := make([]byte, size)
		if _, err := rand.Read(data); err != nil {
			t.Fatal(err)
		}
		var got struct {
			Contents []struct {
				Parts []struct {
					InlineData *struct {
						MIMEType string `json:"mimeType"`
						Data     []byte `json:"data"`
					} `json:"inlineData"`
				} `json:"parts"`
			} `json:"contents"`
		}
		var length, read int64
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			length, read = r.ContentLength, int64(len(body))
			if err := json.Unmarshal(body, &got); err != nil {
				t.Errorf("size %d: the request is not JSON: %v", size, err)
			}
			_, _ = io.WriteString(w, `{"candidates":[{"content":{"role":"model","parts":[{"text":"{\"intent\":\"general_query\",\"confidence\":0.9,\"reply\":\"ok\"}"}]},"finishReason":"STOP"}]}`)
		}))
		req := request("")
		req.Media = &llm.Media{MIMEType: "audio/ogg", Data: data, Label: "voice note"}
		if _, err := newClient(t, srv.URL).Extract(context.Background(), req); err != nil {
			t.Fatalf("size %d: Extract: %v", size, err)
		}
		srv.Close()
		var files [][]byte
		for _, c := range got.Contents {
			for _, p := range c.Parts {
				if p.InlineData != nil {
					files = append(files, p.InlineData.Data)
				}
			}
		}
		if len(files) != 1 || sha256.Sum256(files[0]) != sha256.Sum256(data) {
			t.Errorf("size %d: %d inline files reached the model, want the one file whole", size, len(files))
		}
		if length != read {
			t.Errorf("size %d: Content-Length %d, body %d bytes", size, length, read)
		}
	}

	fake := geminifake.New()
	srv := fake.NewTestServer()
	t.Cleanup(srv.Close)
	data := bytes.Repeat([]byte("ogg "), 1000)
	req := request("")
	req.Media = &llm.Media{MIMEType: "audio/ogg", Data: data, Label: "voice note"}
	if _, err := newClient(t, srv.URL).Extract(context.Background(), req); err != nil {
		t.Fatalf("Extract against the fake: %v", err)
	}
	sum := sha256.Sum256(data)
	if rs := fake.Requests(); len(rs) != 1 || len(rs[0].Media) != 1 || !rs[0].Media[0].Valid ||
		!strings.EqualFold(rs[0].Media[0].SHA256, hex.EncodeToString(sum[:])) {
		t.Errorf("the fake Gemini received %+v, want the file (sha256 %x)", rs, sum)
	}
}

// BenchmarkExtract15MiB is one call with a file at MEDIA_MAX_BYTES against a server that reads
// the request as a stream: what the call allocates besides the file (alloc-MiB/op; the genai SDK's
// own encoding held about 80 MiB of base64 copies of it).
func BenchmarkExtract15MiB(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		_, _ = io.WriteString(w, `{"candidates":[{"content":{"role":"model","parts":[{"text":"{\"intent\":\"general_query\",\"confidence\":0.9,\"reply\":\"ok\"}"}]},"finishReason":"STOP"}]}`)
	}))
	b.Cleanup(srv.Close)
	c, err := llm.New(context.Background(), llm.Config{Project: "wapipe-dev", BaseURL: srv.URL})
	if err != nil {
		b.Fatal(err)
	}
	data := make([]byte, 15<<20)
	if _, err := rand.Read(data); err != nil {
		b.Fatal(err)
	}
	req := request("")
	req.Media = &llm.Media{MIMEType: "audio/ogg", Data: data}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	b.SetBytes(int64(base64.StdEncoding.EncodedLen(len(data))))
	for b.Loop() {
		if _, err := c.Extract(context.Background(), req); err != nil {
			b.Fatal(err)
		}
	}
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/float64(b.N)/(1<<20), "alloc-MiB/op")
}
