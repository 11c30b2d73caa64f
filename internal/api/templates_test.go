package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wapipe/wapipe/internal/graph/graphfake"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/testenv"
	"github.com/wapipe/wapipe/internal/whatsapp"
)

// waba is the account of the test tenant's number (newStack).
const waba = "300000000000001"

// templateCall makes one /v1/templates request with the tenant's key.
func (s *stack) templateCall(method, path, body string) answer {
	s.t.Helper()
	req, _ := http.NewRequest(method, s.APIURL+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+s.key)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	return s.do(req)
}

// listed returns the template name (language) of GET /v1/templates, or nil.
func (s *stack) listed(name, language string) map[string]any {
	s.t.Helper()
	a := s.templateCall(http.MethodGet, "/v1/templates", "")
	if a.Status != http.StatusOK {
		s.t.Fatalf("GET /v1/templates: %d %v", a.Status, a.Body)
	}
	data, _ := a.Body["data"].([]any)
	for _, d := range data {
		if m, _ := d.(map[string]any); m["name"] == name && m["language"] == language {
			return m
		}
	}
	return nil
}

const orderReadyBody = `{"name":"order_ready","language":"en_US","category":"UTILITY","components":[
	{"type":"BODY","text":"Hi {{1}}, your order {{2}} is ready.","example":{"body_text":[["Ana","A-12"]]}}]}`

// templateSend is a /v1/messages body sending template name (en_US) with two body parameters.
func templateSend(name string) string {
	return `{"to":"` + contact + `","type":"template","template":{"name":"` + name + `","language":{"code":"en_US"},
		"components":[{"type":"body","parameters":[{"type":"text","text":"Ana"},{"type":"text","text":"A-12"}]}]}}`
}

// waitTemplateStatus polls the templates collection until the webhook recorded status.
func waitTemplateStatus(t *testing.T, s *stack, name, status string) {
	t.Helper()
	ts := store.NewTemplates(s.db, store.Options{})
	var last store.Template
	testenv.Eventually(t, 60*time.Second, func() bool {
		got, err := ts.Get(context.Background(), "acme", name, "en_US")
		last = got
		return err == nil && got.Status == status && got.StatusSource == store.StatusWebhook
	}, "the status webhook never recorded %s %s (last %+v)", name, status, &last)
}

