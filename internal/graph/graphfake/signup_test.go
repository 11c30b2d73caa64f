package graphfake_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/wapipe/wapipe/internal/graph"
	"github.com/wapipe/wapipe/internal/graph/graphfake"
)

// TestSignupGrant: a login grants exactly SetSignupGrant's accounts: debug_token lists them as
// target ids, each lists its own numbers, and an account outside the grant is refused with
// Meta's permissions error (#200), whose subscribed_apps call still counts.
func TestSignupGrant(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := graphfake.New()
	srv := f.NewTestServer()
	t.Cleanup(srv.Close)
	f.AddSignupAccount("w1", "n11", "n12")
	f.AddSignupAccount("w2", "n21")
	f.AddSignupAccount("w3", "n31")
	f.SetSignupGrant("w1", "w2")
	token := f.SignupToken()
	c, err := graph.NewClient(srv.URL+"/v24.0", token, nil)
	if err != nil {
		t.Fatal(err)
	}
	info, err := c.DebugToken(ctx, token)
	if err != nil || len(info.GranularScopes) == 0 {
		t.Fatalf("debug_token: %+v %v", info, err)
	}
	for _, g := range info.GranularScopes {
		if diff := cmp.Diff([]string{"w1", "w2"}, g.TargetIDs); diff != "" {
			t.Errorf("%s target ids (-want, +got):\n%s", g.Scope, diff)
		}
	}
	for waba, want := range map[string][]string{"w1": {"n11", "n12"}, "w2": {"n21"}} {
		nums, err := c.PhoneNumbers(ctx, waba)
		var got []string
		for _, n := range nums {
			got = append(got, n.ID)
		}
		if diff := cmp.Diff(want, got); err != nil || diff != "" {
			t.Errorf("%s numbers %v (-want, +got):\n%s", waba, err, diff)
		}
	}
	if _, err := c.PhoneNumbers(ctx, "w3"); err == nil {
		t.Errorf("numbers of an account outside the grant: %v, want a refusal", err)
	}
	if err := c.SubscribeApp(ctx, "w3"); err == nil || f.Subscribed("w3") {
		t.Errorf("subscribe to an account outside the grant: %v", err)
	}
	if err := c.SubscribeApp(ctx, "w1"); err != nil || !f.Subscribed("w1") {
		t.Errorf("subscribe to a granted account: %v", err)
	}
	if n := f.SubscribeCalls(); n != 2 {
		t.Errorf("SubscribeCalls %d, want 2", n)
	}
}
