package llm

import (
	"context"
	"errors"
	"sync"
)

// Lazy is a Client built on first use. A worker serves every tenant, and most tenants answer with
// a fixed acknowledgement: building the Vertex AI client at start-up would make a worker with no
// llm tenant depend on credentials it never uses (and stop at start when they are missing).
// Lazy builds the Client on the first Extract instead; a failure to build answers that turn as
// an LLM outage (ErrUnavailable: the turn is retried) and is reported to onBuildError, and the
// next Extract tries again, so credentials that appear later are picked up without a restart.
// It is safe for concurrent use.
type Lazy struct {
	cfg          Config
	onBuildError func(error)

	mu     sync.Mutex
	client *Client
}

// NewLazy checks cfg as far as it can without credentials and returns a Lazy that builds its
// Client with New on first use. onBuildError, when set, is called with each failure to build
// (for a log line: the error names what was missing, never a secret).
func NewLazy(cfg Config, onBuildError func(error)) (*Lazy, error) {
	if cfg.Project == "" {
		return nil, errors.New("llm: project is required")
	}
	return &Lazy{cfg: cfg, onBuildError: onBuildError}, nil
}

// Extract builds the Client if it is not built yet, then calls its Extract. When the Client
// cannot be built the error is an *Error of kind ErrUnavailable.
func (l *Lazy) Extract(ctx context.Context, req Request) (Result, error) {
	c, err := l.get(ctx)
	if err != nil {
		return Result{}, err
	}
	return c.Extract(ctx, req)
}

// get returns the Client, building it under the lock so that concurrent first turns build it
// once.
func (l *Lazy) get(ctx context.Context) (*Client, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.client != nil {
		return l.client, nil
	}
	// The client outlives the turn that builds it: the turn's deadline must not end it.
	c, err := New(context.WithoutCancel(ctx), l.cfg)
	if err != nil {
		if l.onBuildError != nil {
			l.onBuildError(err)
		}
		return nil, &Error{Kind: ErrUnavailable, Reason: "client not built: " + firstLine(err.Error()), Err: err}
	}
	l.client = c
	return c, nil
}
