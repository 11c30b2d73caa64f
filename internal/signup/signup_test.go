package signup_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/wapipe/wapipe/internal/devstack"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/tenant"
	"github.com/wapipe/wapipe/tasks"
)

// The accounts of the signup tests: acme's own (wabaAcme, holding number), a second account of
// acme's admin (wabaExtra), an attacker's, and another business's.
const (
	wabaAcme       = "300000000000001"
	numberAcme2    = "200000000000102"
	wabaExtra      = "300000000000002"
	numberExtra    = "200000000000201"
	wabaAttacker   = "900000000000001"
	numberAttacker = "900000000000011"
)

// link returns a fresh connect link of tenant id.
func (s *stack) link(id string) string {
	s.t.Helper()
	link, exp, err := s.creds.ConnectLink(context.Background(), id)
	if err != nil || !strings.HasPrefix(link, s.APIURL+"/integrations/meta/whatsapp/connect?state=") || time.Until(exp) > time.Hour {
		s.t.Fatalf("link %q until %v: %v", link, exp, err)
	}
	return link
}

func (s *stack) tenant(id string) store.TenantRecord {
	s.t.Helper()
	rec, err := store.NewTenants(s.db, store.Options{}).Get(context.Background(), id)
	if err != nil {
		s.t.Fatal(err)
	}
	return rec
}

// secretsOf are the bearer values of a signup run: the link's state, and the dialog's state and
// code from the callback URL.
func secretsOf(link, callback string) []string {
	out := []string{link[strings.Index(link, "state=")+len("state="):]}
	if u, err := url.Parse(callback); err == nil && callback != "" {
		out = append(out, u.Query().Get("state"), u.Query().Get("code"))
	}
	return out
}

// noSecretsInLogs fails when a log line of the stack holds one of secrets.
func (s *stack) noSecretsInLogs(secrets []string) {
	s.t.Helper()
	logs := s.logs.String()
	for _, v := range secrets {
		if v != "" && strings.Contains(logs, v) {
			s.t.Errorf("a log line holds a state or code (%.12s…)", v)
		}
	}
}

// TestEmbeddedSignupRoundTrip: connect link → the page (harmless to open) → its button → Meta's
// dialog (the fake) → callback: the token is stored, the app subscribed, the numbers of the
// tenant's account registered, and the sends parked while the tenant needed a new token go out
// with it. The link then refuses a second use; no state or code reaches a log line.
func TestEmbeddedSignupRoundTrip(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	ctx := context.Background()
	s.Graph.SetSignupAccount(wabaAcme, number, numberAcme2)
	before := s.tenant("acme")
	// A send parked after the token was refused.
	sends := store.NewSends(s.db, store.Options{})
	key := tasks.SendKey("msg_" + strings.Repeat("7", 32))
	if _, err := sends.Park(ctx, store.ParkRequest{Seed: store.OutboundRecord{IdempotencyKey: key, TenantID: "acme", Source: store.SourceAPI,
		PhoneNumberID: number, To: contact, Message: `{"type":"template","template":{"name":"hello_world","language":{"code":"en"}}}`},
		AuthError: "code 190", TokenSetAt: before.TokenSetAt}); err != nil {
		t.Fatal(err)
	}
	link := s.link("acme")
	b := devstack.NewBrowser()
	for range 2 { // opening the page twice spends nothing
		status, page, err := b.Get(link)
		if err != nil || status != http.StatusOK || !strings.Contains(page, "Acme") || !strings.Contains(page, "…0101") ||
			!strings.Contains(page, `<form method="post"`) || strings.Contains(page, number) {
			t.Fatalf("connect page: %d %v\n%s", status, err, page)
		}
	}
	if n := s.Graph.SubscribeCalls(); n != 0 {
		t.Fatalf("opening the page made %d subscribed_apps calls", n)
	}
	status, page, err := b.Connect(link)
	if err != nil || status != http.StatusOK || !strings.Contains(page, "connected") || !strings.Contains(page, "…0102") {
		t.Fatalf("callback: %d %v %s", status, err, page)
	}
	after := s.tenant("acme")
	if after.AuthStatus != store.AuthOK || !after.TokenSetAt.After(before.TokenSetAt) || !after.Tenant.OwnsNumber(numberAcme2) {
		t.Fatalf("tenant after signup: %+v", after)
	}
	if owner, err := store.NewTenants(s.db, store.Options{}).GetByPhoneNumber(ctx, numberAcme2); err != nil || owner.Tenant.ID != "acme" {
		t.Fatalf("the new number does not route to the tenant: %v", err)
	}
	if !s.Graph.Subscribed(wabaAcme) {
		t.Fatal("app not subscribed")
	}
	s.waitStatus("msg_"+strings.Repeat("7", 32), "sent")
	if sent := s.sendsWithKey(key); len(sent) != 1 || sent[0].Token == token {
		t.Fatalf("parked send went out %d times, want once with the new token", len(sent))
	}
	status, page, _ = b.Get(b.Callback)
	if status != http.StatusForbidden && status != http.StatusBadRequest {
		t.Fatalf("second use of the callback: %d %s", status, page)
	}
	status, page, _ = devstack.NewBrowser().Connect(link)
	if status != http.StatusBadRequest || !strings.Contains(page, "already used") {
		t.Fatalf("second use of the link: %d %s", status, page)
	}
	if again := s.tenant("acme"); !again.TokenSetAt.Equal(after.TokenSetAt) {
		t.Fatal("a reused link changed the token")
	}
	s.noSecretsInLogs(secretsOf(link, b.Callback))
}

