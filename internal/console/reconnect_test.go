package console

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
)

// mintedLinks is a LinkMaker that counts the links it makes, by tenant.
type mintedLinks struct {
	mu     sync.Mutex
	minted map[string]int
}

func (m *mintedLinks) ConnectLink(_ context.Context, tenantID string) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.minted[tenantID]++
	return "http://127.0.0.1:9/integrations/meta/whatsapp/connect?state=signed-" + tenantID, nil
}

func (m *mintedLinks) count(tenantID string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.minted[tenantID]
}

// TestReconnectRequestIDReused (issue 21 item 4): every connect link minted has exactly one
// audit entry. A double submit of one form (also concurrent) mints one link; the same request id
// replayed against another tenant, or taken from another action's form, mints none. Against the
// audit collection on the Firestore emulator.
func TestReconnectRequestIDReused(t *testing.T) {
	t.Parallel()
	audit := realAudit(t)
	f := newFixture(t, false)
	links := &mintedLinks{minted: map[string]int{}}
	f.deps.Audit, f.deps.LinkMaker = audit, links
	f.rebuild()
	reconnect := func(tenantID, reqID string) (int, string) {
		rec := f.post(t, "/tenants/"+tenantID+"/reconnect", url.Values{RequestIDField: {reqID}}, f.as(t, "alice@example.com")...)
		return rec.Code, rec.Body.String()
	}

	// A double click: the first shows the link, the second none and says why.
	id := newRequestID()
	if code, body := reconnect("acme-01", id); code != http.StatusOK || !strings.Contains(body, `id="connect-link"`) {
		t.Fatalf("first reconnect = %d without a link:\n%s", code, body)
	}
	code, body := reconnect("acme-01", id)
	if code != http.StatusOK || strings.Contains(body, `id="connect-link"`) || !strings.Contains(body, "handled already") {
		t.Errorf("second submit = %d, want the page without a link and the reason:\n%s", code, body)
	}
	// The same id against another tenant: refused, no link for it.
	if code, body := reconnect("acme-02", id); code != http.StatusConflict || strings.Contains(body, `id="connect-link"`) {
		t.Errorf("request id replayed on another tenant = %d, want 409 without a link:\n%s", code, body)
	}
	// The id of another action's form (a reply) is no Reconnect either.
	replyID := newRequestID()
	if rec := f.post(t, "/conversations/conv_abc/reply", url.Values{RequestIDField: {replyID}, "text": {"hi"}}); rec.Code != http.StatusSeeOther {
		t.Fatalf("reply = %d", rec.Code)
	}
	if code, _ := reconnect("acme-01", replyID); code != http.StatusConflict {
		t.Errorf("a reply's request id on reconnect = %d, want 409", code)
	}
	// Five submits of one form at once: one link.
	burst := newRequestID()
	var wg sync.WaitGroup
	for range 5 {
		wg.Go(func() { reconnect("acme-02", burst) })
	}
	wg.Wait()

	if links.count("acme-01") != 1 || links.count("acme-02") != 1 {
		t.Errorf("links minted = %v, want one per tenant", links.minted)
	}
	entries, err := audit.Recent(context.Background(), 100)
	if err != nil {
		t.Fatal(err)
	}
	audited := map[string]int{}
	for _, e := range entries {
		if e.Action == "reconnect" {
			audited[e.TenantID]++
			if e.Operator != "alice@example.com" {
				t.Errorf("audit entry %+v: operator is not the verified one", e)
			}
		}
	}
	for _, tenantID := range []string{"acme-01", "acme-02"} {
		if audited[tenantID] != links.count(tenantID) {
			t.Errorf("tenant %s: %d links minted, %d audit entries", tenantID, links.count(tenantID), audited[tenantID])
		}
	}
}
