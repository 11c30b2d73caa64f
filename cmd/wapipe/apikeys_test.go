package main

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/wapipe/wapipe/internal/apikey"
	"github.com/wapipe/wapipe/internal/testenv"
)

// TestTenantsAPIKeysListRevokeExpire runs api-key (with and without --expires), api-keys and
// revoke-key against the emulators, and asks the stack's api service between them: a revoked key
// is refused (401) from the very next request, an expired one once its time is up, and the list
// never shows a key.
func TestTenantsAPIKeysListRevokeExpire(t *testing.T) {
	t.Parallel()
	s := newStack(t, nil)
	args := func(verb string, rest ...string) []string {
		return append([]string{"tenants", "--project", s.Project, "--location", s.Location, "--tasks-emulator", s.TasksAddr, verb}, rest...)
	}
	// ask answers the api's status for GET /v1/messages/<unknown id> with key: 404 once the key
	// is accepted, 401 when it is not.
	ask := func(key string) int {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, s.APIURL+"/v1/messages/msg_"+strings.Repeat("0", 32), nil)
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}

	lasting := lastLine(mustCLI(t, args("api-key", "sunrise-bus")...))
	out, errOut := mustCLIBoth(t, args("api-key", "--expires", "3s", "sunrise-bus")...)
	expiring := lastLine(out)
	if !strings.Contains(errOut, "expires ") {
		t.Errorf("api-key --expires: stderr %q, want when it expires", errOut)
	}
	lastingID, ok1 := apikey.ID(lasting)
	expiringID, ok2 := apikey.ID(expiring)
	if !ok1 || !ok2 {
		t.Fatalf("api-key printed %q and %q, want keys", lasting, expiring)
	}
	if got := ask(lasting); got != http.StatusNotFound {
		t.Fatalf("a fresh key: api answered %d, want 404 (authenticated, no such message)", got)
	}

	list := mustCLI(t, args("api-keys", "sunrise-bus")...)
	for _, secret := range []string{lasting, expiring, lasting[len(apikey.DisplayPrefix(lastingID)):]} {
		if strings.Contains(list, secret) {
			t.Fatalf("api-keys shows a key:\n%s", list)
		}
	}
	rows := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(list), "\n")[1:] {
		f := strings.Fields(line)
		rows[f[0]] = f
	}
	lp, ep := apikey.DisplayPrefix(lastingID), apikey.DisplayPrefix(expiringID)
	if r := rows[lp]; len(r) != 5 || r[1] != "active" || r[3] == "never" || r[4] != "never" {
		t.Errorf("row of the used key %v, want active, last used, never expires:\n%s", r, list)
	}
	if r := rows[ep]; len(r) != 5 || r[1] != "active" || r[3] != "never" || r[4] == "never" {
		t.Errorf("row of the expiring key %v, want active, never used, an expiry:\n%s", r, list)
	}

	// Revoked: the next request is refused.
	out = mustCLI(t, args("revoke-key", "sunrise-bus", lp)...)
	if !strings.Contains(out, lp+" revoked") {
		t.Errorf("revoke-key printed %q", out)
	}
	if got := ask(lasting); got != http.StatusUnauthorized {
		t.Errorf("the request right after revoke-key: %d, want 401", got)
	}
	mustCLI(t, args("revoke-key", "sunrise-bus", lastingID)...) // again, by bare id: no change, no error

	// Expired: refused once its time is up, without anyone acting.
	testenv.Eventually(t, 15*time.Second, func() bool { return ask(expiring) == http.StatusUnauthorized }, "the expired key is still accepted")
	list = mustCLI(t, args("api-keys", "sunrise-bus")...)
	if !strings.Contains(list, lp+"  revoked") || !strings.Contains(list, ep+"  expired") {
		t.Errorf("api-keys after revoke and expiry:\n%s", list)
	}

	// Refusals: one line each, non-zero exit, nothing revoked.
	for _, tc := range []struct {
		args []string
		want string
	}{
		{args("revoke-key", "sunrise-bus", "wpk_nothex"), "not a key prefix"},
		{args("revoke-key", "sunrise-bus", "wpk_0123456789abcdef"), "has no key"},
		{args("revoke-key", "sunrise-bus", lasting), "not a key prefix"},
		{args("revoke-key", "sunrise-bus"), "revoke-key takes"},
		{args("api-keys", "nobody"), `no tenant "nobody"`},
		{args("api-key", "--expires", "0d", "sunrise-bus"), "must be positive"},
		{args("api-key", "--expires", "soon", "sunrise-bus"), "--expires"},
		{args("api-keys", "--expires", "90d", "sunrise-bus"), "api-key only"},
	} {
		out, errOut, err := cli(t, tc.args...)
		if err == nil || exitCode(err) == 0 || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("wapipe %s: %v, want one line with %q", strings.Join(tc.args[7:], " "), err, tc.want)
		}
		if all := out + errOut + fmt.Sprint(err); strings.Contains(all, lasting) {
			t.Errorf("a refusal echoes the key pasted in place of its prefix: %s", all)
		}
	}
}
