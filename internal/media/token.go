package media

import (
	"context"
	"fmt"

	"github.com/wapipe/wapipe/internal/assistant"
	"github.com/wapipe/wapipe/internal/whatsapp"
)

// LoaderMaker makes a loader that fetches with an access token; *Fetcher implements it.
type LoaderMaker interface {
	Loader(token string) assistant.MediaLoader
}

// WithToken is a loader that opens its access token (a tenant's, the one its replies are sent
// with) only when the assistant asks for the file, after the guardrails: a limited or over-quota
// message opens nothing and downloads nothing.
func WithToken(f LoaderMaker, token func(ctx context.Context) (string, error)) assistant.MediaLoader {
	return tokenLoader{f: f, token: token}
}

type tokenLoader struct {
	f     LoaderMaker
	token func(ctx context.Context) (string, error)
}

// LoadMedia opens the token and fetches m's file with it. A token that cannot be opened now is
// an error the turn retries; one Graph refuses keeps its *graph.Error, so the assistant ends the
// turn as unavailable for media_auth and the reply's send marks the tenant needs_reauth.
func (l tokenLoader) LoadMedia(ctx context.Context, m whatsapp.Message) (assistant.Attachment, error) {
	token, err := l.token(ctx)
	if err != nil {
		return assistant.Attachment{}, fmt.Errorf("media: the access token: %w", err)
	}
	return l.f.Loader(token).LoadMedia(ctx, m)
}