// TestEmbeddedSignupRefusesForeignAccounts is issue 21's attacks on the connect link: a login
// that does not share every account the tenant has is refused before any change (no number, no
// token, no subscription, no grant), and the page names nothing of another business.
func TestEmbeddedSignupRefusesForeignAccounts(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		// tenant is the link's tenant: acme (its file in newStack) or evil, applied here.
		tenant string
		grant  []string
	}{
		// (a) a leaked link of acme opened by someone whose login grants only their own account.
		{"leaked link opened by an attacker", "acme", []string{wabaAttacker}},
		// (b) evil forwards its own link to another business (the attacker's account here is that
		// business's): its login grants its account, not evil's.
		{"tenant's link forwarded to another business", "evil", []string{wabaAttacker}},
		// A login granting the tenant's account partly is refused too.
		{"login granting one of two accounts", "evil", []string{"500000000000001"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s := newStack(t)
			ctx := context.Background()
			tenants := store.NewTenants(s.db, store.Options{})
			if c.tenant == "evil" {
				if _, err := tenants.Apply(ctx, &tenant.Tenant{ID: "evil", Name: "Evil", Language: "en", Audience: "public",
					PhoneNumbers: []tenant.PhoneNumber{{PhoneNumberID: "500000000000011", WABAID: "500000000000001"}, {PhoneNumberID: "500000000000021", WABAID: "500000000000002"}}}, false); err != nil {
					t.Fatal(err)
				}
				if _, _, err := s.creds.SetToken(ctx, "evil", "evil-token", false); err != nil {
					t.Fatal(err)
				}
			}
			s.Graph.AddSignupAccount(wabaAttacker, numberAttacker)
			s.Graph.AddSignupAccount("500000000000001", "500000000000011")
			s.Graph.SetSignupGrant(c.grant...)
			before := s.tenant(c.tenant)
			link := s.link(c.tenant)
			b := devstack.NewBrowser()
			status, page, err := b.Connect(link)
			if err != nil || status != http.StatusForbidden || !strings.Contains(page, "does not share") || !strings.Contains(page, "Nothing was changed") {
				t.Fatalf("callback: %d %v %s", status, err, page)
			}
			if strings.Contains(page, numberAttacker) || strings.Contains(page, "acme") && c.tenant != "acme" {
				t.Errorf("the refusal names another business's data: %s", page)
			}
			after := s.tenant(c.tenant)
			if !bytes.Equal(after.AccessToken, before.AccessToken) || !after.TokenSetAt.Equal(before.TokenSetAt) ||
				len(after.Tenant.PhoneNumbers) != len(before.Tenant.PhoneNumbers) || after.Version != before.Version || !after.UpdatedAt.Equal(before.UpdatedAt) {
				t.Errorf("a refused login changed the tenant:\nbefore %+v\nafter  %+v", before, after)
			}
			if n := s.Graph.SubscribeCalls(); n != 0 {
				t.Errorf("a refused login made %d subscribed_apps calls", n)
			}
			if _, err := tenants.GetByPhoneNumber(ctx, numberAttacker); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("the attacker's number routes somewhere: %v", err)
			}
			if gs, err := tenants.PendingWABAGrants(ctx, c.tenant); err != nil || len(gs) != 0 {
				t.Errorf("a refused login recorded grants: %v %v", gs, err)
			}
			if !s.logs.Has("signup_refused") {
				t.Error("no signup_refused log line")
			}
			s.noSecretsInLogs(secretsOf(link, b.Callback))
		})
	}
}

