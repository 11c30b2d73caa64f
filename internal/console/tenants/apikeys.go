package tenants

import (
	"context"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/wapipe/wapipe/internal/console/page"
	"github.com/wapipe/wapipe/internal/operator"
	"github.com/wapipe/wapipe/internal/store"
)

// apiKeysView is a tenant's API keys page: prefixes and dates, never a key or its hash.
type apiKeysView struct {
	TenantID, TenantName string
	Keys                 []operator.APIKeyInfo
}

// apiKeysRoutes serves /tenants/{tenant}/api-keys: the list (GET) and the revocation of one key
// (POST, CSRF-protected and audited once per request id, like the console's other actions). It
// does what `wapipe tenants api-keys` and `revoke-key` do; keys are created with the CLI only,
// since a key is shown once and a page is kept in browser history.
func (s *Server) apiKeysRoutes() http.Handler {
	r := chi.NewRouter()
	r.Method(http.MethodGet, "/", s.handleAPIKeys())
	r.Method(http.MethodPost, "/{prefix}/revoke", s.kit.Protect(s.handleRevokeAPIKey()))
	return r
}

func (s *Server) handleAPIKeys() http.Handler {
	return s.kit.WithTenant(s.deps.Tenants, func(w http.ResponseWriter, r *http.Request, rec store.TenantRecord) {
		ctx := r.Context()
		if s.deps.APIKeys == nil {
			s.kit.Fail(w, r, "List the API keys", page.ErrNotAvailable)
			return
		}
		keys, err := operator.ListTenantKeys(ctx, s.deps.APIKeys, rec.Tenant.ID, s.deps.Now())
		if err != nil {
			s.kit.Fail(w, r, "List the API keys", err)
			return
		}
		v := apiKeysView{TenantID: rec.Tenant.ID, TenantName: rec.Tenant.Name, Keys: keys}
		s.kit.Render(w, r, http.StatusOK, "apikeys", "", page.View{Title: "API keys of " + rec.Tenant.Name, Nav: "tenants", Flash: s.kit.Flash(r), Data: v})
	})
}

// handleRevokeAPIKey revokes one key of the tenant: the api refuses it from the next request.
func (s *Server) handleRevokeAPIKey() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec, err := s.deps.Tenants.Get(r.Context(), chi.URLParam(r, "tenant"))
		if err != nil {
			s.kit.Fail(w, r, "Read the tenant", err)
			return
		}
		id, prefix := rec.Tenant.ID, chi.URLParam(r, "prefix")
		s.kit.Perform(w, r, page.Action{Name: "revoke_api_key", TenantID: id, Target: prefix, Back: "/tenants/" + id + "/api-keys",
			Run: func(ctx context.Context) (string, error) {
				if s.deps.APIKeys == nil {
					return "", page.ErrNotAvailable
				}
				info, err := operator.RevokeTenantKey(ctx, s.deps.APIKeys, id, prefix, s.deps.Now())
				if err != nil {
					return "", err
				}
				return info.Prefix + " revoked", nil
			}})
	})
}
