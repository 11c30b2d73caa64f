package tenantcalls

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/wapipe/wapipe/internal/graph"
	"github.com/wapipe/wapipe/internal/httpserver"
	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/internal/refusal"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/tenantroutes"
)

// The template routes: the api's /v1/templates, with the tenant's token, against every
// WhatsApp Business Account of the tenant's numbers. What Graph answers is recorded in the
// templates collection, where the api's send check and the console read it.

// maxTemplateBody caps a template creation body: Meta's are a few KiB.
const maxTemplateBody = 64 << 10

// TemplateStore records the tenants' templates; *store.Templates implements it.
type TemplateStore interface {
	RecordListing(ctx context.Context, tenantID string, at time.Time, listed []store.Template) ([]store.Template, error)
	RecordCreated(ctx context.Context, t store.Template, at time.Time) (store.Template, error)
	Delete(ctx context.Context, tenantID, name string) error
	DeleteOne(ctx context.Context, tenantID, name, language string) error
	CreatedIn(ctx context.Context, tenantID, wabaID, name string) ([]store.Template, error)
	NameTakenBy(ctx context.Context, tenantID, wabaID, name string) (string, error)
	ForeignNames(ctx context.Context, tenantID, wabaID string) (map[string]string, error)
	CountCreatedIn(ctx context.Context, tenantID, wabaID string) (int, error)
}

// TemplateAPI makes Graph's template calls with a tenant's token (GraphTemplates).
type TemplateAPI interface {
	ListTemplates(ctx context.Context, token, wabaID string) ([]graph.MessageTemplate, error)
	CreateTemplate(ctx context.Context, token, wabaID string, body json.RawMessage) (graph.CreatedTemplate, error)
	DeleteTemplate(ctx context.Context, token, wabaID, name string) error
	DeleteTemplateByID(ctx context.Context, token, wabaID, name, id string) error
}

// GraphTemplates is the TemplateAPI of a Graph client with no token of its own.
type GraphTemplates struct{ Client *graph.Client }

// ListTemplates lists wabaID's templates with token.
func (g GraphTemplates) ListTemplates(ctx context.Context, token, wabaID string) ([]graph.MessageTemplate, error) {
	return g.Client.WithToken(token).ListTemplates(ctx, wabaID)
}

// CreateTemplate creates a template in wabaID with token.
func (g GraphTemplates) CreateTemplate(ctx context.Context, token, wabaID string, body json.RawMessage) (graph.CreatedTemplate, error) {
	return g.Client.WithToken(token).CreateTemplate(ctx, wabaID, body)
}

// DeleteTemplate deletes template name from wabaID with token.
func (g GraphTemplates) DeleteTemplate(ctx context.Context, token, wabaID, name string) error {
	return g.Client.WithToken(token).DeleteTemplate(ctx, wabaID, name)
}

// DeleteTemplateByID deletes the one template of id (named name) from wabaID with token.
func (g GraphTemplates) DeleteTemplateByID(ctx context.Context, token, wabaID, name, id string) error {
	return g.Client.WithToken(token).DeleteTemplateByID(ctx, wabaID, name, id)
}

// templateCall is what every template route starts with: the tenant and its token; false when
// it has answered.
func (s *Server) templateCall(w http.ResponseWriter, r *http.Request) (context.Context, store.TenantRecord, string, bool) {
	ctx, _ := logging.With(r.Context(), "tenant_id", chi.URLParam(r, "tenant_id"))
	rec, token, err := s.tenantToken(ctx, chi.URLParam(r, "tenant_id"))
	if err != nil {
		writeError(ctx, w, err)
		return ctx, rec, "", false
	}
	return ctx, rec, token, true
}

// handleTemplatesList answers GET /internal/tenants/{tenant_id}/templates: every template of
// every account of the tenant, from Graph, recorded, with a newer webhook's status where one
// came in since the listing began.
func (s *Server) handleTemplatesList(w http.ResponseWriter, r *http.Request) {
	ctx, rec, token, ok := s.templateCall(w, r)
	if !ok {
		return
	}
	at := s.deps.Now()
	var listed []store.Template
	for _, waba := range rec.Tenant.WABAs() {
		ts, err := s.deps.TemplateAPI.ListTemplates(ctx, token, waba)
		if err != nil {
			writeError(ctx, w, s.graphFailed(ctx, rec, err))
			return
		}
		// On an account shared with other businesses, what another created there and does not
		// share (its templates.common) is neither listed nor recorded for this tenant.
		var foreign map[string]string
		if rec.Tenant.SharesWABA(waba) {
			if foreign, err = s.deps.Templates.ForeignNames(ctx, rec.Tenant.ID, waba); err != nil {
				writeError(ctx, w, err)
				return
			}
		}
		for _, t := range ts {
			if _, theirs := foreign[t.Name]; theirs {
				continue
			}
			listed = append(listed, store.Template{Name: t.Name, Language: t.Language, Status: t.Status, Category: t.Category,
				ID: t.ID, WABAID: waba, Components: string(t.Components)})
		}
	}
	got, err := s.deps.Templates.RecordListing(ctx, rec.Tenant.ID, at, listed)
	if err != nil {
		writeError(ctx, w, err)
		return
	}
	data := make([]tenantroutes.Template, len(got))
	for i, t := range got {
		data[i] = tenantroutes.Template{ID: t.ID, WABAID: t.WABAID, Name: t.Name, Language: t.Language, Status: t.Status, Category: t.Category}
		if t.Components != "" {
			data[i].Components = json.RawMessage(t.Components)
		}
	}
	logging.FromContext(ctx).InfoContext(ctx, "templates listed", "event", "templates_listed", "count", len(data))
	httpserver.WriteJSON(w, http.StatusOK, tenantroutes.TemplateList{Data: data})
}