// TestEmbeddedSignupExtraAccountAwaitsApproval (c): a login sharing the tenant's account and
// another gives the tenant its token, subscribes the tenant's account only, and records the other
// as awaiting approval without attaching its numbers.
func TestEmbeddedSignupExtraAccountAwaitsApproval(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	ctx := context.Background()
	tenants := store.NewTenants(s.db, store.Options{})
	s.Graph.AddSignupAccount(wabaAcme, number)
	s.Graph.AddSignupAccount(wabaExtra, numberExtra)
	s.Graph.SetSignupGrant(wabaAcme, wabaExtra)
	before := s.tenant("acme")
	link := s.link("acme")
	b := devstack.NewBrowser()
	status, page, err := b.Connect(link)
	if err != nil || status != http.StatusOK || !strings.Contains(page, "operator must approve") || !strings.Contains(page, "…0002") {
		t.Fatalf("callback: %d %v %s", status, err, page)
	}
	after := s.tenant("acme")
	if bytes.Equal(after.AccessToken, before.AccessToken) || after.AuthStatus != store.AuthOK {
		t.Error("the token was not replaced")
	}
	if after.Tenant.OwnsNumber(numberExtra) || len(after.Tenant.PhoneNumbers) != 1 {
		t.Errorf("the extra account's number was attached: %+v", after.Tenant.PhoneNumbers)
	}
	if _, err := tenants.GetByPhoneNumber(ctx, numberExtra); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the extra account's number routes somewhere: %v", err)
	}
	if !s.Graph.Subscribed(wabaAcme) || s.Graph.Subscribed(wabaExtra) {
		t.Errorf("subscribed: tenant's %v, extra %v; want only the tenant's", s.Graph.Subscribed(wabaAcme), s.Graph.Subscribed(wabaExtra))
	}
	gs, err := tenants.PendingWABAGrants(ctx, "acme")
	if err != nil || len(gs) != 1 || gs[0].WABAID != wabaExtra || gs[0].Status != store.GrantPending {
		t.Fatalf("pending grants %+v, %v", gs, err)
	}
	s.noSecretsInLogs(secretsOf(link, b.Callback))
}

// TestEmbeddedSignupNewTenantTakesWhatItGrants (d): a tenant with no number yet takes the
// accounts the login shares, and their numbers.
func TestEmbeddedSignupNewTenantTakesWhatItGrants(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	ctx := context.Background()
	tenants := store.NewTenants(s.db, store.Options{})
	if _, err := tenants.Apply(ctx, &tenant.Tenant{ID: "fresh", Name: "Fresh Start", Language: "en", Audience: "public"}, false); err != nil {
		t.Fatal(err)
	}
	s.Graph.SetSignupAccount(wabaExtra, numberExtra)
	link := s.link("fresh")
	b := devstack.NewBrowser()
	status, page, err := b.Get(link)
	if err != nil || status != http.StatusOK || !strings.Contains(page, "Fresh Start") || !strings.Contains(page, "no WhatsApp number yet") {
		t.Fatalf("connect page: %d %v %s", status, err, page)
	}
	status, page, err = b.Press(link, page)
	if err != nil || status != http.StatusOK || !strings.Contains(page, "…0201") {
		t.Fatalf("callback: %d %v %s", status, err, page)
	}
	after := s.tenant("fresh")
	if !after.Tenant.OwnsNumber(numberExtra) || after.AuthStatus != store.AuthOK || !s.Graph.Subscribed(wabaExtra) {
		t.Fatalf("fresh after signup: %+v, subscribed %v", after, s.Graph.Subscribed(wabaExtra))
	}
	s.noSecretsInLogs(secretsOf(link, b.Callback))
}

