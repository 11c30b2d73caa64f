package worker

import (
	"context"
	"errors"
	"fmt"

	"github.com/wapipe/wapipe/internal/assistant"
	"github.com/wapipe/wapipe/internal/graph"
	"github.com/wapipe/wapipe/internal/media"
)

// newMediaFetcher fetches the assistant's media files, with each turn's tenant token (plain http
// only to the fake Graph API in dev), charged to MEDIA_INFLIGHT_BYTES.
func newMediaFetcher(cfg *Config, gc *graph.Client) (*media.Fetcher, error) {
	mf, err := media.New(gc, media.Config{MaxBytes: cfg.MediaMaxBytes, AllowInsecureURL: cfg.IsDev(), InflightBytes: cfg.MediaInflightBytes})
	if err != nil {
		return nil, fmt.Errorf("media.New: %w", err)
	}
	return mf, nil
}

// mediaLoader is the turn's assistant.Input.Media for a message of tenantID, fetched with the
// tenant's token (opened only if the assistant asks); nil when the worker fetches no media. The
// file stays charged to MEDIA_INFLIGHT_BYTES until release is called, once the turn's model call
// is done.
func (s *Server) mediaLoader(tenantID string) (l assistant.MediaLoader, release func()) {
	if s.deps.Media == nil {
		return nil, func() {}
	}
	return media.WithToken(s.deps.Media, func(ctx context.Context) (string, error) {
		_, token, _, err := s.deliver.TenantToken(ctx, tenantID)
		return token, err
	})
}

// mediaBusy is the outcome of a turn that could not get its file's share of MEDIA_INFLIGHT_BYTES
// (media.ErrBusy, logged media_budget_exhausted where it was refused): no failure of the message,
// whose turn has not run and stays in its conversation's inbox. It is retried (503) on every
// attempt, the last one too, never dead-lettered: after a last attempt the sweep finds the
// conversation with its message still in the inbox and runs it.
func mediaBusy(err error) (outcome, bool) {
	if !errors.Is(err, media.ErrBusy) {
		return outcome{}, false
	}
	return retryLater("media_budget_exhausted", 0), true
}