// TestTemplateLifecycle: a template created through POST /v1/templates is PENDING at Meta and in
// GET /v1/templates; a send of it is refused with 422 template_not_approved and nothing reaches
// Graph; Meta's approval arrives as a signed status webhook through the webhook and the worker,
// after which a send with parameters goes out with Meta's body field for field; a REJECTED one is
// refused; a delete removes it from the listing and the records.
func TestTemplateLifecycle(t *testing.T) {
	t.Parallel()
	s := newStack(t, "")
	ctx := context.Background()

	created := s.templateCall(http.MethodPost, "/v1/templates", orderReadyBody)
	if created.Status != http.StatusCreated || created.Body["status"] != "PENDING" || created.Body["id"] == "" {
		t.Fatalf("create: %d %v, want 201 with an id and PENDING", created.Status, created.Body)
	}
	atMeta := s.Graph.Templates()
	if len(atMeta) != 1 || atMeta[0].WABAID != waba || atMeta[0].ID != created.Body["id"] {
		t.Fatalf("the fake holds %+v, want order_ready in %s with id %v", atMeta, waba, created.Body["id"])
	}
	got := s.listed("order_ready", "en_US")
	want := map[string]any{"name": "order_ready", "language": "en_US", "status": "PENDING", "category": "UTILITY",
		"components": []any{map[string]any{"type": "BODY", "text": "Hi {{1}}, your order {{2}} is ready.",
			"example": map[string]any{"body_text": []any{[]any{"Ana", "A-12"}}}}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("GET /v1/templates (-want +got):\n%s", diff)
	}

	refused := s.post(s.key, "tpl-pending", templateSend("order_ready"))
	if refused.Status != http.StatusUnprocessableEntity || refused.errorCode() != "template_not_approved" {
		t.Fatalf("send of a PENDING template: %d %v, want 422 template_not_approved", refused.Status, refused.Body)
	}
	if n := len(templateSends(s, "order_ready")); n != 0 {
		t.Errorf("Graph received the PENDING template %d times", n)
	}

	if err := s.Graph.SetTemplateStatus(ctx, "order_ready", "en_US", "APPROVED", ""); err != nil {
		t.Fatal(err)
	}
	waitTemplateStatus(t, s, "order_ready", "APPROVED")
	sent := s.post(s.key, "tpl-approved", templateSend("order_ready"))
	if sent.Status != http.StatusAccepted {
		t.Fatalf("send of the APPROVED template: %d %v, want 202", sent.Status, sent.Body)
	}
	var sends []map[string]any
	testenv.Eventually(t, 60*time.Second, func() bool {
		sends = templateSends(s, "order_ready")
		return len(sends) > 0
	}, "the APPROVED template never reached Graph")
	if n := len(s.sendsWithKey("tpl-pending")); n != 0 {
		t.Errorf("the refused send reached Graph %d times", n)
	}
	wantBody := map[string]any{"name": "order_ready", "language": map[string]any{"code": "en_US"},
		"components": []any{map[string]any{"type": "body", "parameters": []any{
			map[string]any{"type": "text", "text": "Ana"}, map[string]any{"type": "text", "text": "A-12"}}}}}
	if diff := cmp.Diff(wantBody, sends[0]["template"]); diff != "" {
		t.Errorf("the template Graph received (-want +got):\n%s", diff)
	}

	// A REJECTED template is refused too.
	promo := strings.ReplaceAll(strings.ReplaceAll(orderReadyBody, "order_ready", "spring_promo"), "UTILITY", "MARKETING")
	if a := s.templateCall(http.MethodPost, "/v1/templates", promo); a.Status != http.StatusCreated {
		t.Fatalf("create spring_promo: %d %v", a.Status, a.Body)
	}
	if err := s.Graph.SetTemplateStatus(ctx, "spring_promo", "en_US", "REJECTED", "INVALID_FORMAT"); err != nil {
		t.Fatal(err)
	}
	waitTemplateStatus(t, s, "spring_promo", "REJECTED")
	if a := s.post(s.key, "", templateSend("spring_promo")); a.Status != http.StatusUnprocessableEntity || a.errorCode() != "template_not_approved" {
		t.Errorf("send of a REJECTED template: %d %v, want 422 template_not_approved", a.Status, a.Body)
	}
	if n := len(templateSends(s, "spring_promo")); n != 0 {
		t.Errorf("Graph received the REJECTED template %d times", n)
	}
	// The console's tenant page lists both with their status, from the records.
	page := consolePage(t, s.ConsoleURL+"/tenants/acme")
	for _, w := range []string{"<code>spring_promo</code>", ">REJECTED<", "<code>order_ready</code>", ">APPROVED<"} {
		if !strings.Contains(page, w) {
			t.Errorf("the console's tenant page lacks %q", w)
		}
	}

	if a := s.templateCall(http.MethodDelete, "/v1/templates/order_ready", ""); a.Status != http.StatusOK || a.Body["success"] != true {
		t.Fatalf("delete: %d %v, want 200 success", a.Status, a.Body)
	}
	if m := s.listed("order_ready", "en_US"); m != nil {
		t.Errorf("GET /v1/templates after the delete still lists %v", m)
	}
	if m := s.listed("spring_promo", "en_US"); m == nil || m["status"] != "REJECTED" {
		t.Errorf("GET /v1/templates: spring_promo is %v, want REJECTED", m)
	}
	if _, err := store.NewTemplates(s.db, store.Options{}).Get(ctx, "acme", "order_ready", "en_US"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the deleted template's record: %v, want not found", err)
	}
}

// TestTemplateRequestsRefused: bad bodies are refused by the api before any Graph call, Meta's
// own refusal comes back as 400 invalid_request with Meta's words, a missing key is 401, and a
// template wapipe has no record of is sent (Meta decides).
func TestTemplateRequestsRefused(t *testing.T) {
	t.Parallel()
	s := newStack(t, "")
	if a := s.templateCall(http.MethodPost, "/v1/templates", orderReadyBody); a.Status != http.StatusCreated {
		t.Fatalf("create: %d %v", a.Status, a.Body)
	}
	before := len(s.Graph.Requests())
	for _, tc := range []struct{ name, body, problem string }{
		{"no name", `{"language":"en_US","category":"UTILITY","components":[{"type":"BODY","text":"x"}]}`, "name: required"},
		{"bad name", strings.Replace(orderReadyBody, "order_ready", "Order Ready", 1), "name: lowercase"},
		{"bad category", strings.Replace(orderReadyBody, "UTILITY", "SALES", 1), "category: MARKETING, UTILITY or AUTHENTICATION"},
		{"bad language", strings.Replace(orderReadyBody, "en_US", "english", 1), "language:"},
		{"no components", `{"name":"x","language":"en_US","category":"UTILITY","components":[]}`, "components: required"},
		{"component without type", `{"name":"x","language":"en_US","category":"UTILITY","components":[{"text":"x"}]}`, "components[0]"},
		{"unknown field", `{"name":"x","language":"en_US","category":"UTILITY","components":[{"type":"BODY"}],"colour":"red"}`, "unknown field"},
	} {
		a := s.templateCall(http.MethodPost, "/v1/templates", tc.body)
		msg, _ := a.Body["error"].(map[string]any)["message"].(string)
		if a.Status != http.StatusBadRequest || a.errorCode() != "invalid_request" || !strings.Contains(msg, tc.problem) {
			t.Errorf("%s: %d %v, want 400 invalid_request saying %q", tc.name, a.Status, a.Body, tc.problem)
		}
	}
	if n := len(s.Graph.Requests()); n != before {
		t.Errorf("refused requests reached Graph: %d calls", n-before)
	}
	// Meta's refusal: the same name and language again.
	a := s.templateCall(http.MethodPost, "/v1/templates", orderReadyBody)
	msg, _ := a.Body["error"].(map[string]any)["message"].(string)
	if a.Status != http.StatusBadRequest || a.errorCode() != "invalid_request" || !strings.Contains(msg, "already exists") {
		t.Errorf("duplicate: %d %v, want 400 invalid_request with Meta's message", a.Status, a.Body)
	}
	if strings.Contains(msg, token) {
		t.Errorf("the refusal shows the tenant's token: %q", msg)
	}
	if a := s.templateCall(http.MethodDelete, "/v1/templates/no_such_one", ""); a.Status != http.StatusBadRequest || a.errorCode() != "invalid_request" {
		t.Errorf("delete of an unknown template: %d %v, want 400 invalid_request", a.Status, a.Body)
	}
	if a := s.templateCall(http.MethodDelete, "/v1/templates/order_ready?waba_id=999", ""); a.Status != http.StatusBadRequest {
		t.Errorf("delete in another tenant's account: %d %v, want 400", a.Status, a.Body)
	}
	req, _ := http.NewRequest(http.MethodGet, s.APIURL+"/v1/templates", nil)
	if a := s.do(req); a.Status != http.StatusUnauthorized {
		t.Errorf("GET /v1/templates without a key: %d, want 401", a.Status)
	}
	// hello_world is known to the fake but not to wapipe: it goes, Meta decides.
	if a := s.post(s.key, "", `{"to":"`+contact+`","type":"template","template":{"name":"hello_world","language":{"code":"en_US"}}}`); a.Status != http.StatusAccepted {
		t.Errorf("a template wapipe has no record of: %d %v, want 202", a.Status, a.Body)
	}
}

// TestStaleListingKeepsNewerWebhookStatus: a listing that began before a status webhook was
// recorded does not undo the webhook's status, through the real routes: the fake's listing is
// slowed until the webhook is in.
func TestStaleListingKeepsNewerWebhookStatus(t *testing.T) {
	t.Parallel()
	s := newStack(t, "")
	ctx := context.Background()
	s.Graph.PutTemplate(graphfake.Template{WABAID: waba, Name: "ticket_update", Language: "en_US", Status: "APPROVED", Category: "UTILITY",
		Components: json.RawMessage(`[{"type":"BODY","text":"Ticket {{1}} updated"}]`)})
	if m := s.listed("ticket_update", "en_US"); m == nil || m["status"] != "APPROVED" {
		t.Fatalf("first listing: %v, want APPROVED", m)
	}
	// Meta pauses the template; the webhook is recorded. A listing that started before it (here:
	// recorded as of an hour ago) must keep PAUSED even though it says APPROVED.
	pause := whatsapp.SampleTemplateStatus(whatsapp.SampleOptions{WABAID: waba}, "ticket_update", "PAUSED", "UTILITY")
	s.deliver(pause)
	waitTemplateStatus(t, s, "ticket_update", "PAUSED")
	ts := store.NewTemplates(s.db, store.Options{})
	got, err := ts.RecordListing(ctx, "acme", time.Now().Add(-time.Hour), []store.Template{{Name: "ticket_update", Language: "en_US",
		Status: "APPROVED", Category: "UTILITY", WABAID: waba}})
	if err != nil {
		t.Fatal(err)
	}
	if got[0].Status != "PAUSED" {
		t.Errorf("a listing older than the webhook answered %s, want PAUSED", got[0].Status)
	}
	if a := s.post(s.key, "", templateSend("ticket_update")); a.Status != http.StatusUnprocessableEntity || a.errorCode() != "template_not_approved" {
		t.Errorf("send of the PAUSED template: %d %v, want 422 template_not_approved", a.Status, a.Body)
	}
	// A listing that starts after the webhook wins: Meta reinstated it.
	if m := s.listed("ticket_update", "en_US"); m == nil || m["status"] != "APPROVED" {
		t.Errorf("a listing newer than the webhook: %v, want APPROVED", m)
	}
}

// TestReengageTemplateNamesTheContact: a reply outside the 24-hour window goes as the tenant's
// templates.reengage, its {{contact_name}} filled with the contact's profile name.
func TestReengageTemplateNamesTheContact(t *testing.T) {
	t.Parallel()
	s := newStack(t, "templates:\n  reengage:\n    name: resume_conversation\n    language: en\n    components:\n"+
		"      - type: body\n        parameters:\n          - {type: text, text: \"Hi {{contact_name}}\"}\n")
	old := time.Now().Add(-25 * time.Hour)
	s.deliver(whatsapp.SampleText(whatsapp.SampleOptions{PhoneNumberID: number, From: contact, ContactName: "Sheena Nelson",
		Timestamp: old, MessageID: whatsapp.NewMessageID()}, "hello, anyone there?"))
	var sends []map[string]any
	testenv.Eventually(t, 60*time.Second, func() bool {
		sends = templateSends(s, "resume_conversation")
		return len(sends) > 0
	}, "the reengage template never reached Graph")
	want := map[string]any{"name": "resume_conversation", "language": map[string]any{"code": "en"},
		"components": []any{map[string]any{"type": "body", "parameters": []any{map[string]any{"type": "text", "text": "Hi Sheena Nelson"}}}}}
	if diff := cmp.Diff(want, sends[0]["template"]); diff != "" {
		t.Errorf("the reengage template Graph received (-want +got):\n%s", diff)
	}
}

// consolePage GETs a console page from loopback, as an operator in dev.
func consolePage(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, b)
	}
	return string(b)
}

