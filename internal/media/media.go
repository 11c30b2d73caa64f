package media

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"

	"github.com/wapipe/wapipe/internal/assistant"
	"github.com/wapipe/wapipe/internal/graph"
	"github.com/wapipe/wapipe/internal/llm"
	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/whatsapp"
)

// DefaultMaxBytes is MEDIA_MAX_BYTES's default: 15 MiB, under Gemini's inline request limit
// once base64-encoded.
const DefaultMaxBytes = 15 << 20

// MaxAllowedBytes is the largest MEDIA_MAX_BYTES: base64 makes a file a third larger in the
// request, and Vertex AI refuses inline data past about 20 MB.
const MaxAllowedBytes = 20 << 20

// The kinds of Fetch failures. Test with errors.Is; the error itself is an *Error.
var (
	// ErrUnsupported: a type Gemini does not take inline, or not a media message.
	ErrUnsupported = assistant.ErrMediaUnsupported
	// ErrTooLarge: the file is over the cap; reading stopped there.
	ErrTooLarge = assistant.ErrMediaTooLarge
	// ErrGone: Meta no longer has the file (an expired id, a download answered 404), or refuses
	// it for good.
	ErrGone = assistant.ErrMediaGone
	// ErrMismatch: the bytes do not match the webhook's sha256 (or there was none to check).
	ErrMismatch = assistant.ErrMediaMismatch
	// ErrRetryable: Graph failed for now (5xx, throttling, timeout, network): retry later.
	ErrRetryable = errors.New("media fetch failed for now")
	// ErrAuth: Graph refused the tenant's token.
	ErrAuth = errors.New("media fetch: access token refused")
)

// Error is a Fetch failure: its Kind and what caused it. Its text never holds the caption, the
// file name, the download URL or the bytes.
type Error struct {
	// Kind is one of ErrUnsupported, ErrTooLarge, ErrGone, ErrMismatch, ErrRetryable, ErrAuth.
	Kind error
	// Reason says what failed.
	Reason string
	// Err is the cause, if any (a *graph.Error for Graph's answers).
	Err error
}

