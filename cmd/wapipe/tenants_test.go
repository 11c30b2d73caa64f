package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/firestore"

	"github.com/wapipe/wapipe/internal/contact"
	"github.com/wapipe/wapipe/internal/graph/graphfake"
	"github.com/wapipe/wapipe/internal/secrets"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/taskqueue"
	"github.com/wapipe/wapipe/internal/tenant"
	"github.com/wapipe/wapipe/internal/testenv"
)

// tenantEnv is a test's own Firestore project and Cloud Tasks emulator for `wapipe tenants`.
type tenantEnv struct {
	project, tasksAddr string
	fs                 *firestore.Client
	tenants            *store.Tenants
	admin              *taskqueue.Admin
}

func newTenantEnv(t *testing.T) *tenantEnv {
	t.Helper()
	fs, project := testenv.Firestore(t)
	emu, _ := testenv.Tasks(t, project, "us-central1", nil)
	admin, err := taskqueue.NewAdmin(context.Background(), project, "us-central1", emu.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close() })
	return &tenantEnv{project: project, tasksAddr: emu.Addr(), fs: fs, tenants: store.NewTenants(store.NewDB(fs), store.Options{}), admin: admin}
}

// person is tenant id's contact of the phone waID, made when the tenant does not know it yet
// (as a message from it would).
func (e *tenantEnv) person(t *testing.T, id, waID string) store.Contact {
	t.Helper()
	res, err := store.NewContacts(store.NewDB(e.fs), store.Options{}).Resolve(context.Background(), id, contact.Identity{WaID: waID})
	if err != nil {
		t.Fatalf("the contact of %s in %s: %v", waID, id, err)
	}
	return res.Contact
}

// args puts the connection flags before the verb's own flags and id.
func (e *tenantEnv) args(verb string, rest ...string) []string {
	return append([]string{"tenants", "--project", e.project, "--location", "us-central1", "--tasks-emulator", e.tasksAddr, verb}, rest...)
}

// docs counts the documents of a collection.
func (e *tenantEnv) docs(t *testing.T, collection string) int {
	t.Helper()
	snaps, err := e.fs.Collection(collection).Documents(context.Background()).GetAll()
	if err != nil {
		t.Fatal(err)
	}
	return len(snaps)
}

func writeFile(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "tenant.yaml")
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

const sampleFile = "../../tenants/sample.yaml"