// TestTemplatesAcrossAccounts: a tenant whose numbers are in two WhatsApp Business Accounts
// lists the templates of both; a creation must then name its account (waba_id), and goes there.
func TestTemplatesAcrossAccounts(t *testing.T) {
	t.Parallel()
	const second = "300000000000002"
	s := newStack(t, "  - {phone_number_id: \"200000000000102\", waba_id: \""+second+"\"}\n")
	s.Graph.PutTemplate(graphfake.Template{WABAID: waba, Name: "first_one", Language: "en_US", Status: "APPROVED", Category: "UTILITY"})
	s.Graph.PutTemplate(graphfake.Template{WABAID: second, Name: "second_one", Language: "id", Status: "PAUSED", Category: "MARKETING"})
	if m := s.listed("first_one", "en_US"); m == nil || m["status"] != "APPROVED" {
		t.Errorf("first account's template: %v", m)
	}
	if m := s.listed("second_one", "id"); m == nil || m["status"] != "PAUSED" {
		t.Errorf("second account's template: %v", m)
	}
	a := s.templateCall(http.MethodPost, "/v1/templates", orderReadyBody)
	if a.Status != http.StatusBadRequest || a.errorCode() != "invalid_request" {
		t.Errorf("creation without waba_id: %d %v, want 400 invalid_request", a.Status, a.Body)
	}
	withWABA := strings.Replace(orderReadyBody, `"category"`, `"waba_id":"`+second+`","category"`, 1)
	if a := s.templateCall(http.MethodPost, "/v1/templates", withWABA); a.Status != http.StatusCreated {
		t.Fatalf("creation with waba_id: %d %v", a.Status, a.Body)
	}
	for _, tpl := range s.Graph.Templates() {
		if tpl.Name == "order_ready" && tpl.WABAID != second {
			t.Errorf("order_ready was created in %s, want %s", tpl.WABAID, second)
		}
	}
	for _, r := range s.Graph.Requests() {
		if r.Kind == graphfake.KindTemplate && r.Method == http.MethodPost && strings.Contains(string(r.RawBody), "waba_id") {
			t.Errorf("Meta received waba_id in the creation body: %s", r.RawBody)
		}
	}
}

