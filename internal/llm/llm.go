package llm

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"google.golang.org/genai"
)

// DefaultLocation is the Vertex AI region used when Config.Location is empty.
const DefaultLocation = "us-central1"

// DefaultTimeout bounds one generateContent call when Config.Timeout is zero.
const DefaultTimeout = 30 * time.Second

// Config configures a Client.
type Config struct {
	// Project is the Google Cloud project that owns the Vertex AI usage. Required.
	Project string
	// Location is the Vertex AI region; DefaultLocation when empty.
	Location string
	// BaseURL, for development only, points the client at a compatible fake (for example
	// "http://127.0.0.1:8124"). With it set the client sends no credentials. Empty in
	// production: the regional Vertex AI endpoint with Application Default Credentials.
	BaseURL string
	// HTTPClient, when set, carries the calls (it is copied, not modified). In production
	// the credentials are added on top of its transport.
	HTTPClient *http.Client
	// Timeout bounds one call; DefaultTimeout when zero.
	Timeout time.Duration
}

// Client extracts intents with Vertex AI Gemini. It is safe for concurrent use.
type Client struct {
	genai   *genai.Client
	timeout time.Duration
	now     func() time.Time
}

// New returns a client for cfg. In production (no BaseURL) it looks up Application Default
// Credentials now, so a missing credential fails here rather than on the call (see Lazy for
// building on first use).
func New(ctx context.Context, cfg Config) (*Client, error) {
	if cfg.Project == "" {
		return nil, errors.New("llm: project is required")
	}
	if cfg.Location == "" {
		cfg.Location = DefaultLocation
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	// Our own copy of the HTTP client, whose transport notes Retry-After: genai.APIError
	// does not carry the response headers.
	hc := &http.Client{}
	if cfg.HTTPClient != nil {
		*hc = *cfg.HTTPClient
	}
	hc.Transport = &retryAfterTransport{base: hc.Transport}

	cc := &genai.ClientConfig{
		Backend:    genai.BackendVertexAI,
		Project:    cfg.Project,
		Location:   cfg.Location,
		HTTPClient: hc,
		// v1 is the stable Vertex AI API (genai defaults to v1beta1).
		HTTPOptions: genai.HTTPOptions{BaseURL: strings.TrimRight(cfg.BaseURL, "/"), APIVersion: "v1"},
	}
	if cfg.BaseURL == "" {
		// genai only looks up credentials itself when it builds its own HTTP client; ours
		// needs them added explicitly.
		if err := cc.UseDefaultCredentials(); err != nil {
			return nil, fmt.Errorf("llm: application default credentials: %w", err)
		}
	}
	gc, err := genai.NewClient(ctx, cc)
	if err != nil {
		return nil, fmt.Errorf("llm: genai.NewClient: %w", err)
	}
	return &Client{genai: gc, timeout: cfg.Timeout, now: func() time.Time { return time.Now().UTC() }}, nil
}

// Extract asks the model for the intent of req.Text and validates the answer. On failure the
// error is an *Error (see ErrUnavailable, ErrInvalidResponse, ErrPermanent). With
// ErrInvalidResponse the Result still carries Usage and ModelVersion, because the call was
// billed; its other fields are zero.
func (c *Client) Extract(ctx context.Context, req Request) (Result, error) {
	if req.Now.IsZero() {
		req.Now = c.now()
	}
	call, err := req.build()
	if err != nil {
		return Result{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	hint := &retryAfterHint{}
	ctx = context.WithValue(ctx, retryAfterKey{}, hint)
	// The attachment is spliced into the request as it is sent (inline.go).
	ctx = withInline(ctx, call.inline)

	resp, err := c.genai.Models.GenerateContent(ctx, call.model, call.contents, call.config)
	if err != nil {
		return Result{}, classify(err, hint.get())
	}
	usage := Result{ModelVersion: resp.ModelVersion}
	if usage.ModelVersion == "" {
		// The price of the call is the model's (pricing.Card.TokenPrice).
		usage.ModelVersion = call.model
	}
	if u := resp.UsageMetadata; u != nil {
		usage.Usage = Usage{
			PromptTokens:   int(u.PromptTokenCount),
			OutputTokens:   int(u.CandidatesTokenCount),
			ThoughtsTokens: int(u.ThoughtsTokenCount),
			TotalTokens:    int(u.TotalTokenCount),
		}
		for _, d := range u.PromptTokensDetails {
			if d != nil && d.Modality == genai.MediaModalityAudio {
				usage.Usage.AudioTokens += int(d.TokenCount)
			}
		}
	}
	text, err := answerText(resp)
	if err != nil {
		return usage, err
	}
	res, err := call.parseAnswer(text)
	if err != nil {
		return usage, err
	}
	res.Usage, res.ModelVersion = usage.Usage, usage.ModelVersion
	return res, nil
}

// answerText is the first candidate's text (thought parts left out), or why there is none.
func answerText(resp *genai.GenerateContentResponse) (string, error) {
	if len(resp.Candidates) == 0 {
		if pf := resp.PromptFeedback; pf != nil && pf.BlockReason != "" {
			return "", invalidf("prompt blocked: %s", pf.BlockReason)
		}
		return "", invalidf("no candidate in the response")
	}
	cand := resp.Candidates[0]
	switch cand.FinishReason {
	case "", genai.FinishReasonStop:
	default:
		// MAX_TOKENS leaves truncated JSON; SAFETY and the like leave none.
		return "", invalidf("generation stopped: %s", cand.FinishReason)
	}
	var b strings.Builder
	if cand.Content != nil {
		for _, p := range cand.Content.Parts {
			if p != nil && !p.Thought {
				b.WriteString(p.Text)
			}
		}
	}
	if strings.TrimSpace(b.String()) == "" {
		return "", invalidf("empty answer")
	}
	return b.String(), nil
}

// retryAfterKey carries a *retryAfterHint in a request's context.
type retryAfterKey struct{}

// retryAfterHint receives the Retry-After of a failed response.
type retryAfterHint struct {
	mu sync.Mutex
	d  time.Duration
}

func (h *retryAfterHint) set(d time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.d = d
}

func (h *retryAfterHint) get() time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.d
}

// retryAfterTransport notes the Retry-After header of error responses in the request's
// retryAfterHint.
type retryAfterTransport struct {
	base http.RoundTripper
}

func (t *retryAfterTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	base := t.base
	if base == nil {
		base = http.DefaultTransport
	}
	r, err := spliceInline(r)
	if err != nil {
		return nil, err
	}
	resp, err := base.RoundTrip(r)
	if err == nil && resp.StatusCode >= 400 {
		if h, ok := r.Context().Value(retryAfterKey{}).(*retryAfterHint); ok {
			if d := parseRetryAfter(resp.Header.Get("Retry-After"), time.Now()); d > 0 {
				h.set(d)
			}
		}
	}
	return resp, err
}
