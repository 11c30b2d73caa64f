package health_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/wapipe/wapipe/internal/health"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/tenant"
	"github.com/wapipe/wapipe/internal/testenv"
)

// TestHealthNamesARestrictedAccount: an account_update restriction recorded on a tenant makes
// health degraded, naming the tenant and what Meta said; its lift makes it ok again.
func TestHealthNamesARestrictedAccount(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, _ := testenv.Store(t)
	tenants := store.NewTenants(db, store.Options{})
	tn, err := tenant.Parse([]byte("id: acme\nname: Acme\nlanguage: en\naudience: public\nphone_numbers:\n  - {phone_number_id: \"301\", waba_id: \"900\"}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tenants.Apply(ctx, tn, false); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	checker := health.New(store.NewOutbound(db, store.Options{}), store.NewDeadLetters(db, store.Options{}), nil, nil,
		health.Options{Now: func() time.Time { return now }, Accounts: tenants})
	if rep, _ := checker.Check(ctx); rep.Status != health.OK {
		t.Fatalf("before: %s (%s), want ok", rep.Status, rep.Reason)
	}
	if _, err := tenants.RecordAccountUpdate(ctx, "900", "ACCOUNT_RESTRICTION", "RESTRICTED_BIZ_INITIATED_MESSAGING"); err != nil {
		t.Fatal(err)
	}
	rep, err := checker.Check(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Status != health.Degraded || !strings.Contains(rep.Reason, "acme: ACCOUNT_RESTRICTION (RESTRICTED_BIZ_INITIATED_MESSAGING)") {
		t.Errorf("restricted: %s (%s); want degraded naming acme and the restriction", rep.Status, rep.Reason)
	}
	if len(rep.RestrictedAccounts) != 1 {
		t.Errorf("restricted_accounts = %q", rep.RestrictedAccounts)
	}
	if _, err := tenants.RecordAccountUpdate(ctx, "900", "ACCOUNT_RESTRICTION", ""); err != nil {
		t.Fatal(err)
	}
	if rep, _ := checker.Check(ctx); rep.Status != health.OK {
		t.Errorf("lifted: %s (%s), want ok", rep.Status, rep.Reason)
	}
}