// handleTemplateCreate answers POST /internal/tenants/{tenant_id}/templates: Meta's creation
// body, with waba_id naming the account when the tenant has several. 201 {"id","status",
// "category"}, recorded.
func (s *Server) handleTemplateCreate(w http.ResponseWriter, r *http.Request) {
	ctx, rec, token, ok := s.templateCall(w, r)
	if !ok {
		return
	}
	body, t, err := readTemplateBody(r)
	if err != nil {
		writeError(ctx, w, err)
		return
	}
	waba, err := templateWABA(rec, t.WABAID)
	if err != nil {
		writeError(ctx, w, err)
		return
	}
	if rec.Tenant.SharesWABA(waba) {
		// On an account shared with other businesses a name is its creator's, in every
		// language: a twin in another language would be deleted with it, and sent in its name.
		other, err := s.deps.Templates.NameTakenBy(ctx, rec.Tenant.ID, waba, t.Name)
		if err != nil {
			writeError(ctx, w, err)
			return
		}
		if other != "" {
			writeError(ctx, w, refusal.WithStatus(http.StatusConflict, refusal.TemplateNameTaken,
				"template "+t.Name+" was created by another business on the account this tenant shares: choose another name"))
			return
		}
		// The account's template limit at Meta is every sharing tenant's: each has its share.
		n, err := s.deps.Templates.CountCreatedIn(ctx, rec.Tenant.ID, waba)
		if err != nil {
			writeError(ctx, w, err)
			return
		}
		if limit := rec.Tenant.Templates.CreatedCap(); n >= limit {
			writeError(ctx, w, refusal.WithStatus(http.StatusForbidden, refusal.Forbidden, fmt.Sprintf(
				"this tenant created %d templates on the account it shares, its templates.max_created (%d): delete one, or raise it", n, limit)))
			return
		}
	}
	at := s.deps.Now()
	created, err := s.deps.TemplateAPI.CreateTemplate(ctx, token, waba, body)
	if err != nil {
		writeError(ctx, w, s.graphFailed(ctx, rec, err))
		return
	}
	logger := logging.FromContext(ctx)
	t.TenantID, t.WABAID, t.ID, t.Status, t.CreatedBy = rec.Tenant.ID, waba, created.ID, created.Status, rec.Tenant.ID
	t.Category = cmp.Or(created.Category, t.Category)
	if got, err := s.deps.Templates.RecordCreated(ctx, t, at); err != nil {
		// Meta has it: the next listing records it.
		logger.ErrorContext(ctx, "template created but not recorded", "event", "template_record_failed", "error", err)
	} else {
		t = got
	}
	logger.InfoContext(ctx, "template created", "event", "template_created", "template", t.Name, "language", t.Language, "status", t.Status)
	httpserver.WriteJSON(w, http.StatusCreated, tenantroutes.CreatedTemplate{ID: created.ID, Status: t.Status, Category: t.Category})
}

// handleTemplateDelete answers DELETE /internal/tenants/{tenant_id}/templates/{name}[?waba_id=…]:
// the template in every language, at Meta, then in the records. On an account shared with other
// businesses only the languages this tenant created there, each by Meta's id (sharedDelete).
func (s *Server) handleTemplateDelete(w http.ResponseWriter, r *http.Request) {
	ctx, rec, token, ok := s.templateCall(w, r)
	if !ok {
		return
	}
	name := chi.URLParam(r, "name")
	waba, err := templateWABA(rec, r.URL.Query().Get(tenantroutes.QueryWABAID))
	if err != nil {
		writeError(ctx, w, err)
		return
	}
	logger := logging.FromContext(ctx)
	if rec.Tenant.SharesWABA(waba) {
		if err := s.sharedDelete(ctx, rec, token, waba, name); err != nil {
			writeError(ctx, w, err)
			return
		}
	} else {
		if err := s.deps.TemplateAPI.DeleteTemplate(ctx, token, waba, name); err != nil {
			writeError(ctx, w, s.graphFailed(ctx, rec, err))
			return
		}
		if err := s.deps.Templates.Delete(ctx, rec.Tenant.ID, name); err != nil {
			// Meta deleted it: the next listing removes the record.
			logger.ErrorContext(ctx, "template deleted but its record stays", "event", "template_record_failed", "error", err)
		}
	}
	logger.InfoContext(ctx, "template deleted", "event", "template_deleted", "template", name)
	httpserver.WriteJSON(w, http.StatusOK, tenantroutes.Deleted{Success: true})
}