func (e *Error) Error() string {
	s := "media: " + e.Kind.Error()
	if e.Reason != "" {
		s += ": " + e.Reason
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Is matches the error's Kind.
func (e *Error) Is(target error) bool { return target == e.Kind }

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Config configures a Fetcher.
type Config struct {
	// MaxBytes is the size cap (MEDIA_MAX_BYTES); DefaultMaxBytes when 0.
	MaxBytes int64
	// AllowInsecureURL accepts a download URL that is not https: only in dev, where the URL is
	// on the fake Graph's host.
	AllowInsecureURL bool
}

// Fetcher fetches media files from the Graph API. It is safe for concurrent use.
type Fetcher struct {
	graph     *graph.Client
	max       int64
	allowHTTP bool
}

// New returns a Fetcher calling Graph through g (any token: each Fetch says whose).
func New(g *graph.Client, cfg Config) (*Fetcher, error) {
	if g == nil {
		return nil, errors.New("media: nil graph client")
	}
	if cfg.MaxBytes < 0 || cfg.MaxBytes > MaxAllowedBytes {
		return nil, fmt.Errorf("media: MEDIA_MAX_BYTES %d must be 1 to %d", cfg.MaxBytes, MaxAllowedBytes)
	}
	if cfg.MaxBytes == 0 {
		cfg.MaxBytes = DefaultMaxBytes
	}
	return &Fetcher{graph: g, max: cfg.MaxBytes, allowHTTP: cfg.AllowInsecureURL}, nil
}

// MaxBytes is the size cap.
func (f *Fetcher) MaxBytes() int64 { return f.max }

// Loader is f bound to a tenant's access token: the turn's assistant.Input.Media.
func (f *Fetcher) Loader(token string) assistant.MediaLoader { return loader{f: f, token: token} }

type loader struct {
	f     *Fetcher
	token string
}

func (l loader) LoadMedia(ctx context.Context, m whatsapp.Message) (assistant.Attachment, error) {
	return l.f.Fetch(ctx, l.token, m)
}

// Fetch downloads the file of media message m with token and checks it. It logs one line
// (event media_fetched, or media_refused with the reason) with the type and size, never the
// caption, the file name or the bytes.
func (f *Fetcher) Fetch(ctx context.Context, token string, m whatsapp.Message) (assistant.Attachment, error) {
	start := time.Now()
	att, err := f.fetch(ctx, token, m)
	log := logging.FromContext(ctx)
	if err != nil {
		var me *Error
		kind := "error"
		if errors.As(err, &me) {
			kind = kindName(me.Kind)
		}
		log.WarnContext(ctx, "media not fetched", "event", "media_refused", "reason", kind, "message_type", m.Type,
			"mime_type", att.MIMEType, "error", err.Error())
		return assistant.Attachment{}, err
	}
	log.InfoContext(ctx, "media fetched", "event", "media_fetched", "message_type", m.Type, "mime_type", att.MIMEType,
		"size", att.Size, "duration_ms", time.Since(start).Milliseconds())
	return att, nil
}

func kindName(k error) string {
	switch k {
	case ErrUnsupported:
		return "unsupported"
	case ErrTooLarge:
		return "too_large"
	case ErrGone:
		return "gone"
	case ErrMismatch:
		return "sha256_mismatch"
	case ErrRetryable:
		return "retryable"
	case ErrAuth:
		return "auth"
	}
	return "error"
}

func (f *Fetcher) fetch(ctx context.Context, token string, m whatsapp.Message) (assistant.Attachment, error) {
	att := assistant.Attachment{Kind: m.Type}
	switch {
	case m.Media == nil || m.Media.ID == "":
		return att, &Error{Kind: ErrUnsupported, Reason: "not a media message"}
	case m.Type != "image" && m.Type != "audio" && m.Type != "video" && m.Type != "document":
		return att, &Error{Kind: ErrUnsupported, Reason: "message type " + m.Type}
	}
	att.Caption, att.Filename, att.Voice = m.Text, m.Media.Filename, m.Media.Voice
	if mt := m.Media.MimeType; mt != "" {
		// The webhook names the type: refuse before any call.
		n, ok := llm.InlineMIMEType(mt)
		att.MIMEType = n
		if !ok {
			return att, &Error{Kind: ErrUnsupported, Reason: "type " + n}
		}
	}
	g := f.graph.WithToken(token)
	info, err := g.MediaInfo(ctx, m.Media.ID)
	if err != nil {
		return att, graphError("lookup", err)
	}
	if att.MIMEType == "" {
		n, ok := llm.InlineMIMEType(info.MIMEType)
		att.MIMEType = n
		if !ok {
			return att, &Error{Kind: ErrUnsupported, Reason: "type " + n}
		}
	}
	if err := f.checkSize(info); err != nil {
		return att, err
	}
	want, err := wantDigests(m.Media.SHA256, info.SHA256)
	if err != nil {
		return att, err
	}
	if err := f.checkURL(info); err != nil {
		return att, err
	}
	var buf bytes.Buffer
	if info.FileSize > 0 {
		// One allocation for the whole file when Meta says its size (capped: it may lie).
		buf.Grow(int(min(info.FileSize, f.max)) + 1)
	}
	h := sha256.New()
	n, err := g.DownloadMedia(ctx, info.URL, io.MultiWriter(&buf, h), f.max)
	if err != nil {
		return att, graphError("download", err)
	}
	got := h.Sum(nil)
	for _, w := range want {
		if !bytes.Equal(w, got) {
			return att, &Error{Kind: ErrMismatch, Reason: "the bytes do not match the sha256 Meta gave"}
		}
	}
	att.Data, att.Size, att.SHA256 = buf.Bytes(), n, hex.EncodeToString(got)
	return att, nil
}

// checkSize refuses a file whose announced size is over the cap, before its download.
func (f *Fetcher) checkSize(info graph.MediaInfo) error {
	if info.FileSize > f.max {
		return &Error{Kind: ErrTooLarge, Reason: fmt.Sprintf("%d bytes announced, limit %d", info.FileSize, f.max)}
	}
	return nil
}

// checkURL refuses a download URL that is not https (http only where allowed: dev): the token
// goes with the download.
func (f *Fetcher) checkURL(info graph.MediaInfo) error {
	if u, err := url.Parse(info.URL); err != nil || (u.Scheme != "https" && !(f.allowHTTP && u.Scheme == "http")) {
		return &Error{Kind: ErrGone, Reason: "the download URL is not https"}
	}
	return nil
}

// graphError classifies a Graph failure of step.
func graphError(step string, err error) error {
	switch {
	case errors.Is(err, graph.ErrMediaTooLarge):
		return &Error{Kind: ErrTooLarge, Reason: step, Err: err}
	case graph.IsMediaGone(err):
		return &Error{Kind: ErrGone, Reason: step, Err: err}
	}
	switch graph.Classify(err) {
	case graph.Auth:
		return &Error{Kind: ErrAuth, Reason: step, Err: err}
	case graph.Temporary, graph.Throttled:
		return &Error{Kind: ErrRetryable, Reason: step, Err: err}
	}
	// A permanent refusal: no retry will fetch it, the user can only send it again.
	return &Error{Kind: ErrGone, Reason: step + " refused", Err: err}
}

// wantDigests are the digests the bytes must have: the webhook's (base64) and the lookup's
// (hex), whichever are given. None is a mismatch: the integrity cannot be checked.
func wantDigests(webhook, lookup string) ([][]byte, error) {
	var want [][]byte
	for _, s := range []string{webhook, lookup} {
		if strings.TrimSpace(s) == "" {
			continue
		}
		d, ok := parseDigest(s)
		if !ok {
			return nil, &Error{Kind: ErrMismatch, Reason: "the sha256 Meta gave is not a SHA-256"}
		}
		want = append(want, d)
	}
	if len(want) == 0 {
		return nil, &Error{Kind: ErrMismatch, Reason: "no sha256 to check the file against"}
	}
	return want, nil
}

// parseDigest reads a SHA-256 written in hex or in base64 (standard or URL alphabet, padded or
// not).
func parseDigest(s string) ([]byte, bool) {
	s = strings.TrimSpace(s)
	if len(s) == 2*sha256.Size {
		if d, err := hex.DecodeString(s); err == nil {
			return d, true
		}
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if d, err := enc.DecodeString(s); err == nil && len(d) == sha256.Size {
			return d, true
		}
	}
	return nil, false
}

// Describe is what the store keeps of media message m (never its bytes): Meta's media id, the
// type, the webhook's sha256 in hex, the caption and the file name; with att (a fetched file), its
// normalised type, hash and size. Nil when m carries no media.
func Describe(m whatsapp.Message, att *assistant.Attachment) *store.Media {
	if m.Media == nil {
		return nil
	}
	d := &store.Media{ID: m.Media.ID, MIMEType: llm.NormalizeMIMEType(m.Media.MimeType), Caption: m.Text, Filename: m.Media.Filename}
	if sum, ok := parseDigest(m.Media.SHA256); ok {
		d.SHA256 = hex.EncodeToString(sum)
	}
	if att != nil && att.Size > 0 {
		d.MIMEType, d.SHA256, d.Size = att.MIMEType, att.SHA256, att.Size
	}
	return d
}