func TestTenantsApplyListShow(t *testing.T) {
	// Not parallel: the sample's action_url is the local stack's (http, loopback), which
	// apply accepts only with APP_ENV=dev.
	t.Setenv("APP_ENV", "dev")
	e := newTenantEnv(t)

	out, errOut, err := cli(t, e.args("apply", "-f", sampleFile, "--dry-run")...)
	if err != nil || !strings.HasPrefix(out, "+ tenant: sunrise-bus\n") || !strings.Contains(errOut, "dry run: nothing written") {
		t.Fatalf("dry run: %v\nstdout:\n%s\nstderr:\n%s", err, out, errOut)
	}
	if n := e.docs(t, store.TenantsCollection); n != 0 {
		t.Fatalf("dry run wrote %d tenants", n)
	}

	out = mustCLI(t, e.args("apply", "-f", sampleFile)...)
	for _, want := range []string{"+ tenant: sunrise-bus\n", "+ phone_numbers: 106540352242922\n",
		"+ queue: wa-out-sunrise-bus (20/s, 2 concurrent)\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("first apply: no %q in\n%s", want, out)
		}
	}
	if strings.Contains(out, "6281234567890") {
		t.Errorf("apply printed a member's number in clear:\n%s", out)
	}
	q, err := e.admin.QueueConfig(context.Background(), "wa-out-sunrise-bus")
	if err != nil || q.RateLimits.MaxDispatchesPerSecond != 20 || q.RateLimits.MaxConcurrentDispatches != 2 {
		t.Errorf("tenant queue after apply: %+v, %v", q, err)
	}

	if out, errOut := mustCLIBoth(t, e.args("apply", "-f", sampleFile)...); out != "no change\n" || errOut != "" {
		t.Errorf("second apply: stdout %q stderr %q, want \"no change\" alone", out, errOut)
	}

	// A changed rate updates the tenant and its queue.
	data, _ := os.ReadFile(sampleFile)
	changed := writeFile(t, strings.Replace(string(data), "sending: {per_second: 20, max_concurrent: 2}", "sending: {per_second: 5, max_concurrent: 2}", 1))
	out = mustCLI(t, e.args("apply", "-f", changed)...)
	if want := "~ sending.per_second: 20 -> 5\n~ queue: wa-out-sunrise-bus (5/s, 2 concurrent)\n"; out != want {
		t.Errorf("rate change: %q, want %q", out, want)
	}

	other := writeFile(t, "id: acme-bus\nname: Acme Bus\nlanguage: id\naudience: members\nphone_numbers:\n  - {phone_number_id: \"200\", waba_id: \"300\"}\n")
	mustCLI(t, e.args("apply", "-f", other)...)
	lines := strings.Split(strings.TrimSpace(mustCLI(t, e.args("list")...)), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "ID ") || !strings.HasPrefix(lines[1], "acme-bus ") || !strings.HasPrefix(lines[2], "sunrise-bus ") ||
		!strings.Contains(lines[1], "no_token") {
		t.Errorf("list:\n%s\nwant a header, then one row per tenant, id first, by id", strings.Join(lines, "\n"))
	}

	show := mustCLI(t, e.args("show", "sunrise-bus")...)
	for _, want := range []string{"id:              sunrise-bus\n", "auth_status:     no_token\n", "access_token:    not set\n",
		"send_queue:      wa-out-sunrise-bus (5/s, 2 concurrent)\n", "Pak Agus (…7890), admin",
		"llm_usage:       0 of 1000 calls in " + time.Now().UTC().Format("2006-01") + "\n"} {
		if !strings.Contains(show, want) {
			t.Errorf("show: no %q in\n%s", want, show)
		}
	}
	if _, _, err := cli(t, e.args("show", "nobody")...); err == nil || exitCode(err) != 1 || !strings.Contains(err.Error(), `no tenant "nobody"`) {
		t.Errorf("show of an unknown tenant: %v", err)
	}
}

// mustCLIBoth runs the CLI and returns stdout and stderr, failing the test when it fails.
func mustCLIBoth(t *testing.T, args ...string) (string, string) {
	t.Helper()
	out, errOut, err := cli(t, args...)
	if err != nil {
		t.Fatalf("wapipe %s: %v\nstderr:\n%s", strings.Join(args, " "), err, errOut)
	}
	return out, errOut
}

