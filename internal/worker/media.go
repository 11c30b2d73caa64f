package worker

import (
	"context"

	"github.com/wapipe/wapipe/internal/assistant"
	"github.com/wapipe/wapipe/internal/media"
)

// mediaLoader is the turn's assistant.Input.Media for a message of tenantID, fetched with the
// tenant's token (opened only if the assistant asks); nil when the worker fetches no media.
func (s *Server) mediaLoader(tenantID string) assistant.MediaLoader {
	if s.deps.Media == nil {
		return nil
	}
	return media.WithToken(s.deps.Media, func(ctx context.Context) (string, error) {
		_, token, _, err := s.deliver.TenantToken(ctx, tenantID)
		return token, err
	})
}