// sharedDelete deletes, from an account other businesses share, the languages of template name
// that the tenant created there through wapipe, each by Meta's id: Meta's delete by name would
// take every language, whoever made it. None: 403, and nothing is called.
func (s *Server) sharedDelete(ctx context.Context, rec store.TenantRecord, token, waba, name string) error {
	mine, err := s.deps.Templates.CreatedIn(ctx, rec.Tenant.ID, waba, name)
	if err != nil {
		return err
	}
	if len(mine) == 0 {
		return refusal.WithStatus(http.StatusForbidden, refusal.Forbidden,
			"template "+name+" is on an account shared with other businesses and was not created there by this tenant through wapipe: only its creator (or the operator, in WhatsApp Manager) may delete it")
	}
	for _, t := range mine {
		// t.ID is Meta's: a creation Meta answered without one is refused (graph.CreateTemplate).
		if err := s.deps.TemplateAPI.DeleteTemplateByID(ctx, token, waba, name, t.ID); err != nil {
			return s.graphFailed(ctx, rec, err)
		}
		if err := s.deps.Templates.DeleteOne(ctx, rec.Tenant.ID, name, t.Language); err != nil {
			// Meta deleted it: the next listing removes the record.
			logging.FromContext(ctx).ErrorContext(ctx, "template deleted but its record stays", "event", "template_record_failed", "error", err)
		}
	}
	return nil
}

// readTemplateBody reads a creation body: the body to send to Meta (without waba_id) and what
// it says of the template.
func readTemplateBody(r *http.Request) (json.RawMessage, store.Template, error) {
	var t store.Template
	raw, err := io.ReadAll(io.LimitReader(r.Body, maxTemplateBody+1))
	if err != nil || len(raw) > maxTemplateBody {
		return nil, t, refusal.WithStatus(http.StatusBadRequest, refusal.InvalidRequest, fmt.Sprintf("body: unreadable or over %d bytes", maxTemplateBody))
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
		return nil, t, refusal.WithStatus(http.StatusBadRequest, refusal.InvalidRequest, "body: not a JSON object")
	}
	for key, dst := range map[string]*string{"name": &t.Name, "language": &t.Language, "category": &t.Category, "waba_id": &t.WABAID} {
		if v, ok := fields[key]; ok && json.Unmarshal(v, dst) != nil {
			return nil, t, refusal.WithStatus(http.StatusBadRequest, refusal.InvalidRequest, key+": must be a string")
		}
	}
	t.Components = string(fields["components"])
	delete(fields, "waba_id")
	body, err := json.Marshal(fields)
	if err != nil {
		return nil, t, fmt.Errorf("encode the template body: %w", err)
	}
	return body, t, nil
}

// templateWABA is the account a creation or a deletion is for: the one asked for, which must be
// the tenant's, else the tenant's only one.
func templateWABA(rec store.TenantRecord, asked string) (string, error) {
	wabas := rec.Tenant.WABAs()
	switch {
	case asked != "" && slices.Contains(wabas, asked):
		return asked, nil
	case asked != "":
		return "", refusal.WithStatus(http.StatusBadRequest, refusal.InvalidRequest, "waba_id: not an account of the tenant's numbers")
	case len(wabas) == 1:
		return wabas[0], nil
	case len(wabas) == 0:
		return "", refusal.WithStatus(http.StatusBadRequest, refusal.InvalidRequest, "the tenant has no number with a waba_id")
	}
	return "", refusal.WithStatus(http.StatusBadRequest, refusal.InvalidRequest, "waba_id: required, the tenant's numbers are in several accounts: "+strings.Join(wabas, ", "))
}

// graphCallError is the refusal a template route answers for a failed Graph call: Meta's own
// refusal of the request as invalid_request with Meta's words (the token is never in them), a
// refused token as WHATSAPP_REAUTH_REQUIRED; anything else is left to writeError (503).
func graphCallError(err error) error {
	var ge *graph.Error
	if !errors.As(err, &ge) {
		return err
	}
	switch ge.Kind {
	case graph.Auth:
		return refusal.WithStatus(http.StatusConflict, refusal.ReauthRequired, "Meta refused the tenant's access token")
	case graph.Permanent:
		if ge.HTTPStatus < 400 || ge.HTTPStatus >= 500 {
			return err
		}
		msg := "Meta refused the request"
		if ge.Message != "" {
			msg += ": " + ge.Message
		}
		if ge.Details != "" {
			msg += " (" + ge.Details + ")"
		}
		return refusal.WithStatus(http.StatusBadRequest, refusal.InvalidRequest, msg)
	}
	return err
}