// TestTenantsApplyRefusesBadFiles gives apply every kind of bad file: each gets its clear
// problem lines on stderr, exit 1, and nothing is written.
func TestTenantsApplyRefusesBadFiles(t *testing.T) {
	t.Parallel()
	e := newTenantEnv(t)
	owner := writeFile(t, "id: owner-co\nname: Owner\nlanguage: en\naudience: public\nphone_numbers:\n  - {phone_number_id: \"777\", waba_id: \"1\"}\n")
	mustCLI(t, e.args("apply", "-f", owner)...)

	base := "id: acme-bus\nname: Acme Bus\nlanguage: id\naudience: members\nphone_numbers:\n  - {phone_number_id: \"106540352242922\", waba_id: \"102290129340398\"}\n"
	tests := []struct {
		name, file string
		want       []string
	}{
		{"empty", "", []string{"the file is empty"}},
		{"unknown key", base + "colour: red\n", []string{"colour: unknown key; the file takes id, name, language"}},
		{"unknown nested key", base + "sending: {per_second: 20, burst: 3}\n", []string{"sending.burst: unknown key"}},
		{"bad id", strings.Replace(base, "id: acme-bus", "id: Acme_Bus", 1), []string{"id: must be 3 to 40 characters of a-z, 0-9 and - (line 1)"}},
		{"bad language", strings.Replace(base, "language: id", "language: de", 1), []string{`language: must be one of en, fr, ar, es, pt, id, not "de" (line 3)`}},
		{"bad audience", strings.Replace(base, "audience: members", "audience: all", 1), []string{`audience: must be members or public, not "all"`}},
		{"no numbers", strings.Replace(base, "  - {phone_number_id: \"106540352242922\", waba_id: \"102290129340398\"}\n", "", 1),
			[]string{"phone_numbers: required: at least one {phone_number_id, waba_id}"}},
		{"number listed twice", base + "  - {phone_number_id: \"106540352242922\", waba_id: \"1\"}\n", []string{"phone_numbers[1].phone_number_id: 106540352242922 is listed twice"}},
		{"number of another tenant", base + "  - {phone_number_id: \"777\", waba_id: \"1\"}\n", []string{"phone_numbers[1].phone_number_id: 777 already belongs to tenant owner-co"}},
		{"bad rate", base + "sending: {per_second: 0}\n", []string{"sending.per_second:"}},
		{"bad member", base + "members:\n  - {wa_id: \"+6281234567890\", role: boss}\n", []string{
			"members[0].wa_id: must be 6 to 15 digits", "members[0].role:"}},
		{"two problems", strings.Replace(strings.Replace(base, "language: id", "language: de", 1), "audience: members", "audience: all", 1), []string{
			"language: must be one of", "audience: must be members or public"}},
		{"not yaml", "id: [unclosed\n", []string{"tenant.yaml"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeFile(t, tt.file)
			out, errOut, err := cli(t, e.args("apply", "-f", path)...)
			if err == nil || exitCode(err) != 1 {
				t.Fatalf("exit %d (%v), want 1\nstdout:\n%s", exitCode(err), err, out)
			}
			if out != "" {
				t.Errorf("stdout %q, want nothing", out)
			}
			lines := strings.Split(strings.TrimSpace(errOut), "\n")
			if len(lines) < len(tt.want) {
				t.Fatalf("stderr:\n%s\nwant %d problem lines", errOut, len(tt.want))
			}
			for i, want := range tt.want {
				if !strings.HasPrefix(lines[i], path+": ") || !strings.Contains(lines[i], want) {
					t.Errorf("stderr line %d = %q, want %q after the file name", i+1, lines[i], want)
				}
			}
			if !strings.Contains(err.Error(), "nothing written") && tt.name != "not yaml" {
				t.Errorf("error %q, want it to say nothing was written", err)
			}
		})
	}
	if n := e.docs(t, store.TenantsCollection); n != 1 {
		t.Errorf("%d tenants after the refused applies, want only owner-co", n)
	}
	if n := e.docs(t, store.PhoneNumbers); n != 1 {
		t.Errorf("%d phone_numbers after the refused applies, want only 777", n)
	}
	if _, err := e.admin.QueueConfig(context.Background(), "wa-out-acme-bus"); err == nil {
		t.Error("a refused apply created the tenant's queue")
	}
}

