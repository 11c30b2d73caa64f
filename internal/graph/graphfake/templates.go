package graphfake

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/wapipe/wapipe/internal/whatsapp"
)

// Message templates (templates.go), per WhatsApp Business Account, as the Business Management
// API serves them:
//
//	GET    /{version}/{waba_id}/message_templates?limit&after   {"data":[…],"paging":{…}}
//	POST   /{version}/{waba_id}/message_templates               {"id","status":"PENDING","category"}
//	DELETE /{version}/{waba_id}/message_templates?name=…[&hsm_id=…] {"success":true}
//	GET    /_fake/templates                                     {"templates":[…]}
//	POST   /_fake/templates/status {"name","language","status","reason"}
//
// A new template is PENDING until SetTemplateStatus (or POST /_fake/templates/status) decides:
// the fake then posts Meta's message_template_status_update webhook, signed with the app
// secret, to the URL SetWebhook names. A template send of a template the fake holds goes only
// when it is APPROVED: PAUSED gets 132015, DISABLED 132016, any other status 132001, as Meta
// answers.

// KindTemplate is a template call's Request kind.
const KindTemplate = "template"

// Template is one message template the fake holds.
type Template struct {
	ID         string          `json:"id"`
	WABAID     string          `json:"waba_id"`
	Name       string          `json:"name"`
	Language   string          `json:"language"`
	Status     string          `json:"status"`
	Category   string          `json:"category"`
	Components json.RawMessage `json:"components,omitempty"`
}

// templateState is the fake's templates, under Fake.mu.
type templateState struct {
	list []*Template
	// pageSize is a listing page's size at most (SetTemplatePageSize).
	pageSize int
	// webhookURL and appSecret are where status webhooks go and what signs them (SetWebhook).
	webhookURL, appSecret string
}

var templatesPath = regexp.MustCompile(`^(?:/v[0-9]+(?:\.[0-9]+)?)?/([^/]+)/message_templates/?$`)

// templateNamePattern is Meta's rule for a template name.
var templateNamePattern = regexp.MustCompile(`^[a-z0-9_]{1,512}$`)

func (f *Fake) templatesLocked() *templateState {
	if f.tmpl == nil {
		f.tmpl = &templateState{pageSize: 100}
	}
	return f.tmpl
}

// SetWebhook makes the fake post its webhooks (template status updates) to url, signed with
// appSecret as Meta signs them (X-Hub-Signature-256).
func (f *Fake) SetWebhook(url, appSecret string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	st := f.templatesLocked()
	st.webhookURL, st.appSecret = url, appSecret
}

// SetTemplatePageSize bounds a listing page, so a test can make a listing take several pages.
func (f *Fake) SetTemplatePageSize(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.templatesLocked().pageSize = max(1, n)
}

// Templates returns a copy of every template the fake holds, in creation order.
func (f *Fake) Templates() []Template {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := []Template{}
	for _, t := range f.templatesLocked().list {
		out = append(out, *t)
	}
	return out
}

// PutTemplate adds (or replaces, by account, name and language) a template as it stands at
// Meta, with no webhook: a template made outside wapipe.
func (f *Fake) PutTemplate(t Template) {
	f.mu.Lock()
	defer f.mu.Unlock()
	st := f.templatesLocked()
	if t.ID == "" {
		t.ID = randomDigits(15)
	}
	st.list = slices.DeleteFunc(st.list, func(o *Template) bool {
		return o.WABAID == t.WABAID && o.Name == t.Name && o.Language == t.Language
	})
	st.list = append(st.list, &t)
}

// SetTemplateStatus sets the status of template name (every language when language is empty)
// in every account that holds it, and posts Meta's message_template_status_update webhook for
// each to the SetWebhook URL, one at a time. It fails when the fake holds no such template, or
// a webhook was not answered 2xx.
func (f *Fake) SetTemplateStatus(ctx context.Context, name, language, status, reason string) error {
	if reason == "" {
		reason = "NONE"
	}
	f.mu.Lock()
	st := f.templatesLocked()
	var changed []Template
	for _, t := range st.list {
		if t.Name == name && (language == "" || t.Language == language) {
			t.Status = status
			changed = append(changed, *t)
		}
	}
	url, secret := st.webhookURL, st.appSecret
	f.mu.Unlock()
	if len(changed) == 0 {
		return fmt.Errorf("graphfake: template %q (%s): %w", name, language, errNoTemplate)
	}
	if url == "" {
		return nil
	}
	for _, t := range changed {
		if err := postWebhook(ctx, url, secret, templateStatusPayload(t, status, reason, time.Now())); err != nil {
			return err
		}
	}
	return nil
}

