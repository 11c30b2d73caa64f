package tenants

import (
	"context"

	"github.com/wapipe/wapipe/internal/console/page"
	"github.com/wapipe/wapipe/internal/store"
)

// TemplateLister lists what wapipe knows of a tenant's message templates (listings by the api's
// GET /v1/templates and status webhooks); *store.Templates implements it.
type TemplateLister interface {
	List(ctx context.Context, tenantID string) ([]store.Template, error)
}

// tenantTemplates are the tenant's templates for its page, from the templates collection (no
// Graph call: the console holds no tenant token), or why they are not shown.
func (s *Server) tenantTemplates(ctx context.Context, tenantID string) ([]store.Template, string) {
	if s.deps.Templates == nil {
		return nil, "not available"
	}
	ts, err := s.deps.Templates.List(ctx, tenantID)
	if err != nil {
		page.Logger(ctx).Warn("read templates", "event", "console_templates_failed", "tenant_id", tenantID, "error", err)
		return nil, "unavailable"
	}
	return ts, ""
}