// TestTenantsSetToken is not parallel: it sets APP_ENV=dev, as the CLI reads the environment.
func TestTenantsSetToken(t *testing.T) {
	t.Setenv("APP_ENV", "dev")
	t.Setenv("KMS_KEY_NAME", "")
	e := newTenantEnv(t)
	ctx := context.Background()
	mustCLI(t, e.args("apply", "-f", sampleFile)...)
	fake := graphfake.New()
	srv := fake.NewTestServer()
	t.Cleanup(srv.Close)
	graphURL := srv.URL + "/v24.0"

	setToken := func(stdin string, flags ...string) (string, string, error) {
		t.Helper()
		var out, errb bytes.Buffer
		args := e.args("set-token", append(append([]string{"--graph-url", graphURL}, flags...), "sunrise-bus")...)
		err := run(withStdin(ctx, strings.NewReader(stdin)), args, &out, &errb)
		return out.String(), errb.String(), err
	}
	const token = "EAAGm0PX4ZCpsBAGOODTOKEN"
	out, errOut, err := setToken(token + "\n")
	if err != nil || !strings.Contains(out, "token set for sunrise-bus: auth_status ok") {
		t.Fatalf("set-token: %v\nstdout:\n%s\nstderr:\n%s", err, out, errOut)
	}
	if n := len(fake.Requests()); n != 1 || !strings.Contains(fake.Requests()[0].Path, "/debug_token") {
		t.Errorf("%d Graph calls %v, want one debug_token", n, fake.Requests())
	}
	rec, err := e.tenants.Get(ctx, "sunrise-bus")
	if err != nil {
		t.Fatal(err)
	}
	keeper, err := secrets.New(ctx, secrets.Config{Dev: true})
	if err != nil {
		t.Fatal(err)
	}
	defer keeper.Close()
	plain, err := keeper.Decrypt(ctx, rec.AccessToken, secrets.AD("sunrise-bus", secrets.PurposeAccessToken))
	if err != nil || string(plain) != token {
		t.Errorf("stored token decrypts to %q (%v), want the token without its newline", plain, err)
	}
	if bytes.Contains(rec.AccessToken, []byte(token)) {
		t.Error("the token is stored in clear")
	}

	show := mustCLI(t, e.args("show", "sunrise-bus")...)
	if !strings.Contains(show, "auth_status:     ok\n") || !strings.Contains(show, "access_token:    set (") || strings.Contains(show, token) {
		t.Errorf("show after set-token:\n%s", show)
	}

	// A revoked token is refused and nothing is stored.
	fake.RevokeToken("EAAG-revoked")
	if _, errOut, err := setToken("EAAG-revoked\n"); err == nil || !strings.Contains(err.Error(), "Meta refused the token") || strings.Contains(err.Error()+errOut, "EAAG-revoked") {
		t.Errorf("revoked token: %v (stderr %q), want a refusal that does not print the token", err, errOut)
	}
	if again, _ := e.tenants.Get(ctx, "sunrise-bus"); !bytes.Equal(again.AccessToken, rec.AccessToken) {
		t.Error("a refused token replaced the stored one")
	}

	// --no-verify: the operator vouches; Meta is not asked.
	calls := len(fake.Requests())
	out, errOut, err = setToken("EAAG-revoked", "--no-verify")
	if err != nil || !strings.Contains(out, "auth_status ok") || !strings.Contains(errOut, "--no-verify") || len(fake.Requests()) != calls {
		t.Errorf("--no-verify: %v, stdout %q, stderr %q, %d new Graph calls", err, out, errOut, len(fake.Requests())-calls)
	}

	for _, tt := range []struct{ name, stdin, want string }{
		{"empty stdin", "", "no token on stdin"},
		{"two lines", "a\nb\n", "one token"},
	} {
		if _, _, err := setToken(tt.stdin, "--no-verify"); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want %q", tt.name, err, tt.want)
		}
	}

	// show says needs_reauth when the worker has marked the token refused.
	if _, err := e.fs.Collection(store.TenantsCollection).Doc("sunrise-bus").Update(ctx, []firestore.Update{
		{Path: "auth_status", Value: store.AuthNeedsReauth}, {Path: "auth_last_error", Value: "graph api: HTTP 401, code 190"}}); err != nil {
		t.Fatal(err)
	}
	show = mustCLI(t, e.args("show", "sunrise-bus")...)
	if !strings.Contains(show, "auth_status:     needs_reauth\n") || !strings.Contains(show, "auth_last_error: graph api: HTTP 401, code 190") {
		t.Errorf("show of a tenant that needs reauth:\n%s", show)
	}
}