// TestSharedAccountTemplatesDeletedOnlyByTheirCreator: two tenants share a number, hence its
// WhatsApp Business Account and the account's templates. Each lists them all, but a tenant may
// delete only a template it created through wapipe: the other tenant's, and one created
// elsewhere (WhatsApp Manager), are refused with 403 forbidden and stay at Meta.
func TestSharedAccountTemplatesDeletedOnlyByTheirCreator(t *testing.T) {
	t.Parallel()
	const sharedNumber, baliToken = "200000000000103", "EAAG-bali-token"
	s := newStack(t, "  - {phone_number_id: \""+sharedNumber+"\", waba_id: \""+waba+"\", shared: true}\n")
	ctx := context.Background()
	bali := "id: bali\nname: Bali\nlanguage: en\naudience: public\nphone_numbers:\n  - {phone_number_id: \"" + sharedNumber + "\", waba_id: \"" + waba + "\", shared: true}\n"
	baliKey := s.addTenant(ctx, "bali", bali, baliToken)
	del := func(key, name string) answer {
		t.Helper()
		req, _ := http.NewRequest(http.MethodDelete, s.APIURL+"/v1/templates/"+name, nil)
		req.Header.Set("Authorization", "Bearer "+key)
		return s.do(req)
	}
	atMeta := func(name string) bool {
		for _, tpl := range s.Graph.Templates() {
			if tpl.Name == name && tpl.WABAID == waba {
				return true
			}
		}
		return false
	}
	if a := s.templateCall(http.MethodPost, "/v1/templates", orderReadyBody); a.Status != http.StatusCreated {
		t.Fatalf("acme creates order_ready: %d %v", a.Status, a.Body)
	}
	s.Graph.PutTemplate(graphfake.Template{WABAID: waba, Name: "made_elsewhere", Language: "en_US", Status: "APPROVED", Category: "UTILITY"})
	// A listing in between rewrites the records from Meta's answer: who created it is kept.
	if s.listed("order_ready", "en_US") == nil || s.listed("made_elsewhere", "en_US") == nil {
		t.Fatal("the shared account's templates are not all listed")
	}

	for _, tc := range []struct{ who, key, name string }{
		{"bali, acme's template", baliKey, "order_ready"},
		{"acme, a template made in WhatsApp Manager", s.key, "made_elsewhere"},
		{"bali, a template made in WhatsApp Manager", baliKey, "made_elsewhere"},
	} {
		if a := del(tc.key, tc.name); a.Status != http.StatusForbidden || a.errorCode() != "forbidden" {
			t.Errorf("%s: %d %v, want 403 forbidden", tc.who, a.Status, a.Body)
		}
		if !atMeta(tc.name) {
			t.Errorf("%s: the template was deleted at Meta", tc.who)
		}
	}
	if a := del(s.key, "order_ready"); a.Status != http.StatusOK {
		t.Errorf("acme deletes its own order_ready: %d %v, want 200", a.Status, a.Body)
	}
	if atMeta("order_ready") {
		t.Error("order_ready is still at Meta after its creator deleted it")
	}
}

