package graph_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/wapipe/wapipe/internal/graph"
	"github.com/wapipe/wapipe/internal/graph/graphfake"
)

// TestSignupCallsAgainstTheFake runs the Graph side of Embedded Signup against the fake: the
// dialog's code is exchanged once for a token that debug_token covers the account with, the app
// is subscribed, the numbers are read, the token alone may send from them, and a template the
// account does not have is refused with 132001, a permanent error.
func TestSignupCallsAgainstTheFake(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := graphfake.New(graphfake.WithToken("operator-token"))
	srv := f.NewTestServer()
	t.Cleanup(srv.Close)
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noRedirect.Get(srv.URL + "/dialog/oauth?client_id=app&state=s1&redirect_uri=" + url.QueryEscape("https://api.example/cb"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc, _ := url.Parse(resp.Header.Get("Location"))
	code := loc.Query().Get("code")
	if resp.StatusCode != http.StatusFound || loc.Query().Get("state") != "s1" || code == "" {
		t.Fatalf("dialog answered %d, Location %s", resp.StatusCode, loc)
	}
	c, err := graph.NewClient(srv.URL+"/v24.0", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	token, err := c.ExchangeCode(ctx, "app", "app-secret", "https://api.example/cb", code)
	if err != nil || token == "" {
		t.Fatalf("exchange: %q %v", token, err)
	}
	_, err = c.ExchangeCode(ctx, "app", "app-secret", "https://api.example/cb", code)
	if err == nil || strings.Contains(err.Error(), code) || strings.Contains(err.Error(), "app-secret") {
		t.Fatalf("second exchange of one code: %v (must fail, without the code or secret)", err)
	}
	tc := c.WithToken(token)
	info, err := tc.DebugToken(ctx, token)
	if err != nil || !info.Valid || len(info.GranularScopes) == 0 || len(info.GranularScopes[0].TargetIDs) != 1 {
		t.Fatalf("debug_token: %+v %v", info, err)
	}
	waba := info.GranularScopes[0].TargetIDs[0]
	if err := tc.SubscribeApp(ctx, waba); err != nil || !f.Subscribed(waba) {
		t.Fatalf("subscribe: %v", err)
	}
	nums, err := tc.PhoneNumbers(ctx, waba)
	if err != nil || len(nums) != 1 || nums[0].ID != graphfake.DefaultSignupNumber {
		t.Fatalf("phone numbers: %+v %v", nums, err)
	}
	text := graph.Message{To: "15550001", Type: "text", Text: &graph.Text{Body: "hi"}}
	if _, err := tc.Send(ctx, nums[0].ID, text); err != nil {
		t.Fatalf("send with the number's token: %v", err)
	}
	f.AcceptToken("other-token")
	if _, err := c.WithToken("other-token").Send(ctx, nums[0].ID, text); graph.Classify(err) != graph.Auth {
		t.Fatalf("send with another token: %v, want an auth error", err)
	}
	f.RevokeToken(token)
	if _, err := tc.Send(ctx, nums[0].ID, text); graph.Classify(err) != graph.Auth {
		t.Fatalf("send with the revoked token: %v, want an auth error", err)
	}
	_, err = c.WithToken("operator-token").Send(ctx, "100", graph.Message{To: "15550001", Type: "template", Template: &graph.Template{Name: "nope", Language: graph.Language{Code: "en"}}})
	var ge *graph.Error
	if !errors.As(err, &ge) || ge.Code != 132001 || ge.Kind != graph.Permanent {
		t.Fatalf("unknown template: %v, want permanent 132001", err)
	}
	f.CloseWindow("15550001", true)
	_, err = c.WithToken("operator-token").Send(ctx, "100", text)
	if !errors.As(err, &ge) || ge.Code != 131047 {
		t.Fatalf("closed window: %v, want 131047", err)
	}
}
