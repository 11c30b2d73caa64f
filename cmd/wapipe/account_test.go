package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// TestAccountRestrictionShows: an account_update restriction recorded on the tenant owning the
// WABA shows in `tenants show` and makes `health --direct` degraded, naming the tenant.
func TestAccountRestrictionShows(t *testing.T) {
	t.Parallel()
	e := newTenantEnv(t)
	file := writeFile(t, "id: acme-bus\nname: Acme Bus\nlanguage: id\naudience: members\nphone_numbers:\n  - {phone_number_id: \"200\", waba_id: \"300\"}\n")
	mustCLI(t, e.args("apply", "-f", file)...)
	if show := mustCLI(t, e.args("show", "acme-bus")...); strings.Contains(show, "account_status") {
		t.Errorf("show before any account update:\n%s", show)
	}
	if _, err := e.tenants.RecordAccountUpdate(context.Background(), "300", "ACCOUNT_RESTRICTION", "RESTRICTED_BIZ_INITIATED_MESSAGING"); err != nil {
		t.Fatal(err)
	}
	show := mustCLI(t, e.args("show", "acme-bus")...)
	for _, want := range []string{"account_status:  ACCOUNT_RESTRICTION (RESTRICTED_BIZ_INITIATED_MESSAGING) at ",
		"action:          Meta restricted the WhatsApp Business Account 300"} {
		if !strings.Contains(show, want) {
			t.Errorf("show: no %q in\n%s", want, show)
		}
	}
	out, _, _ := cli(t, "health", "--direct", "--project", e.project, "--location", "us-central1", "--tasks-emulator", e.tasksAddr)
	var h struct {
		Status, Reason string
		Restricted     []string `json:"restricted_accounts"`
	}
	if err := json.Unmarshal([]byte(out), &h); err != nil {
		t.Fatalf("health printed no JSON (%v):\n%s", err, out)
	}
	if h.Status == "ok" || !strings.Contains(h.Reason, "acme-bus: ACCOUNT_RESTRICTION") || len(h.Restricted) != 1 {
		t.Errorf("health --direct: %s (%s) %q; want degraded naming acme-bus", h.Status, h.Reason, h.Restricted)
	}
}