// templateStatusPayload is Meta's message_template_status_update for t.
func templateStatusPayload(t Template, event, reason string, now time.Time) []byte {
	p := whatsapp.Payload{Object: "whatsapp_business_account", Entry: []whatsapp.Entry{{
		ID: t.WABAID, Time: whatsapp.Number(strconv.FormatInt(now.Unix(), 10)),
		Changes: []whatsapp.Change{{Field: whatsapp.FieldTemplateStatus, Value: whatsapp.Value{OtherValue: whatsapp.OtherValue{
			Event: event, MessageTemplateID: whatsapp.Number(t.ID), MessageTemplateName: t.Name,
			MessageTemplateLanguage: t.Language, MessageTemplateCategory: t.Category, Reason: reason,
		}}}},
	}}}
	b, _ := json.Marshal(p) // only the whatsapp package's types: they always encode
	return b
}

// postWebhook posts body to url signed with secret, as Meta delivers a webhook: an answer
// other than 2xx, or none, is tried again (Meta retries too), up to five times.
func postWebhook(ctx context.Context, url, secret string, body []byte) error {
	var err error
	for attempt := range 5 {
		if err = postWebhookOnce(ctx, url, secret, body); err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(time.Duration(attempt+1) * 500 * time.Millisecond):
		}
	}
	return err
}

func postWebhookOnce(ctx context.Context, url, secret string, body []byte) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("graphfake: build webhook request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(whatsapp.SignatureHeader, whatsapp.Sign(body, secret))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("graphfake: post webhook: %w", err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("graphfake: the webhook answered %d", resp.StatusCode)
	}
	return nil
}

// templateSendRuleLocked is Meta's answer to a send of template name in language when the fake
// holds that template: none when it is APPROVED, else its refusal. ok is false when the fake
// holds no such template (the known names decide, signup.go).
func (f *Fake) templateSendRuleLocked(name, language string) (Failure, bool, bool) {
	for _, t := range f.templatesLocked().list {
		if t.Name != name || t.Language != language {
			continue
		}
		switch t.Status {
		case "APPROVED":
			return Failure{}, false, true
		case "PAUSED":
			return Failure{Code: 132015, Message: "(#132015) Template is paused", Details: "Template is paused due to low quality."}.withDefaults(), true, true
		case "DISABLED":
			return Failure{Code: 132016, Message: "(#132016) Template is disabled", Details: "Template has been paused too many times due to low quality."}.withDefaults(), true, true
		default:
			return Failure{HTTPStatus: http.StatusNotFound, Code: 132001, Message: "(#132001) Template name does not exist in the translation",
				Details: "template name (" + name + ") does not exist in " + language}.withDefaults(), true, true
		}
	}
	return Failure{}, false, false
}

// serveTemplates answers the template calls when r is one, and reports whether it was.
func (f *Fake) serveTemplates(w http.ResponseWriter, r *http.Request) bool {
	m := templatesPath.FindStringSubmatch(r.URL.Path)
	if m == nil {
		return false
	}
	waba := m[1]
	rec := Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Kind: KindTemplate, Time: f.now()}
	var status int
	var resp any
	switch r.Method {
	case http.MethodGet:
		status, resp = f.withAccount(r, waba, func(*signupState) any { return f.listTemplatesLocked(r, waba) })
	case http.MethodPost:
		raw, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		rec.RawBody = raw
		status, resp = f.withAccount(r, waba, func(*signupState) any { return f.createTemplateLocked(raw, waba) })
	case http.MethodDelete:
		status, resp = f.withAccount(r, waba, func(*signupState) any {
			return f.deleteTemplateLocked(r.URL.Query().Get("name"), r.URL.Query().Get("hsm_id"), waba)
		})
	default:
		status, resp = http.StatusBadRequest, metaError(Failure{Code: 100, Type: "GraphMethodException", Message: "Unsupported " + strings.ToLower(r.Method) + " request"}.withDefaults())
	}
	if fa, ok := resp.(failed); ok {
		status, resp = fa.fl.HTTPStatus, metaError(fa.fl)
	}
	rec.Status = status
	f.record(rec)
	writeJSON(w, status, resp)
	return true
}

// failed is a template call's refusal, from inside withAccount.
type failed struct{ fl Failure }

func (f *Fake) listTemplatesLocked(r *http.Request, waba string) any {
	st := f.templatesLocked()
	var mine []*Template
	for _, t := range st.list {
		if t.WABAID == waba {
			mine = append(mine, t)
		}
	}
	limit := st.pageSize
	if n, err := strconv.Atoi(r.URL.Query().Get("limit")); err == nil && n > 0 && n < limit {
		limit = n
	}
	from := 0
	if after := r.URL.Query().Get("after"); after != "" {
		b, err := base64.RawURLEncoding.DecodeString(after)
		n, cerr := strconv.Atoi(string(b))
		if err != nil || cerr != nil || n < 0 || n > len(mine) {
			return failed{Failure{Code: 100, Message: "(#100) Invalid parameter", Details: "after: not a cursor"}.withDefaults()}
		}
		from = n
	}
	to := min(len(mine), from+limit)
	data := []any{}
	for _, t := range mine[from:to] {
		item := map[string]any{"id": t.ID, "name": t.Name, "language": t.Language, "status": t.Status, "category": t.Category}
		if len(t.Components) > 0 {
			item["components"] = t.Components
		}
		data = append(data, item)
	}
	cursor := func(n int) string { return base64.RawURLEncoding.EncodeToString([]byte(strconv.Itoa(n))) }
	paging := map[string]any{"cursors": map[string]any{"before": cursor(from), "after": cursor(to)}}
	if to < len(mine) {
		paging["next"] = "https://graph.facebook.com/" + waba + "/message_templates?after=" + cursor(to)
	}
	return map[string]any{"data": data, "paging": paging}
}

