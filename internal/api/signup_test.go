package api_test

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/wapipe/wapipe/internal/graph/graphfake"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/tasks"
)

// browse follows a link as the admin's browser does, stopping at the api's callback, and
// returns the callback URL (with Meta's code) or the page the link answered.
func (s *stack) browse(link string) (callback string, status int, page string) {
	s.t.Helper()
	c := &http.Client{CheckRedirect: func(req *http.Request, _ []*http.Request) error {
		if strings.Contains(req.URL.Path, "/callback") {
			return http.ErrUseLastResponse
		}
		return nil
	}}
	resp, err := c.Get(link)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode == http.StatusFound {
		return resp.Header.Get("Location"), resp.StatusCode, ""
	}
	return "", resp.StatusCode, string(b)
}

func (s *stack) page(u string) (int, string) {
	s.t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestEmbeddedSignupRoundTrip: connect link → Meta's dialog (the fake) → callback: the token is
// stored, the app subscribed, the numbers registered, and the sends parked while the tenant
// needed a new token go out with it. The link then refuses a second use.
func TestEmbeddedSignupRoundTrip(t *testing.T) {
	t.Parallel()
	s := newStack(t, "")
	ctx := context.Background()
	tenants := store.NewTenants(s.db, store.Options{})
	before, _ := tenants.Get(ctx, "acme")
	// A send parked after the token was refused.
	sends := store.NewSends(s.db, store.Options{})
	key := tasks.SendKey("msg_" + strings.Repeat("7", 32))
	if _, err := sends.Park(ctx, store.ParkRequest{Seed: store.OutboundRecord{IdempotencyKey: key, TenantID: "acme", Source: store.SourceAPI,
		PhoneNumberID: number, To: contact, Message: `{"type":"template","template":{"name":"hello_world","language":{"code":"en"}}}`},
		AuthError: "code 190", TokenSetAt: before.TokenSetAt}); err != nil {
		t.Fatal(err)
	}
	link, exp, err := s.creds.ConnectLink(ctx, "acme")
	if err != nil || !strings.HasPrefix(link, s.APIURL+"/integrations/meta/whatsapp/connect?state=") || time.Until(exp) > time.Hour {
		t.Fatalf("link %q until %v: %v", link, exp, err)
	}
	callback, status, page := s.browse(link)
	if callback == "" {
		t.Fatalf("the link did not lead to the callback: %d %s", status, page)
	}
	status, page = s.page(callback)
	if status != http.StatusOK || !strings.Contains(page, "connected") || !strings.Contains(page, graphfake.DefaultSignupNumber) {
		t.Fatalf("callback: %d %s", status, page)
	}
	after, err := tenants.Get(ctx, "acme")
	if err != nil || after.AuthStatus != store.AuthOK || !after.TokenSetAt.After(before.TokenSetAt) || !after.Tenant.OwnsNumber(graphfake.DefaultSignupNumber) {
		t.Fatalf("tenant after signup: %+v %v", after, err)
	}
	if owner, err := tenants.ByPhoneNumber(ctx, graphfake.DefaultSignupNumber); err != nil || owner.Tenant.ID != "acme" {
		t.Fatalf("the new number does not route to the tenant: %v", err)
	}
	if !s.Graph.Subscribed(graphfake.DefaultSignupWABA) {
		t.Fatal("app not subscribed")
	}
	s.waitStatus("msg_"+strings.Repeat("7", 32), "sent")
	if sent := s.sendsWithKey(key); len(sent) != 1 || sent[0].Token == token {
		t.Fatalf("parked send went out %d times, want once with the new token", len(sent))
	}
	status, page = s.page(callback)
	if status != http.StatusBadRequest || !strings.Contains(page, "already used") {
		t.Fatalf("second use of the link: %d %s", status, page)
	}
	if again, _ := tenants.Get(ctx, "acme"); !again.TokenSetAt.Equal(after.TokenSetAt) {
		t.Fatal("a reused link changed the token")
	}
}

func TestEmbeddedSignupRefusesForgedAndExpiredStates(t *testing.T) {
	t.Parallel()
	s := newStack(t, "")
	ctx := context.Background()
	tenants := store.NewTenants(s.db, store.Options{})
	before, _ := tenants.Get(ctx, "acme")
	link, _, err := s.creds.ConnectLink(ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}
	state := link[strings.Index(link, "state=")+len("state="):]
	forged := state[:len(state)-4] + "AAAA"
	s.creds.Now = func() time.Time { return time.Now().Add(-2 * time.Hour) }
	old, _, err := s.creds.ConnectLink(ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}
	oldState := old[strings.Index(old, "state=")+len("state="):]
	cases := []struct{ name, url, want string }{
		{"forged state at connect", s.APIURL + "/integrations/meta/whatsapp/connect?state=" + forged, "not valid"},
		{"forged state at callback", s.APIURL + "/integrations/meta/whatsapp/callback?code=x&state=" + forged, "not valid"},
		{"no state", s.APIURL + "/integrations/meta/whatsapp/callback?code=x", "not valid"},
		{"expired state at connect", old, "expired"},
		{"expired state at callback", s.APIURL + "/integrations/meta/whatsapp/callback?code=x&state=" + oldState, "expired"},
		{"code Meta never issued", s.APIURL + "/integrations/meta/whatsapp/callback?code=made-up&state=" + url.QueryEscape(state), "Meta refused"},
	}
	for _, c := range cases {
		status, page := s.page(c.url)
		if status < 400 || !strings.Contains(page, c.want) || !strings.Contains(page, "Nothing was changed") {
			t.Errorf("%s: %d %s", c.name, status, page)
		}
	}
	after, _ := tenants.Get(ctx, "acme")
	if !after.TokenSetAt.Equal(before.TokenSetAt) || len(after.Tenant.PhoneNumbers) != 1 {
		t.Fatalf("a refused callback changed the tenant: %+v", after)
	}
}
