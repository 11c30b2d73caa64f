package graph_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http/httptest"
	"testing"

	"github.com/wapipe/wapipe/internal/graph"
	"github.com/wapipe/wapipe/internal/graph/graphfake"
)

// TestUploadTypeOf: the MIME types Meta takes and their limits in bytes (MB = 1,000,000;
// documents capped at 30 MiB); everything else is refused.
func TestUploadTypeOf(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		mimeType, wantBase, wantKind string
		wantMax                      int64
		ok                           bool
	}{
		{"image/jpeg", "image/jpeg", "image", 5_000_000, true},
		{"image/png", "image/png", "image", 5_000_000, true},
		{"IMAGE/JPEG", "image/jpeg", "image", 5_000_000, true},
		{"image/webp", "image/webp", "sticker", 500_000, true},
		{"audio/aac", "audio/aac", "audio", 16_000_000, true},
		{"audio/amr", "audio/amr", "audio", 16_000_000, true},
		{"audio/mpeg", "audio/mpeg", "audio", 16_000_000, true},
		{"audio/mp4", "audio/mp4", "audio", 16_000_000, true},
		{"audio/ogg; codecs=opus", "audio/ogg", "audio", 16_000_000, true},
		{"audio/ogg", "audio/ogg", "audio", 16_000_000, true},
		{"audio/ogg; codecs=vorbis", "", "", 0, false},
		{"video/mp4", "video/mp4", "video", 16_000_000, true},
		{"video/3gpp", "video/3gpp", "video", 16_000_000, true},
		{"text/plain; charset=utf-8", "text/plain", "document", 30 << 20, true},
		{"application/pdf", "application/pdf", "document", 30 << 20, true},
		{"application/msword", "application/msword", "document", 30 << 20, true},
		{"application/vnd.openxmlformats-officedocument.spreadsheetml.sheet", "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet", "document", 30 << 20, true},
		{"application/x-msdownload", "", "", 0, false},
		{"application/octet-stream", "", "", 0, false},
		{"image/gif", "", "", 0, false},
		{"video/quicktime", "", "", 0, false},
		{"", "", "", 0, false},
		{"not a type", "", "", 0, false},
	} {
		base, ut, ok := graph.UploadTypeOf(tc.mimeType)
		if ok != tc.ok || (ok && (base != tc.wantBase || ut.Kind != tc.wantKind || ut.MaxBytes != tc.wantMax)) {
			t.Errorf("UploadTypeOf(%q) = %q, %+v, %v; want %q, %s %d, %v", tc.mimeType, base, ut, ok, tc.wantBase, tc.wantKind, tc.wantMax, tc.ok)
		}
	}
}

// failingReader gives data, then fails.
type failingReader struct {
	data []byte
	err  error
}

func (f *failingReader) Read(p []byte) (int, error) {
	if len(f.data) == 0 {
		return 0, f.err
	}
	n := copy(p, f.data)
	f.data = f.data[n:]
	return n, nil
}

// TestUploadMedia: the client streams Meta's form to the fake, which then holds the file; a
// reader that fails cuts the form short, so the fake keeps nothing and the reader's error comes
// back; a refused token is an Auth error.
func TestUploadMedia(t *testing.T) {
	t.Parallel()
	fake := graphfake.New(graphfake.WithToken("tok"))
	srv := httptest.NewServer(fake)
	defer srv.Close()
	c, err := graph.NewClient(srv.URL+"/"+graph.Version, "tok", nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	data := bytes.Repeat([]byte("pdf "), 100_000)
	id, err := c.UploadMedia(ctx, "123", "application/pdf", "invoice.pdf", bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := fake.MediaData(id); !ok || !bytes.Equal(got, data) {
		t.Errorf("fake holds %d bytes for %q, want the %d sent", len(got), id, len(data))
	}
	reqs := fake.Requests()
	if r := reqs[len(reqs)-1]; r.Kind != graphfake.KindUpload || r.PhoneNumberID != "123" || r.Body["type"] != "application/pdf" ||
		r.Body["messaging_product"] != "whatsapp" || r.Body["filename"] != "invoice.pdf" {
		t.Errorf("upload call %+v", r)
	}

	// A name beyond ASCII reaches Meta as the form encodes it (RFC 2231); none, as "file".
	for name, want := range map[string]string{"reçu n°1.pdf": "reçu n°1.pdf", "": "file"} {
		if _, err := c.UploadMedia(ctx, "123", "application/pdf", name, bytes.NewReader(data[:10])); err != nil {
			t.Fatalf("upload named %q: %v", name, err)
		}
		reqs := fake.Requests()
		if got := reqs[len(reqs)-1].Body["filename"]; got != want {
			t.Errorf("file named %q reached the fake as %q, want %q", name, got, want)
		}
	}

	broken := errors.New("client went away")
	_, err = c.UploadMedia(ctx, "123", "application/pdf", "cut.pdf", &failingReader{data: data, err: broken})
	if !errors.Is(err, broken) {
		t.Errorf("UploadMedia with a failing reader: %v, want its error", err)
	}
	for _, r := range fake.Requests() {
		if r.Kind == graphfake.KindUpload && r.Body["filename"] == "cut.pdf" && r.MediaID != "" {
			t.Errorf("the fake kept the cut upload as %s", r.MediaID)
		}
	}

	_, err = c.WithToken("wrong").UploadMedia(ctx, "123", "image/jpeg", "x.jpg", bytes.NewReader(data))
	if graph.Classify(err) != graph.Auth {
		t.Errorf("upload with a refused token: %v (%v), want Auth", err, graph.Classify(err))
	}
	if _, err := c.UploadMedia(ctx, "1/2", "image/jpeg", "x.jpg", io.LimitReader(nil, 0)); !errors.Is(err, graph.ErrInvalidMessage) {
		t.Errorf("bad number: %v", err)
	}
}