func TestTenantsInvite(t *testing.T) {
	// Not parallel: the sample's action_url is the local stack's (http, loopback), which
	// apply accepts only with APP_ENV=dev.
	t.Setenv("APP_ENV", "dev")
	e := newTenantEnv(t)
	ctx := context.Background()
	mustCLI(t, e.args("apply", "-f", sampleFile)...)

	out, errOut := mustCLIBoth(t, e.args("invite", "--role", "admin", "sunrise-bus")...)
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	code := lines[len(lines)-1]
	if got, ok := tenant.NormalizeInviteCode(code); !ok || got != code {
		t.Fatalf("last line of stdout %q, want the invite code alone", code)
	}
	if !strings.Contains(errOut, "as admin, valid once until") {
		t.Errorf("stderr %q, want the explanation", errOut)
	}
	m, err := e.tenants.RedeemInvite(ctx, "sunrise-bus", tenant.InviteCodeHash(code), e.person(t, "sunrise-bus", "33612345678"), "Claire")
	if err != nil || m.Role != tenant.RoleAdmin {
		t.Errorf("redeeming the printed code: %+v, %v", m, err)
	}

	def := mustCLI(t, e.args("invite", "sunrise-bus")...)
	if m, err := e.tenants.RedeemInvite(ctx, "sunrise-bus", tenant.InviteCodeHash(strings.TrimSpace(def)), e.person(t, "sunrise-bus", "33699999999"), ""); err != nil || m.Role != tenant.RoleMember {
		t.Errorf("default role: %+v, %v; want member", m, err)
	}

	if _, _, err := cli(t, e.args("invite", "nobody")...); err == nil || !strings.Contains(err.Error(), `no tenant "nobody"`) {
		t.Errorf("invite to an unknown tenant: %v", err)
	}
	if _, _, err := cli(t, e.args("invite", "--role", "boss", "sunrise-bus")...); err == nil || !strings.Contains(err.Error(), `role "boss"`) {
		t.Errorf("invite with a bad role: %v", err)
	}
}

func TestTenantsUsage(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"tenants"},
		{"tenants", "frob"},
		{"tenants", "apply", "--project", "p"},
		{"tenants", "show", "--project", "p"},
		{"tenants", "show", "--project", "p", "a", "b"},
		{"tenants", "list", "--project", "p", "x"},
		{"tenants", "set-token", "--project", "p"},
	} {
		_, _, err := cli(t, args...)
		if err == nil || exitCode(err) != 2 || strings.Contains(err.Error(), "\n") {
			t.Errorf("wapipe %s: %v (exit %d), want one usage error line", strings.Join(args, " "), err, exitCode(err))
		}
	}
}

func TestDescribeUsage(t *testing.T) {
	t.Parallel()
	limit := func(n int) *int { return &n }
	for _, tc := range []struct {
		name  string
		quota tenant.Quota
		used  int
		want  string
	}{
		{"unlimited", tenant.Quota{}, 12, "llm_usage:       12 calls in 2026-11 (quota: unlimited)\n"},
		{"under", tenant.Quota{LLMCallsPerMonth: limit(50)}, 12, "llm_usage:       12 of 50 calls in 2026-11\n"},
		{"reached", tenant.Quota{LLMCallsPerMonth: limit(50)}, 50, "llm_usage:       50 of 50 calls in 2026-11: over_quota, the assistant answers with the quota notice\n"},
		{"zero quota", tenant.Quota{LLMCallsPerMonth: limit(0)}, 0, "llm_usage:       0 of 0 calls in 2026-11: over_quota, the assistant answers with the quota notice\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := describeUsage(store.TenantRecord{Tenant: &tenant.Tenant{ID: "acme", Quota: tc.quota}}, "2026-11", tc.used)
			if got != tc.want {
				t.Errorf("describeUsage = %q, want %q", got, tc.want)
			}
		})
	}
}