// TestEmbeddedSignupButtonIsSameOriginAndBrowserBound: the page's button refuses a cross-site
// post and a post without the page's token (neither spends the link), and the callback refuses a
// browser other than the one that pressed the button.
func TestEmbeddedSignupButtonIsSameOriginAndBrowserBound(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	s.Graph.SetSignupAccount(wabaAcme, number)
	before := s.tenant("acme")
	link := s.link("acme")
	state := link[strings.Index(link, "state=")+len("state="):]
	post := func(form url.Values, header map[string]string) int {
		req, _ := http.NewRequest(http.MethodPost, s.APIURL+"/integrations/meta/whatsapp/connect", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	token := strings.Repeat("ab", 32)
	cases := []struct {
		name   string
		header map[string]string
	}{
		{"cross-site post", map[string]string{"Sec-Fetch-Site": "cross-site", "Cookie": "wapipe_connect=" + token}},
		{"foreign origin", map[string]string{"Origin": "https://evil.example", "Cookie": "wapipe_connect=" + token}},
		{"no cookie", nil},
		{"cookie not the form's", map[string]string{"Cookie": "wapipe_connect=" + strings.Repeat("cd", 32)}},
	}
	for _, c := range cases {
		if got := post(url.Values{"link": {state}, "csrf": {token}}, c.header); got != http.StatusForbidden {
			t.Errorf("%s: %d, want 403", c.name, got)
		}
	}
	// The link is still good: the admin's own browser connects with it.
	b := devstack.NewBrowser()
	b.StopAtCallback = true
	if status, page, err := b.Connect(link); err != nil || b.Callback == "" {
		t.Fatalf("the refused posts spent the link: %d %v %s", status, err, page)
	}
	// Another browser with the callback URL (a leaked redirect) is refused and changes nothing.
	status, page, err := devstack.NewBrowser().Get(b.Callback)
	if err != nil || status != http.StatusForbidden || !strings.Contains(page, "another browser") {
		t.Fatalf("callback in another browser: %d %v %s", status, err, page)
	}
	if after := s.tenant("acme"); !bytes.Equal(after.AccessToken, before.AccessToken) || s.Graph.SubscribeCalls() != 0 {
		t.Fatal("a refused callback changed the tenant or subscribed")
	}
	b.StopAtCallback = false
	if status, page, err := b.Get(b.Callback); err != nil || status != http.StatusOK {
		t.Fatalf("the admin's own callback: %d %v %s", status, err, page)
	}
}

func TestEmbeddedSignupRefusesForgedAndExpiredStates(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	ctx := context.Background()
	s.Graph.SetSignupAccount(wabaAcme, number)
	before := s.tenant("acme")
	link := s.link("acme")
	state := link[strings.Index(link, "state=")+len("state="):]
	forged := state[:len(state)-4] + "AAAA"
	s.creds.Now = func() time.Time { return time.Now().Add(-2 * time.Hour) }
	old, _, err := s.creds.ConnectLink(ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}
	s.creds.Now = nil
	// A real dialog state and this browser's cookie, with a code Meta never issued.
	b := devstack.NewBrowser()
	b.StopAtCallback = true
	if _, _, err := b.Connect(s.link("acme")); err != nil || b.Callback == "" {
		t.Fatalf("no callback: %v", err)
	}
	cb, _ := url.Parse(b.Callback)
	q := cb.Query()
	q.Set("code", "made-up")
	cb.RawQuery = q.Encode()
	cases := []struct{ name, url, want string }{
		{"forged state at connect", s.APIURL + "/integrations/meta/whatsapp/connect?state=" + forged, "not valid"},
		{"forged state at callback", s.APIURL + "/integrations/meta/whatsapp/callback?code=x&state=" + forged, "not valid"},
		{"a link's state at callback", s.APIURL + "/integrations/meta/whatsapp/callback?code=x&state=" + state, "not valid"},
		{"no state", s.APIURL + "/integrations/meta/whatsapp/callback?code=x", "not valid"},
		{"expired state at connect", old, "expired"},
		{"code Meta never issued", cb.String(), "Meta refused"},
	}
	for _, c := range cases {
		status, page, err := b.Get(c.url)
		if err != nil || status < 400 || !strings.Contains(page, c.want) || !strings.Contains(page, "Nothing was changed") {
			t.Errorf("%s: %d %v %s", c.name, status, err, page)
		}
	}
	after := s.tenant("acme")
	if !after.TokenSetAt.Equal(before.TokenSetAt) || len(after.Tenant.PhoneNumbers) != 1 || s.Graph.SubscribeCalls() != 0 {
		t.Fatalf("a refused callback changed the tenant: %+v", after)
	}
}