// TestRefusedTokenOnATemplateCallMarksTheTenant: a token Meta refuses on a template call (as on
// a send) marks the tenant needs_reauth at once, logged once at ERROR, and the business's next
// send is refused with 409 WHATSAPP_REAUTH_REQUIRED, as after a refused send; a new token makes
// it ok again.
func TestRefusedTokenOnATemplateCallMarksTheTenant(t *testing.T) {
	t.Parallel()
	s := newStack(t, "")
	ctx := context.Background()
	s.Graph.RevokeToken(token)
	if a := s.templateCall(http.MethodGet, "/v1/templates", ""); a.Status != http.StatusConflict || a.errorCode() != "WHATSAPP_REAUTH_REQUIRED" {
		t.Fatalf("GET /v1/templates with a refused token: %d %v, want 409 WHATSAPP_REAUTH_REQUIRED", a.Status, a.Body)
	}
	rec, err := store.NewTenants(s.db, store.Options{}).Get(ctx, "acme")
	if err != nil || rec.AuthStatus != store.AuthNeedsReauth {
		t.Fatalf("tenant auth_status %q (%v), want needs_reauth as soon as the call is answered", rec.AuthStatus, err)
	}
	if a := s.templateCall(http.MethodGet, "/v1/templates", ""); a.Status != http.StatusConflict {
		t.Errorf("second GET: %d, want 409", a.Status)
	}
	if n := strings.Count(s.logs.String(), `"event":"tenant_needs_reauth"`); n != 1 {
		t.Errorf("%d tenant_needs_reauth lines, want 1 (the first refusal marks, the rest find it marked)", n)
	}
	s.openWindow(contact, time.Now().Add(-time.Hour))
	if a := s.post(s.key, "", textBody); a.Status != http.StatusConflict || a.errorCode() != "WHATSAPP_REAUTH_REQUIRED" {
		t.Errorf("POST /v1/messages after the refusal: %d %v, want 409 WHATSAPP_REAUTH_REQUIRED", a.Status, a.Body)
	}
	const fresh = "EAAG-fresh-token"
	s.Graph.AcceptToken(fresh)
	if _, _, err := s.creds.SetToken(ctx, "acme", fresh, false); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 30*time.Second, func() bool {
		return s.templateCall(http.MethodGet, "/v1/templates", "").Status == http.StatusOK
	}, "template calls never worked again with the new token")
}

