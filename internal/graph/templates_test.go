package graph_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/wapipe/wapipe/internal/graph"
	"github.com/wapipe/wapipe/internal/graph/graphfake"
	"github.com/wapipe/wapipe/internal/whatsapp"
)

// TestTemplateCallsAgainstTheFake: a listing follows every page in order; a creation is
// PENDING; Meta's refusals are Permanent errors with Meta's message and never the token; a wrong
// token is an Auth error; a deletion removes the template in every language.
func TestTemplateCallsAgainstTheFake(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const tok = "EAAsecret-template-token"
	f := graphfake.New(graphfake.WithToken(tok))
	f.SetTemplatePageSize(2)
	srv := f.NewTestServer()
	t.Cleanup(srv.Close)
	gc, err := graph.NewClient(srv.URL+"/"+graph.Version, tok, nil)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for i := range 5 {
		name := fmt.Sprintf("tpl_%d", i)
		want = append(want, name)
		body := `{"name":"` + name + `","language":"en_US","category":"UTILITY","components":[{"type":"BODY","text":"Hi"}]}`
		created, err := gc.CreateTemplate(ctx, "900", json.RawMessage(body))
		if err != nil || created.Status != "PENDING" || created.ID == "" || created.Category != "UTILITY" {
			t.Fatalf("create %s: %+v %v, want an id, PENDING, UTILITY", name, created, err)
		}
	}
	f.PutTemplate(graphfake.Template{WABAID: "901", Name: "elsewhere", Language: "en_US", Status: "APPROVED"})
	list, err := gc.ListTemplates(ctx, "900")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, tpl := range list {
		got = append(got, tpl.Name)
		if tpl.Status != "PENDING" || tpl.Language != "en_US" || !strings.Contains(string(tpl.Components), `"BODY"`) {
			t.Errorf("listed %+v, want PENDING en_US with its components", tpl)
		}
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("listing over pages of 2: %v, want %v", got, want)
	}
	pages := 0
	for _, r := range f.Requests() {
		if r.Kind == graphfake.KindTemplate && r.Method == http.MethodGet {
			pages++
		}
	}
	if pages != 3 {
		t.Errorf("the listing took %d pages, want 3", pages)
	}

	_, err = gc.CreateTemplate(ctx, "900", json.RawMessage(`{"name":"tpl_0","language":"en_US","category":"UTILITY","components":[{"type":"BODY","text":"Hi"}]}`))
	var ge *graph.Error
	if !errors.As(err, &ge) || ge.Kind != graph.Permanent || !strings.Contains(ge.Message, "already exists") || strings.Contains(err.Error(), tok) {
		t.Errorf("duplicate: %v, want a Permanent error with Meta's message and no token", err)
	}
	if _, err := gc.WithToken("wrong").ListTemplates(ctx, "900"); graph.Classify(err) != graph.Auth {
		t.Errorf("wrong token: %v, want an Auth error", err)
	}
	if err := gc.DeleteTemplate(ctx, "900", "tpl_1"); err != nil {
		t.Fatal(err)
	}
	if err := gc.DeleteTemplate(ctx, "900", "tpl_1"); graph.Classify(err) != graph.Permanent {
		t.Errorf("second delete: %v, want Permanent (no such template)", err)
	}
	if list, _ := gc.ListTemplates(ctx, "900"); len(list) != 4 {
		t.Errorf("after the delete %d templates, want 4", len(list))
	}
}

// TestTemplateStatusWebhookAndSendRules: SetTemplateStatus posts Meta's signed
// message_template_status_update to the webhook URL, and a template the fake holds is sent only
// once APPROVED (PENDING 132001, PAUSED 132015).
func TestTemplateStatusWebhookAndSendRules(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const secret = "app-secret"
	var mu sync.Mutex
	var hooks []*whatsapp.Payload
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if !whatsapp.VerifySignature(r.Header.Get(whatsapp.SignatureHeader), body, secret) {
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		var p whatsapp.Payload
		_ = json.Unmarshal(body, &p)
		mu.Lock()
		hooks = append(hooks, &p)
		mu.Unlock()
	}))
	t.Cleanup(hook.Close)
	f := graphfake.New()
	f.SetWebhook(hook.URL, secret)
	srv := f.NewTestServer()
	t.Cleanup(srv.Close)
	gc, _ := graph.NewClient(srv.URL, "any", nil)
	if _, err := gc.CreateTemplate(ctx, "900", json.RawMessage(`{"name":"ready","language":"en_US","category":"UTILITY","components":[{"type":"BODY","text":"Hi"}]}`)); err != nil {
		t.Fatal(err)
	}
	send := func() int {
		_, err := gc.SendTemplate(ctx, "111", "33612345678", graph.Template{Name: "ready", Language: graph.Language{Code: "en_US"}}, graph.SendOptions{})
		var ge *graph.Error
		if errors.As(err, &ge) {
			return ge.Code
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0
	}
	if code := send(); code != 132001 {
		t.Errorf("send of a PENDING template: code %d, want 132001", code)
	}
	for _, tc := range []struct {
		status string
		code   int
	}{{"APPROVED", 0}, {"PAUSED", 132015}, {"DISABLED", 132016}} {
		if err := f.SetTemplateStatus(ctx, "ready", "en_US", tc.status, ""); err != nil {
			t.Fatal(err)
		}
		if code := send(); code != tc.code {
			t.Errorf("send of a %s template: code %d, want %d", tc.status, code, tc.code)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(hooks) != 3 {
		t.Fatalf("%d webhooks, want 3", len(hooks))
	}
	evs := whatsapp.Events(hooks[0])
	if len(evs) != 1 || evs[0].WABAID != "900" || evs[0].Template == nil || evs[0].Template.Name != "ready" ||
		evs[0].Template.Status != "APPROVED" || evs[0].Template.Language != "en_US" {
		t.Errorf("first webhook: %+v, want ready en_US APPROVED in 900", evs)
	}
	if err := f.SetTemplateStatus(ctx, "nope", "", "APPROVED", ""); err == nil {
		t.Error("SetTemplateStatus of an unknown template succeeded")
	}
}
