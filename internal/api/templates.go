package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"

	"github.com/go-chi/chi/v5"

	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/internal/refusal"
	"github.com/wapipe/wapipe/internal/store"
)

// The /v1/templates routes manage the tenant's message templates at Meta. The api holds no
// tenant token: it asks the worker's tenant routes (/internal/tenants/{id}/templates), which
// call Graph and record what Meta says in the templates collection.

// TemplateReader reads what wapipe knows of a tenant's template; *store.Templates implements it.
type TemplateReader interface {
	Get(ctx context.Context, tenantID, name, language string) (store.Template, error)
	ForeignOwner(ctx context.Context, tenantID, wabaID, name string) (string, error)
}

// templateCategories are Meta's template categories.
var templateCategories = map[string]bool{"MARKETING": true, "UTILITY": true, "AUTHENTICATION": true}

// templateLanguagePattern is Meta's form of a template language code: en, en_US, zh_CN, fil.
var templateLanguagePattern = regexp.MustCompile(`^[a-z]{2,3}(_[A-Z]{2})?$`)

// TemplateCreateRequest is the body of POST /v1/templates: Meta's creation body, and waba_id
// when the tenant's numbers are in several accounts.
type TemplateCreateRequest struct {
	Name                  string            `json:"name"`
	Language              string            `json:"language"`
	Category              string            `json:"category"`
	Components            []json.RawMessage `json:"components"`
	ParameterFormat       string            `json:"parameter_format,omitempty"`
	AllowCategoryChange   *bool             `json:"allow_category_change,omitempty"`
	MessageSendTTLSeconds *int              `json:"message_send_ttl_seconds,omitempty"`
	WABAID                string            `json:"waba_id,omitempty"`
}

// Validate returns the request's first problem, or nil. The components are Meta's to judge;
// each must be an object with a type.
func (t TemplateCreateRequest) Validate() error {
	switch {
	case t.Name == "":
		return errors.New("name: required")
	case len(t.Name) > MaxTemplateName || !templatePattern.MatchString(t.Name):
		return errors.New("name: lowercase letters, digits and underscores, at most 512")
	case t.Language == "":
		return errors.New("language: required (e.g. en_US)")
	case !templateLanguagePattern.MatchString(t.Language):
		return errors.New("language: a template language code such as en, en_US or pt_BR")
	case !templateCategories[t.Category]:
		return errors.New("category: MARKETING, UTILITY or AUTHENTICATION")
	case len(t.Components) == 0:
		return errors.New("components: required, at least a BODY component")
	case t.ParameterFormat != "" && t.ParameterFormat != "POSITIONAL" && t.ParameterFormat != "NAMED":
		return errors.New("parameter_format: POSITIONAL or NAMED")
	}
	for i, c := range t.Components {
		var comp struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(c, &comp) != nil || comp.Type == "" {
			return fmt.Errorf("components[%d]: an object with a type (HEADER, BODY, FOOTER or BUTTONS)", i)
		}
	}
	return nil
}

// TemplateInfo is one template of GET /v1/templates.
type TemplateInfo struct {
	Name       string          `json:"name"`
	Language   string          `json:"language"`
	Status     string          `json:"status"`
	Category   string          `json:"category"`
	Components json.RawMessage `json:"components"`
}

// workerTenant is caller for the routes that pass through the worker (templates, media): ok is
// also false, answered 503, when the api has no worker client.
func (s *Server) workerTenant(w http.ResponseWriter, r *http.Request) (_ *http.Request, tenantID string, ok bool) {
	r, tenantID, ok = s.caller(w, r)
	if !ok {
		return r, "", false
	}
	if s.deps.Worker == nil {
		fail(w, r, errors.New("the api has no worker client: uploads and templates are not configured"))
		return r, "", false
	}
	return r, tenantID, true
}