// TestSharedAccountTemplateAttacks is the red team's attack on templates, as tenant bali, which
// shares a number and so its WhatsApp Business Account with acme, and has an account of its own:
// bali cannot plant a twin of acme's template in another language (409 template_name_taken, and
// nothing reaches Meta), nor delete acme's template by naming the shared account after creating
// the same name in its own account (403, acme's stays at Meta and in acme's records), nor list,
// record or send acme's template (403, nothing reaches Graph) until acme's file shares it
// (templates.common); acme's own delete takes its own language by Meta's id and leaves a
// language made elsewhere.
func TestSharedAccountTemplateAttacks(t *testing.T) {
	t.Parallel()
	const sharedNumber, baliNumber, baliWABA, baliToken = "200000000000103", "200000000000104", "300000000000002", "EAAG-bali-token"
	s := newStack(t, "  - {phone_number_id: \""+sharedNumber+"\", waba_id: \""+waba+"\", shared: true}\n")
	ctx := context.Background()
	bali := "id: bali\nname: Bali\nlanguage: en\naudience: public\nphone_numbers:\n" +
		"  - {phone_number_id: \"" + sharedNumber + "\", waba_id: \"" + waba + "\", shared: true}\n" +
		"  - {phone_number_id: \"" + baliNumber + "\", waba_id: \"" + baliWABA + "\"}\n"
	baliKey := s.addTenant(ctx, "bali", bali, baliToken)
	call := func(key, method, path, body string) answer {
		t.Helper()
		req, _ := http.NewRequest(method, s.APIURL+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		return s.do(req)
	}
	atMeta := func(account, language string) int {
		n := 0
		for _, tpl := range s.Graph.Templates() {
			if tpl.Name == "order_ready" && tpl.WABAID == account && (language == "" || tpl.Language == language) {
				n++
			}
		}
		return n
	}
	if a := s.templateCall(http.MethodPost, "/v1/templates", orderReadyBody); a.Status != http.StatusCreated {
		t.Fatalf("acme creates order_ready: %d %v", a.Status, a.Body)
	}

	// A twin in French on the shared account.
	twin := strings.Replace(strings.Replace(orderReadyBody, `"en_US"`, `"fr"`, 1), `"category"`, `"waba_id":"`+waba+`","category"`, 1)
	if a := call(baliKey, http.MethodPost, "/v1/templates", twin); a.Status != http.StatusConflict || a.errorCode() != "template_name_taken" {
		t.Errorf("bali plants order_ready/fr on the shared account: %d %v, want 409 template_name_taken", a.Status, a.Body)
	}
	if n := atMeta(waba, "fr"); n != 0 {
		t.Errorf("the twin reached Meta: %d order_ready/fr on the shared account", n)
	}

	// The same name in bali's own account is bali's to make, and gives it no right over acme's.
	own := strings.Replace(orderReadyBody, `"category"`, `"waba_id":"`+baliWABA+`","category"`, 1)
	if a := call(baliKey, http.MethodPost, "/v1/templates", own); a.Status != http.StatusCreated {
		t.Fatalf("bali creates order_ready in its own account: %d %v", a.Status, a.Body)
	}
	if a := call(baliKey, http.MethodDelete, "/v1/templates/order_ready?waba_id="+waba, ""); a.Status != http.StatusForbidden || a.errorCode() != "forbidden" {
		t.Errorf("bali deletes order_ready on the shared account: %d %v, want 403 forbidden", a.Status, a.Body)
	}
	if n := atMeta(waba, "en_US"); n != 1 {
		t.Fatalf("acme's order_ready/en_US: %d at Meta after bali's delete, want 1", n)
	}
	if got, err := store.NewTemplates(s.db, store.Options{}).Get(ctx, "acme", "order_ready", "en_US"); err != nil || got.ID == "" {
		t.Errorf("acme's record of order_ready/en_US: %+v (%v), want it kept", got, err)
	}

	// bali neither lists nor sends acme's template, until acme's file shares it.
	// bali's listing holds its own order_ready (its own account); acme's is a second one.
	listedFor := func(key string) int {
		t.Helper()
		a := call(key, http.MethodGet, "/v1/templates", "")
		if a.Status != http.StatusOK {
			t.Fatalf("GET /v1/templates: %d %v", a.Status, a.Body)
		}
		data, _ := a.Body["data"].([]any)
		n := 0
		for _, d := range data {
			if m, _ := d.(map[string]any); m["name"] == "order_ready" {
				n++
			}
		}
		return n
	}
	sendBody := `{"phone_number_id":"` + sharedNumber + `","to":"` + contact + `","type":"template","template":{"name":"order_ready","language":{"code":"en_US"},
		"components":[{"type":"body","parameters":[{"type":"text","text":"Ana"},{"type":"text","text":"A-12"}]}]}}`
	sendsBefore := len(s.Graph.Sends())
	if n := listedFor(baliKey); n != 1 {
		t.Errorf("bali lists %d order_ready, want its own only", n)
	}
	if a := call(baliKey, http.MethodPost, "/v1/messages", sendBody); a.Status != http.StatusForbidden || a.errorCode() != "forbidden" {
		t.Errorf("bali sends acme's order_ready: %d %v, want 403 forbidden", a.Status, a.Body)
	}
	if n := len(s.Graph.Sends()) - sendsBefore; n != 0 {
		t.Errorf("%d sends reached Graph after bali's refused send", n)
	}
	if got, err := store.NewTemplates(s.db, store.Options{}).Get(ctx, "bali", "order_ready", "en_US"); err == nil && got.WABAID == waba {
		t.Errorf("acme's order_ready is recorded under bali: %+v", got)
	}
	acmeFile := fmt.Sprintf("id: acme\nname: Acme\nlanguage: en\naudience: public\nphone_numbers:\n  - {phone_number_id: %q, waba_id: \"300000000000001\"}\n"+
		"  - {phone_number_id: %q, waba_id: %q, shared: true}\ntemplates:\n  common: [order_ready]\n", number, sharedNumber, waba)
	if _, err := s.creds.Tenants.Apply(ctx, []byte(acmeFile), false); err != nil {
		t.Fatalf("acme shares order_ready: %v", err)
	}
	// Meta approves both order_ready; bali's next listing records them approved.
	for _, tpl := range s.Graph.Templates() {
		if tpl.Name == "order_ready" {
			tpl.Status = "APPROVED"
			s.Graph.PutTemplate(tpl)
		}
	}
	if n := listedFor(baliKey); n != 2 {
		t.Errorf("bali lists %d order_ready once acme shares it (templates.common), want 2", n)
	}
	if a := call(baliKey, http.MethodPost, "/v1/messages", sendBody); a.Status != http.StatusAccepted {
		t.Errorf("bali sends the shared order_ready: %d %v, want 202", a.Status, a.Body)
	}

	// acme deletes its own: by Meta's id, its language alone.
	s.Graph.PutTemplate(graphfake.Template{WABAID: waba, Name: "order_ready", Language: "es", Status: "APPROVED", Category: "UTILITY"})
	if a := s.templateCall(http.MethodDelete, "/v1/templates/order_ready", ""); a.Status != http.StatusOK {
		t.Fatalf("acme deletes its order_ready: %d %v", a.Status, a.Body)
	}
	if atMeta(waba, "en_US") != 0 || atMeta(waba, "es") != 1 || atMeta(baliWABA, "") != 1 {
		t.Errorf("after acme's delete: en_US %d, es (made elsewhere) %d, bali's own %d; want 0, 1, 1",
			atMeta(waba, "en_US"), atMeta(waba, "es"), atMeta(baliWABA, ""))
	}
	for _, r := range s.Graph.Requests() {
		if r.Kind == graphfake.KindTemplate && r.Method == http.MethodDelete && strings.Contains(r.Path, waba) && !strings.Contains(r.Query, "hsm_id=") {
			t.Errorf("a delete on the shared account by name alone: %s?%s", r.Path, r.Query)
		}
	}
}

// addTenant applies the tenant file file as id, gives it token (accepted by the fake Graph API)
// and returns an API key of it.
func (s *stack) addTenant(ctx context.Context, id, file, token string) string {
	s.t.Helper()
	if _, err := s.creds.Tenants.Apply(ctx, []byte(file), false); err != nil {
		s.t.Fatalf("apply %s: %v", id, err)
	}
	if _, _, err := s.creds.SetToken(ctx, id, token, false); err != nil {
		s.t.Fatal(err)
	}
	s.Graph.AcceptToken(token)
	key, err := s.creds.APIKey(ctx, id)
	if err != nil {
		s.t.Fatal(err)
	}
	return key
}

// TestSharedAccountTemplateShare: on an account shared with other tenants, whose template limit
// at Meta they share, a tenant creates at most its templates.max_created; past it, 403 and
// nothing reaches Meta. A private account has no such cap.
func TestSharedAccountTemplateShare(t *testing.T) {
	t.Parallel()
	const sharedNumber = "200000000000105"
	s := newStack(t, "  - {phone_number_id: \""+sharedNumber+"\", waba_id: \""+waba+"\", shared: true}\ntemplates:\n  max_created: 1\n")
	create := func(name string) answer {
		t.Helper()
		return s.templateCall(http.MethodPost, "/v1/templates", strings.Replace(orderReadyBody, `"order_ready"`, `"`+name+`"`, 1))
	}
	if a := create("first_one"); a.Status != http.StatusCreated {
		t.Fatalf("the first template: %d %v", a.Status, a.Body)
	}
	before := len(s.Graph.Templates())
	if a := create("second_one"); a.Status != http.StatusForbidden || a.errorCode() != "forbidden" {
		t.Errorf("a second template past max_created 1: %d %v, want 403 forbidden", a.Status, a.Body)
	}
	if n := len(s.Graph.Templates()); n != before {
		t.Errorf("%d templates at Meta after the refused creation, want %d", n, before)
	}
}
