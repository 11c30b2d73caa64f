package media

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
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
	// Kind is one of ErrUnsupported, ErrTooLarge, ErrGone, ErrMismatch, ErrRetryable, ErrAuth,
	// ErrBusy.
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
	// InflightBytes is the media budget (MEDIA_INFLIGHT_BYTES): the bytes the turns fetching
	// through this Fetcher may hold at once, each file charged Footprint times its size;
	// DefaultInflightBytes when 0. It must hold one file at the cap.
	InflightBytes int64
	// BudgetWait is how long a turn waits for budget before it is retried; DefaultBudgetWait
	// when 0.
	BudgetWait time.Duration
}

// Fetcher fetches media files from the Graph API. It is safe for concurrent use.
type Fetcher struct {
	graph     *graph.Client
	max       int64
	allowHTTP bool
	budget    *Budget
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
	if cfg.InflightBytes == 0 {
		cfg.InflightBytes = DefaultInflightBytes
	}
	if cfg.InflightBytes < Footprint*cfg.MaxBytes {
		return nil, fmt.Errorf("media: MEDIA_INFLIGHT_BYTES %d must be at least %d times MEDIA_MAX_BYTES (%d), so a file at the cap fits",
			cfg.InflightBytes, Footprint, Footprint*cfg.MaxBytes)
	}
	budget, err := NewBudget(cfg.InflightBytes, cfg.BudgetWait)
	if err != nil {
		return nil, err
	}
	return &Fetcher{graph: g, max: cfg.MaxBytes, allowHTTP: cfg.AllowInsecureURL, budget: budget}, nil
}

// MaxBytes is the size cap.
func (f *Fetcher) MaxBytes() int64 { return f.max }

// Budget is the media budget the turns' files are charged to.
func (f *Fetcher) Budget() *Budget { return f.budget }

// WithBudget is a copy of f whose files are charged to b: a test's budget, which it can hold.
func (f *Fetcher) WithBudget(b *Budget) *Fetcher {
	c := *f
	c.budget = b
	return &c
}

// NewCharge starts a turn's charge against f's budget.
func (f *Fetcher) NewCharge() *Charge { return f.budget.NewCharge() }

// Loader is f bound to a tenant's access token, charging the files it fetches to c (nil:
// uncharged): the turn's assistant.Input.Media.
func (f *Fetcher) Loader(token string, c *Charge) assistant.MediaLoader {
	return loader{f: f, token: token, charge: c}
}

type loader struct {
	f      *Fetcher
	token  string
	charge *Charge
}

func (l loader) LoadMedia(ctx context.Context, m whatsapp.Message) (assistant.Attachment, error) {
	return l.f.Fetch(ctx, l.token, m, l.charge)
}

// Fetch downloads the file of media message m with token and checks it, charging the file's
// footprint to c (nil: uncharged) before its bytes arrive; the charge is the caller's to release
// once done with the bytes. It logs one line (event media_fetched, media_budget_exhausted, or
// media_refused with the reason) with the type and size, never the caption, the file name or the
// bytes.
func (f *Fetcher) Fetch(ctx context.Context, token string, m whatsapp.Message, c *Charge) (assistant.Attachment, error) {
	start := time.Now()
	att, err := f.fetch(ctx, token, m, c)
	log := logging.FromContext(ctx)
	if errors.Is(err, ErrBusy) {
		log.WarnContext(ctx, "media budget exhausted: the turn is retried", "event", "media_budget_exhausted",
			"message_type", m.Type, "mime_type", att.MIMEType, "size", att.Size, "charged", c.Held(),
			"inflight_bytes", f.budget.Size(), "error", err.Error())
		return assistant.Attachment{}, err
	}
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
	case ErrBusy:
		return "busy"
	}
	return "error"
}

func (f *Fetcher) fetch(ctx context.Context, token string, m whatsapp.Message, c *Charge) (assistant.Attachment, error) {
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
	att.Size = info.FileSize
	data, got, err := f.download(ctx, g, info, c)
	if err != nil {
		return att, err
	}
	for _, w := range want {
		if !bytes.Equal(w, got) {
			return att, &Error{Kind: ErrMismatch, Reason: "the bytes do not match the sha256 Meta gave"}
		}
	}
	att.Data, att.Size, att.SHA256 = data, int64(len(data)), hex.EncodeToString(got)
	return att, nil
}

