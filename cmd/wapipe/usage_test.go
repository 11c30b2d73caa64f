package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/usage"
	"github.com/wapipe/wapipe/pricing"
)

// TestTenantsUsagePrintsTheMonth: `wapipe tenants usage ID --month` prints what GET /v1/usage
// answers for the month, read from the same ledger; a bad month is a usage error.
func TestTenantsUsagePrintsTheMonth(t *testing.T) {
	t.Parallel()
	s := newStack(t, nil)
	ctx := context.Background()
	args := func(rest ...string) []string { return s.conn(append([]string{"tenants"}, rest...)...) }
	at := time.Date(2026, 10, 14, 9, 0, 0, 0, time.UTC)
	guard := store.NewGuard(store.NewDB(s.fs), store.Options{})
	for i, m := range []store.BilledMessage{
		{MessageID: "wamid.1", Category: "marketing", Market: "Indonesia", Amount: 41_100_000_000},
		{MessageID: "wamid.2", Category: "utility", Market: "India", Amount: 1_400_000_000},
		{MessageID: "wamid.3", Category: "service", Market: "India"},
	} {
		m.TenantID, m.At = "sunrise-bus", at.Add(time.Duration(i)*time.Hour)
		if _, err := guard.RecordBilled(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	printed := mustCLI(t, args("usage", "--month", "2026-10", "sunrise-bus")...)
	var printedRep usage.Report
	if err := json.Unmarshal([]byte(printed), &printedRep); err != nil {
		t.Fatalf("usage printed %q: %v", printed, err)
	}
	key := lastLine(mustCLI(t, args("api-key", "sunrise-bus")...))
	req, _ := http.NewRequest(http.MethodGet, s.APIURL+"/v1/usage?month=2026-10", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var api usage.Report
	if resp.StatusCode != http.StatusOK || json.Unmarshal(b, &api) != nil {
		t.Fatalf("GET /v1/usage: %d %s", resp.StatusCode, b)
	}
	if diff := cmp.Diff(api, printedRep); diff != "" {
		t.Errorf("the CLI's month differs from the api's (-api, +cli):\n%s", diff)
	}
	if want := (pricing.Amount(42_500_000_000)).String(); printedRep.Meta.Amount != want || printedRep.Total != "0.04" || printedRep.Meta.ByCategory["service"].Messages != 1 {
		t.Errorf("the month: %+v, want Meta %s, total 0.04 and one free service message", printedRep, want)
	}
	if _, stderr, err := cli(t, args("usage", "--month", "2026-13", "sunrise-bus")...); err == nil || !strings.Contains(stderr+err.Error(), "YYYY-MM") {
		t.Errorf("a bad month: %v %q, want a usage error naming YYYY-MM", err, stderr)
	}
}
