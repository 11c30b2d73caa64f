package media

import (
	"context"
	"fmt"

	"github.com/wapipe/wapipe/internal/assistant"
	"github.com/wapipe/wapipe/internal/whatsapp"
)

// LoaderMaker makes a turn's loaders, which fetch with an access token and charge each file to
// the turn's share of a media budget; *Fetcher implements it.
type LoaderMaker interface {
	// NewCharge starts a turn's charge (nil: no budget).
	NewCharge() *Charge
	// Loader fetches with token, charging the files to c.
	Loader(token string, c *Charge) assistant.MediaLoader
}

// WithToken is a turn's loader that opens its access token (a tenant's, the one its replies are
// sent with) only when the assistant asks for the file, after the guardrails: a limited or
// over-quota message opens nothing and downloads nothing. The file it fetches stays charged to
// f's media budget until release is called: call it once the turn's model call is done (the
// file and the request built around it are garbage then), also after an error or a panic.
func WithToken(f LoaderMaker, token func(ctx context.Context) (string, error)) (l assistant.MediaLoader, release func()) {
	c := f.NewCharge()
	return tokenLoader{f: f, token: token, charge: c}, c.Release
}

type tokenLoader struct {
	f      LoaderMaker
	token  func(ctx context.Context) (string, error)
	charge *Charge
}

// LoadMedia opens the token and fetches m's file with it. A token that cannot be opened now is
// an error the turn retries; one Graph refuses keeps its *graph.Error, so the assistant ends the
// turn as unavailable for media_auth and the reply's send marks the tenant needs_reauth.
func (l tokenLoader) LoadMedia(ctx context.Context, m whatsapp.Message) (assistant.Attachment, error) {
	token, err := l.token(ctx)
	if err != nil {
		return assistant.Attachment{}, fmt.Errorf("media: the access token: %w", err)
	}
	return l.f.Loader(token, l.charge).LoadMedia(ctx, m)
}
