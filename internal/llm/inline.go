package llm

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"

	"google.golang.org/genai"
)

// The genai SDK encodes a request to JSON, decodes that into a map, converts the map and encodes
// it again: a 15 MiB file would be held as four or five base64 copies at once (about 80 MiB
// besides the file). So the file never enters the SDK. The request carries a short random
// placeholder instead; the call's transport finds the placeholder's base64 in the encoded body
// and sends the file's base64 in its place, encoded as the body is written. The only copy of the
// file in memory is the caller's.

// inlineMarkerBytes is the placeholder's length: 24 random bytes are 32 base64 characters
// without padding, which nothing else in a request can be expected to contain.
const inlineMarkerBytes = 24

// inlineFile is a call's attachment and the placeholder that stands for it in the request.
type inlineFile struct {
	// marker is the placeholder's base64, as it appears in the encoded request.
	marker []byte
	data   []byte
}

// inlineKey carries a call's *inlineFile in the request's context to the transport.
type inlineKey struct{}

// stashInline replaces the data of the inline part of contents (the new message's attachment)
// with a placeholder, and returns the file to splice back in: nil when no part is inline.
func stashInline(contents []*genai.Content) (*inlineFile, error) {
	for _, c := range contents {
		for i, p := range c.Parts {
			if p.InlineData == nil {
				continue
			}
			placeholder := make([]byte, inlineMarkerBytes)
			if _, err := rand.Read(placeholder); err != nil {
				return nil, fmt.Errorf("llm: inline placeholder: %w", err)
			}
			f := &inlineFile{marker: []byte(base64.StdEncoding.EncodeToString(placeholder)), data: p.InlineData.Data}
			blob := *p.InlineData
			blob.Data = placeholder
			part := *p
			part.InlineData = &blob
			c.Parts[i] = &part
			return f, nil
		}
	}
	return nil, nil
}

// withInline is ctx carrying f to the transport (ctx itself when f is nil).
func withInline(ctx context.Context, f *inlineFile) context.Context {
	if f == nil {
		return ctx
	}
	return context.WithValue(ctx, inlineKey{}, f)
}

// spliceInline returns r with its file spliced back into its body in place of the placeholder,
// or r itself when its context carries no file. The body's length is known before it is sent.
func spliceInline(r *http.Request) (*http.Request, error) {
	f, ok := r.Context().Value(inlineKey{}).(*inlineFile)
	if !ok || r.Body == nil {
		return r, nil
	}
	// The body without the file is the prompt and the history: small.
	body, err := io.ReadAll(r.Body)
	r.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("llm: read the request body: %w", err)
	}
	at := bytes.Index(body, f.marker)
	if at < 0 {
		return nil, fmt.Errorf("llm: the attachment's placeholder is not in the request")
	}
	head, tail := body[:at], body[at+len(f.marker):]
	open := func() io.ReadCloser {
		return io.NopCloser(io.MultiReader(bytes.NewReader(head), &base64Reader{data: f.data}, bytes.NewReader(tail)))
	}
	out := r.Clone(r.Context())
	out.Body = open()
	out.GetBody = func() (io.ReadCloser, error) { return open(), nil }
	out.ContentLength = int64(len(head) + base64.StdEncoding.EncodedLen(len(f.data)) + len(tail))
	return out, nil
}

// base64ChunkIn is how much of the file base64Reader encodes at a time (a multiple of 3, so only
// the last chunk is padded).
const base64ChunkIn = 48 << 10

// base64Reader reads data's standard base64, encoding a chunk at a time as it is read.
type base64Reader struct {
	data []byte
	buf  []byte // encoded, not yet read
	enc  []byte
}

func (b *base64Reader) Read(p []byte) (int, error) {
	if len(b.buf) == 0 {
		if len(b.data) == 0 {
			return 0, io.EOF
		}
		n := min(len(b.data), base64ChunkIn)
		if b.enc == nil {
			b.enc = make([]byte, base64.StdEncoding.EncodedLen(base64ChunkIn))
		}
		b.buf = b.enc[:base64.StdEncoding.EncodedLen(n)]
		base64.StdEncoding.Encode(b.buf, b.data[:n])
		b.data = b.data[n:]
	}
	n := copy(p, b.buf)
	b.buf = b.buf[n:]
	return n, nil
}