func (f *Fake) createTemplateLocked(raw []byte, waba string) any {
	var in struct {
		Name       string          `json:"name"`
		Language   string          `json:"language"`
		Category   string          `json:"category"`
		Components json.RawMessage `json:"components"`
	}
	invalid := func(details string) any {
		return failed{Failure{Code: 100, Message: "(#100) Invalid parameter", Details: details}.withDefaults()}
	}
	if err := json.Unmarshal(raw, &in); err != nil {
		return invalid("The request body must be a JSON object")
	}
	var comps []json.RawMessage
	switch {
	case !templateNamePattern.MatchString(in.Name):
		return invalid("name: lower-case letters, digits and underscores")
	case in.Language == "":
		return invalid("language is required")
	case !slices.Contains([]string{"MARKETING", "UTILITY", "AUTHENTICATION"}, in.Category):
		return invalid("category must be MARKETING, UTILITY or AUTHENTICATION")
	case json.Unmarshal(in.Components, &comps) != nil || len(comps) == 0:
		return invalid("components is required")
	}
	st := f.templatesLocked()
	for _, t := range st.list {
		if t.WABAID == waba && t.Name == in.Name && t.Language == in.Language {
			return failed{Failure{Code: 100, Subcode: 2388024, Message: "Message template already exists",
				Details: "There is already content for this template in " + in.Language}.withDefaults()}
		}
	}
	t := &Template{ID: randomDigits(15), WABAID: waba, Name: in.Name, Language: in.Language, Status: "PENDING",
		Category: in.Category, Components: in.Components}
	st.list = append(st.list, t)
	return map[string]any{"id": t.ID, "status": t.Status, "category": t.Category}
}

// deleteTemplateLocked deletes name in every language, or with hsmID the one template of that id
// (Meta's delete by id: the name must match it too).
func (f *Fake) deleteTemplateLocked(name, hsmID, waba string) any {
	if name == "" {
		return failed{Failure{Code: 100, Message: "(#100) The parameter name is required."}.withDefaults()}
	}
	st := f.templatesLocked()
	n := len(st.list)
	st.list = slices.DeleteFunc(st.list, func(t *Template) bool {
		return t.WABAID == waba && t.Name == name && (hsmID == "" || t.ID == hsmID)
	})
	if len(st.list) == n {
		return failed{Failure{Code: 100, Subcode: 2593002, Message: "Message template not found",
			Details: "No template named " + name + " in this account"}.withDefaults()}
	}
	return map[string]any{"success": true}
}

// serveTemplateAdmin serves /_fake/templates and /_fake/templates/status.
func (f *Fake) serveTemplateAdmin(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path == "/_fake/templates" && r.Method == http.MethodGet:
		writeJSON(w, http.StatusOK, map[string]any{"templates": f.Templates()})
	case r.URL.Path == "/_fake/templates/status" && r.Method == http.MethodPost:
		var in struct {
			Name     string `json:"name"`
			Language string `json:"language"`
			Status   string `json:"status"`
			Reason   string `json:"reason"`
		}
		if err := decodeStrict(r, &in); err != nil || in.Name == "" || in.Status == "" {
			writeJSON(w, http.StatusBadRequest, map[string]any{"error": `want {"name":"…","language":"en_US","status":"APPROVED"}`})
			return
		}
		if err := f.SetTemplateStatus(r.Context(), in.Name, in.Language, in.Status, in.Reason); err != nil {
			status := http.StatusBadGateway
			if errors.Is(err, errNoTemplate) {
				status = http.StatusNotFound
			}
			writeJSON(w, status, map[string]any{"error": err.Error()})
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"status": "ok"})
	default:
		writeJSON(w, http.StatusNotFound, map[string]any{"error": "unknown fake control"})
	}
}

// errNoTemplate is SetTemplateStatus's error for a template the fake does not hold.
var errNoTemplate = errors.New("no such template")

func randomDigits(n int) string {
	b, h := make([]byte, n), randomHex(n)
	for i := range b {
		b[i] = '1' + h[i]%9
	}
	return string(b)
}
