package main

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/wapipe/wapipe/internal/graph/graphfake"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/tenant"
)

// TestTenantsApproveWABA: approve-waba attaches an account a login granted, with the tenant's
// stored token: the app subscribed, its numbers added and routed, the grant approved; again it
// changes nothing. An account with another tenant's number, or one the token does not manage, is
// refused with nothing written and no subscription.
func TestTenantsApproveWABA(t *testing.T) {
	t.Setenv("APP_ENV", "dev")
	t.Setenv("KMS_KEY_NAME", "")
	e := newTenantEnv(t)
	ctx := context.Background()
	mustCLI(t, e.args("apply", "-f", sampleFile)...)
	const (
		granted, grantedNumber = "710000000000001", "710000000000011"
		taken, takenNumber     = "720000000000001", "720000000000011"
		unmanaged              = "730000000000001"
	)
	if _, err := e.tenants.Apply(ctx, &tenant.Tenant{ID: "other", Name: "Other", Language: "en", Audience: "public",
		PhoneNumbers: []tenant.PhoneNumber{{PhoneNumberID: takenNumber, WABAID: taken}}}, false); err != nil {
		t.Fatal(err)
	}
	fake := graphfake.New()
	srv := fake.NewTestServer()
	t.Cleanup(srv.Close)
	graphURL := srv.URL + "/v24.0"
	fake.AddSignupAccount("102290129340398", "106540352242922", "106540352242923")
	fake.AddSignupAccount(granted, grantedNumber)
	fake.AddSignupAccount(taken, takenNumber)
	fake.SetSignupGrant("102290129340398", granted, taken)
	token := fake.SignupToken()
	if err := run(withStdin(ctx, strings.NewReader(token)), e.args("set-token", "--no-verify", "sunrise-bus"), &strings.Builder{}, &strings.Builder{}); err != nil {
		t.Fatal(err)
	}
	if err := e.tenants.RecordWABAGrants(ctx, "sunrise-bus", []string{granted}); err != nil {
		t.Fatal(err)
	}
	if show := mustCLI(t, e.args("show", "sunrise-bus")...); !strings.Contains(show, "waba_pending:    "+granted+" (granted ") ||
		!strings.Contains(show, "approve-waba sunrise-bus "+granted) {
		t.Errorf("show does not list the pending account:\n%s", show)
	}
	approve := func(waba string) (string, string, error) {
		return cli(t, e.args("approve-waba", "--graph-url", graphURL, "sunrise-bus", waba)...)
	}

	out, errOut, err := approve(granted)
	if err != nil || out != "+ phone_number: "+grantedNumber+" (waba "+granted+")\n" || !strings.Contains(errOut, "granted by a login at") {
		t.Fatalf("approve-waba: %v\nstdout:\n%s\nstderr:\n%s", err, out, errOut)
	}
	if rec, err := e.tenants.GetByPhoneNumber(ctx, grantedNumber); err != nil || rec.Tenant.ID != "sunrise-bus" {
		t.Errorf("the approved account's number routes to %v (%v)", rec.Tenant, err)
	}
	if g, err := e.tenants.GetWABAGrant(ctx, "sunrise-bus", granted); err != nil || g.Status != store.GrantApproved {
		t.Errorf("grant after approval: %+v %v", g, err)
	}
	if !fake.Subscribed(granted) {
		t.Error("the app was not subscribed to the approved account")
	}
	if show := mustCLI(t, e.args("show", "sunrise-bus")...); strings.Contains(show, "waba_pending") {
		t.Errorf("show lists an approved account as pending:\n%s", show)
	}
	if out, _, err := approve(granted); err != nil || out != "no change\n" {
		t.Errorf("approve-waba again: %v, stdout %q", err, out)
	}

	before, _ := e.tenants.Get(ctx, "sunrise-bus")
	calls := fake.SubscribeCalls()
	for _, c := range []struct{ name, waba, want string }{
		{"another tenant's number", taken, "belongs to another tenant"},
		{"an account the token does not manage", unmanaged, "does it manage"},
	} {
		out, errOut, err := approve(c.waba)
		if err == nil || exitCode(err) == 0 || out != "" || !strings.Contains(errOut+err.Error(), c.want) || strings.Contains(errOut+err.Error(), token) {
			t.Errorf("%s: %v (exit %d)\nstdout:\n%s\nstderr:\n%s", c.name, err, exitCode(err), out, errOut)
		}
	}
	after, _ := e.tenants.Get(ctx, "sunrise-bus")
	if len(after.Tenant.PhoneNumbers) != len(before.Tenant.PhoneNumbers) || fake.SubscribeCalls() != calls || fake.Subscribed(taken) {
		t.Errorf("a refused approval changed the tenant (%d numbers, was %d) or subscribed (%d calls, was %d)",
			len(after.Tenant.PhoneNumbers), len(before.Tenant.PhoneNumbers), fake.SubscribeCalls(), calls)
	}
	if rec, err := e.tenants.GetByPhoneNumber(ctx, takenNumber); err != nil || rec.Tenant.ID != "other" {
		t.Errorf("the other tenant's number moved: %v %v", rec.Tenant, err)
	}
	if _, err := e.tenants.GetWABAGrant(ctx, "sunrise-bus", taken); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a refused approval recorded a grant: %v", err)
	}

	for _, args := range [][]string{
		e.args("approve-waba", "sunrise-bus"),
		e.args("approve-waba", "sunrise-bus", granted, "x"),
	} {
		if _, _, err := cli(t, args...); exitCode(err) != 2 {
			t.Errorf("wapipe %s: %v, want a usage error (exit 2)", strings.Join(args, " "), err)
		}
	}
	if _, _, err := approve("a/b"); err == nil || exitCode(err) == 0 {
		t.Errorf("a bad account id: %v", err)
	}
}
