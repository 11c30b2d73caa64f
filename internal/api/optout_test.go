package api_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	wacontact "github.com/wapipe/wapipe/internal/contact"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/testenv"
)

// TestMarketingTemplateToAnOptedOutContact: with the contact's "stop" recorded (as
// events.Apply records a user_preferences change) and the templates' categories recorded (as it
// records the template webhooks), the real api refuses a MARKETING template to it with 422 contact_opted_out and sends
// nothing, while a UTILITY template still goes; a resume lifts the refusal.
func TestMarketingTemplateToAnOptedOutContact(t *testing.T) {
	t.Parallel()
	s := newStack(t, "")
	ctx := context.Background()
	prefs := store.NewContactPrefs(s.db, store.Options{})
	s.Graph.AddTemplate("spring_sale")
	s.Graph.AddTemplate("ticket_update")
	// The categories the template webhooks recorded.
	for name, category := range map[string]string{"spring_sale": "MARKETING", "ticket_update": "UTILITY"} {
		if err := prefs.RecordTemplate(ctx, store.Template{TenantID: "acme", Name: name, Language: "en_US", Status: "APPROVED", Category: category}); err != nil {
			t.Fatal(err)
		}
	}
	template := func(name string) string {
		return `{"to":"` + contact + `","type":"template","template":{"name":"` + name + `","language":{"code":"en_US"}}}`
	}
	// The contact whose "stop" events.Apply recorded, as the worker resolves it.
	res, err := store.NewContacts(s.db, store.Options{}).Resolve(ctx, "acme", wacontact.Identity{WaID: contact})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := prefs.SetMarketing(ctx, "acme", res.Contact, true, time.Now().Unix()); err != nil {
		t.Fatal(err)
	}

	a := s.post(s.key, "optout-1", template("spring_sale"))
	if a.Status != http.StatusUnprocessableEntity || a.errorCode() != "contact_opted_out" {
		t.Fatalf("MARKETING template to a stopped contact: %d %v, want 422 contact_opted_out", a.Status, a.Body)
	}
	u := s.post(s.key, "", template("ticket_update"))
	if u.Status != http.StatusAccepted {
		t.Fatalf("UTILITY template to a stopped contact: %d %v, want 202", u.Status, u.Body)
	}
	testenv.Eventually(t, 30*time.Second, func() bool { return len(templateSends(s, "ticket_update")) == 1 },
		"the UTILITY template never reached Graph")
	if n := len(s.sendsWithKey("optout-1")); n != 0 {
		t.Errorf("the refused template reached Graph %d times", n)
	}
	if n := len(templateSends(s, "spring_sale")); n != 0 {
		t.Errorf("Graph received the refused template %d times", n)
	}
	// A template wapipe has no category for is sent: Meta decides.
	if a := s.post(s.key, "", template("hello_world")); a.Status != http.StatusAccepted {
		t.Errorf("uncategorised template: %d %v, want 202", a.Status, a.Body)
	}
	if _, err := prefs.SetMarketing(ctx, "acme", res.Contact, false, time.Now().Unix()+1); err != nil {
		t.Fatal(err)
	}
	if a := s.post(s.key, "", template("spring_sale")); a.Status != http.StatusAccepted {
		t.Errorf("MARKETING template after resume: %d %v, want 202", a.Status, a.Body)
	}
}

// templateSends are the sends of template name the fake Graph API received.
func templateSends(s *stack, name string) []map[string]any {
	var out []map[string]any
	for _, r := range s.Graph.Sends() {
		if tpl, _ := r.Body["template"].(map[string]any); tpl["name"] == name {
			out = append(out, r.Body)
		}
	}
	return out
}