// download reads the file at info.URL into one buffer, hashing it as it arrives, and returns the
// bytes and their SHA-256. The buffer is charged to c before its bytes arrive: the announced size
// at once (the file is then read into one allocation, never copied), and whatever comes beyond it
// (a lookup that understates the size, or gives none) as it comes.
func (f *Fetcher) download(ctx context.Context, g *graph.Client, info graph.MediaInfo, c *Charge) (data, sum []byte, err error) {
	fb := &fileBuffer{ctx: ctx, charge: c, limit: f.max + 1, hash: sha256.New()}
	if info.FileSize > 0 {
		// Capped: the lookup may lie, and the download stops past the cap anyway.
		if err := fb.grow(min(info.FileSize, f.max) + 1); err != nil {
			return nil, nil, budgetError(err)
		}
	}
	if _, err := g.DownloadMedia(ctx, info.URL, fb, f.max); err != nil {
		var busy *Error
		if errors.As(err, &busy) && busy.Kind == ErrBusy {
			// Charging the rest of the file failed: the budget, not Graph.
			return nil, nil, busy
		}
		return nil, nil, graphError("download", err)
	}
	return fb.buf, fb.hash.Sum(nil), nil
}

// budgetError is a failed charge as Fetch's error: ErrBusy as it is, the turn's context ending
// as a failure to retry.
func budgetError(err error) error {
	var me *Error
	if errors.As(err, &me) {
		return me
	}
	return &Error{Kind: ErrRetryable, Reason: "media budget", Err: err}
}

// minChunk is the first buffer of a download whose size is not known.
const minChunk = 64 << 10

// fileBuffer receives a download: one buffer whose every byte of capacity is charged to the
// turn's budget before it is allocated, hashed as the bytes arrive. It reads from the response
// itself (io.ReaderFrom), so no intermediate buffer copies the file on the way.
type fileBuffer struct {
	ctx    context.Context
	charge *Charge
	// limit is the cap and one byte: room to see that a file is over the cap.
	limit int64
	buf   []byte
	hash  hash.Hash
}

// grow makes the buffer's capacity to bytes, charging the new capacity Footprint times over
// (the file, and the request built around it) and the outgrown buffer once more: garbage the
// collector has not reclaimed yet is memory all the same.
func (b *fileBuffer) grow(to int64) error {
	old := int64(cap(b.buf))
	if err := b.charge.Add(b.ctx, Footprint*(to-old)+old); err != nil {
		return err
	}
	grown := make([]byte, len(b.buf), to)
	copy(grown, b.buf)
	b.buf = grown
	return nil
}

// ReadFrom reads r until EOF or until the buffer holds limit bytes (the caller's cap then
// reports the file too large).
func (b *fileBuffer) ReadFrom(r io.Reader) (int64, error) {
	var total int64
	for {
		if len(b.buf) == cap(b.buf) {
			if int64(cap(b.buf)) >= b.limit {
				return total, nil
			}
			if err := b.grow(min(max(2*int64(cap(b.buf)), minChunk), b.limit)); err != nil {
				return total, err
			}
		}
		n, err := r.Read(b.buf[len(b.buf):cap(b.buf)])
		b.hash.Write(b.buf[len(b.buf) : len(b.buf)+n])
		b.buf = b.buf[:len(b.buf)+n]
		total += int64(n)
		if err == io.EOF {
			return total, nil
		}
		if err != nil {
			return total, err
		}
	}
}

// Write appends p, for writers that do not use ReadFrom.
func (b *fileBuffer) Write(p []byte) (int, error) {
	if need := int64(len(b.buf) + len(p)); need > int64(cap(b.buf)) {
		if err := b.grow(max(need, 2*int64(cap(b.buf)), minChunk)); err != nil {
			return 0, err
		}
	}
	b.buf = append(b.buf, p...)
	b.hash.Write(p)
	return len(p), nil
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
