package worker

import (
	"context"
	"fmt"

	"github.com/wapipe/wapipe/internal/assistant"
	"github.com/wapipe/wapipe/internal/whatsapp"
)

// MediaFetcher fetches media files from the Graph API with a given access token;
// *media.Fetcher implements it.
type MediaFetcher interface {
	Loader(token string) assistant.MediaLoader
}

// mediaLoader is the turn's assistant.Input.Media for a message of tenantID: nil when the worker
// fetches no media.
func (s *Server) mediaLoader(tenantID string) assistant.MediaLoader {
	if s.deps.Media == nil {
		return nil
	}
	return tenantMedia{s: s, tenantID: tenantID}
}

// tenantMedia fetches a turn's file with its tenant's access token, the one its replies are sent
// with. The token is opened only when the assistant asks for the file, after the guardrails: a
// limited or over-quota message opens nothing and downloads nothing.
type tenantMedia struct {
	s        *Server
	tenantID string
}

// LoadMedia opens the tenant's token and fetches m's file with it. A token that cannot be opened
// now is an error the turn retries (and, on its last attempt, answers "send it again"); one Graph
// refuses keeps its *graph.Error, so the assistant ends the turn as unavailable for media_auth and
// the reply's send marks the tenant needs_reauth.
func (l tenantMedia) LoadMedia(ctx context.Context, m whatsapp.Message) (assistant.Attachment, error) {
	_, token, _, err := l.s.deliver.TenantToken(ctx, l.tenantID)
	if err != nil {
		return assistant.Attachment{}, fmt.Errorf("media: the tenant's access token: %w", err)
	}
	return l.s.deps.Media.Loader(token).LoadMedia(ctx, m)
}