// handleTemplatesList answers GET /v1/templates.
func (s *Server) handleTemplatesList(w http.ResponseWriter, r *http.Request) {
	r, tenantID, ok := s.workerTenant(w, r)
	if !ok {
		return
	}
	listed, err := s.deps.Worker.ListTemplates(r.Context(), tenantID)
	if err != nil {
		fail(w, r, workerRefusal(err))
		return
	}
	got := struct {
		Data []TemplateInfo `json:"data"`
	}{Data: make([]TemplateInfo, len(listed))}
	for i, t := range listed {
		got.Data[i] = TemplateInfo{Name: t.Name, Language: t.Language, Status: t.Status, Category: t.Category, Components: t.Components}
		if len(t.Components) == 0 {
			got.Data[i].Components = json.RawMessage("[]")
		}
	}
	writeJSON(w, http.StatusOK, got)
}

// handleTemplateCreate answers POST /v1/templates: 201 {"id","status"}.
func (s *Server) handleTemplateCreate(w http.ResponseWriter, r *http.Request) {
	r, tenantID, ok := s.workerTenant(w, r)
	if !ok {
		return
	}
	ctx := r.Context()
	var req TemplateCreateRequest
	err := decodeJSON(w, r, &req, "template")
	if err == nil {
		if err = req.Validate(); err != nil {
			err = refusal.New(refusal.InvalidRequest, err.Error())
		}
	}
	if err != nil {
		fail(w, r, err)
		return
	}
	body, err := json.Marshal(req)
	if err != nil {
		fail(w, r, fmt.Errorf("encode the template: %w", err))
		return
	}
	created, err := s.deps.Worker.CreateTemplate(ctx, tenantID, body)
	if err != nil {
		fail(w, r, workerRefusal(err))
		return
	}
	logging.FromContext(ctx).InfoContext(ctx, "template created", "event", "api_template_created", "template", req.Name,
		"language", req.Language, "status", created.Status)
	writeJSON(w, http.StatusCreated, struct {
		ID     string `json:"id"`
		Status string `json:"status"`
	}{created.ID, created.Status})
}

// handleTemplateDelete answers DELETE /v1/templates/{name}[?waba_id=…]: 200 {"success":true},
// the template deleted in every language.
func (s *Server) handleTemplateDelete(w http.ResponseWriter, r *http.Request) {
	r, tenantID, ok := s.workerTenant(w, r)
	if !ok {
		return
	}
	ctx := r.Context()
	name := chi.URLParam(r, "name")
	if len(name) > MaxTemplateName || !templatePattern.MatchString(name) {
		fail(w, r, refusal.New(refusal.InvalidRequest, "name: lowercase letters, digits and underscores, at most 512"))
		return
	}
	if err := s.deps.Worker.DeleteTemplate(ctx, tenantID, name, r.URL.Query().Get("waba_id")); err != nil {
		fail(w, r, workerRefusal(err))
		return
	}
	logging.FromContext(ctx).InfoContext(ctx, "template deleted", "event", "api_template_deleted", "template", name)
	writeJSON(w, http.StatusOK, map[string]bool{"success": true})
}

// workerRefusal maps a template route's refusal to the api's answer: Meta's or the worker's
// refusal of the request (400 invalid_request, Meta's words), a token to renew (409
// WHATSAPP_REAUTH_REQUIRED), a name another tenant has on a shared account (409
// template_name_taken), a tenant gone (401); any other refusal is the worker failing (503),
// and an error that is no refusal (no answer) is returned as it is.
func workerRefusal(err error) error {
	var ce *refusal.Error
	if !errors.As(err, &ce) {
		return err
	}
	switch {
	case ce.Status == http.StatusBadRequest && ce.Code == refusal.InvalidRequest:
		return refusal.New(refusal.InvalidRequest, ce.Message)
	case ce.Status == http.StatusConflict && ce.Code == refusal.TemplateNameTaken:
		return refusal.New(refusal.TemplateNameTaken, ce.Message)
	case ce.Status == http.StatusConflict:
		return refusal.New(refusal.ReauthRequired, ce.Message)
	case ce.Status == http.StatusNotFound && ce.Code == refusal.NotFound:
		return refusal.New(refusal.TenantNotFound, ce.Message)
	case ce.Status == http.StatusForbidden && ce.Code == refusal.Forbidden:
		return refusal.New(refusal.Forbidden, ce.Message)
	}
	return fmt.Errorf("the worker answered %d %s", ce.Status, ce.Code)
}
