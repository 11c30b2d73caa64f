package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/wapipe/wapipe/internal/apikey"
	"github.com/wapipe/wapipe/internal/graph"
	"github.com/wapipe/wapipe/internal/operator"
	"github.com/wapipe/wapipe/internal/refusal"
	"github.com/wapipe/wapipe/internal/secrets"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/tenant"
	"github.com/wapipe/wapipe/internal/tenantcache"
	"github.com/wapipe/wapipe/internal/turnstate"
	"github.com/wapipe/wapipe/internal/usage"
	"github.com/wapipe/wapipe/tasks"
)

const tenantsUsage = `Usage: wapipe tenants apply -f FILE [--dry-run] [--allow-shared-member] [flags]
       wapipe tenants list [flags]
       wapipe tenants show [flags] ID
       wapipe tenants set-token [--no-verify] [flags] ID   (the token on stdin)
       wapipe tenants invite [--role owner|admin|member] [flags] ID
       wapipe tenants api-key [--expires 90d] [flags] ID
       wapipe tenants api-keys [flags] ID
       wapipe tenants revoke-key [flags] ID PREFIX
       wapipe tenants connect-link [--public-url URL] [flags] ID
       wapipe tenants action-secret [flags] ID
       wapipe tenants approve-waba [flags] ID WABA
       wapipe tenants remove-member [flags] ID WA_ID
       wapipe tenants delete [--yes] [flags] ID
       wapipe tenants usage [--month YYYY-MM] [flags] ID

Manages tenants (Firestore tenants, phone_numbers) and their send queues (wa-out-<id>).

apply    validates a tenant file and creates or updates the tenant and its send queue; prints
         what changed, or "no change". Idempotent and prompt-free, for CI. A file with problems
         prints one line per problem on stderr, writes nothing and exits 1.
list     one row per tenant: id, auth_status, numbers, members, mode, name.
show     one tenant; never a secret (access_token: set (time) or not set).
set-token reads the tenant's access token from stdin (a trailing newline is ignored), checks it
         with Graph debug_token (GRAPH_API_BASE_URL) unless --no-verify, encrypts it
         (KMS_KEY_NAME; the development key with APP_ENV=dev) and stores it: auth_status ok.
         Then it releases the sends parked while the tenant needed a new token (each sent once):
         that needs INTERNAL_TASK_BASE_URL and INTERNAL_TASK_TOKEN when some are parked.
invite   creates a one-time invite code (valid 7 days) and prints it alone on the last line.
api-key  creates a key for POST /v1/messages; printed once, alone on the last line (only its
         hash is stored). --expires makes it stop working after that long: a Go duration or
         days (90d, 1d12h).
api-keys one row per key of the tenant: prefix, state (active, revoked, expired), created,
         last used (to the minute), expires. Never the key.
usage    what the tenant's month cost (UTC; default this month), as GET /v1/usage answers it:
         Meta's messages by category and the model's tokens, each with its exact amount in
         USD, the total, the budget and what remains. A bad or future month exits 1.
revoke-key revokes the tenant's key PREFIX (as api-keys lists it): the api answers 401 to it
         from the next request.
connect-link prints a signed link (valid 1 hour, usable once) to the api service's Embedded
         Signup (PUBLIC_BASE_URL), for the tenant's admin to connect or reconnect WhatsApp;
         sealed with CONNECT_STATE_KMS_KEY_NAME (the development key with APP_ENV=dev).
action-secret creates or rotates the action signing secret; printed once, alone on the last line.
approve-waba attaches the WhatsApp Business Account WABA to the tenant with its stored token:
         subscribes the app to the account's webhooks and adds its numbers (refused, with
         nothing written, when another tenant owns one); prints the numbers added. Embedded
         Signup never attaches an account the tenant did not have: it records it as awaiting
         this approval.
` + tenantsOpsUsage + `

Flags come before the id. The environment is the services': GOOGLE_CLOUD_PROJECT,
TASKS_LOCATION, FIRESTORE_EMULATOR_HOST, CLOUD_TASKS_EMULATOR_HOST, KMS_KEY_NAME, APP_ENV.`

// stdinKey carries the reader set-token reads (tests give theirs; the command reads os.Stdin).
type stdinKey struct{}

func withStdin(ctx context.Context, r io.Reader) context.Context {
	return context.WithValue(ctx, stdinKey{}, r)
}

func stdinFrom(ctx context.Context) io.Reader {
	if r, ok := ctx.Value(stdinKey{}).(io.Reader); ok {
		return r
	}
	return os.Stdin
}

// maxTokenBytes bounds what set-token reads: Meta's tokens are a few hundred bytes.
const maxTokenBytes = 16 << 10

// tenantsRun is one run of `wapipe tenants`: its flags, the verb's arguments and, once the verb
// is checked, what it opened.
type tenantsRun struct {
	c                connFlags
	opsF             opsFlags
	file, role       string
	kmsKey, graphURL string
	expires          string
	month            string
	publicURL        string
	dryRun, noVerify bool
	allowShared      bool
	verb             string
	rest             []string
	ttl              time.Duration
	data             []byte
	db               *store.DB
	ops              *operator.Tenants
	stdout, stderr   io.Writer
}

// tenantsVerb is a verb of `wapipe tenants`: check refuses its arguments before anything
// connects; run does it once the store is open.
type tenantsVerb struct {
	check func(t *tenantsRun) error
	run   func(ctx context.Context, t *tenantsRun) error
}

// tenantsVerbs are the verbs of `wapipe tenants` (tenantsUsage).
var tenantsVerbs = map[string]tenantsVerb{
	"apply":         {checkApply, runTenantsApply},
	"list":          {checkNoArgs, runTenantsList},
	"show":          {checkOneID, runTenantsShow},
	"set-token":     {checkOneID, runTenantsSetToken},
	"invite":        {checkOneID, runTenantsInvite},
	"api-key":       {checkOneID, runTenantsCredential},
	"api-keys":      {checkOneID, runTenantsAPIKeys},
	"connect-link":  {checkOneID, runTenantsCredential},
	"action-secret": {checkOneID, runTenantsCredential},
	"approve-waba":  {checkArgs(2, "approve-waba takes a tenant id and a WhatsApp Business Account id"), runTenantsApproveWABA},
	"revoke-key":    {checkArgs(2, "revoke-key takes a tenant id and a key prefix (see wapipe tenants api-keys ID)"), runTenantsRevokeKey},
	"remove-member": {checkOps, runTenantsOpsVerb},
	"delete":        {checkOps, runTenantsOpsVerb},
	"usage":         {checkOneID, runTenantsUsage},
}

func runTenants(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	t := &tenantsRun{stdout: stdout, stderr: stderr}
	fs := t.flags()
	pos, err := fs.parse(args, stdout)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usageErrorf("want apply, list, show, set-token, invite, api-key, api-keys, revoke-key, connect-link, action-secret, approve-waba, remove-member, delete or usage (see wapipe tenants --help)")
	}
	t.verb, t.rest = pos[0], pos[1:]
	verb, ok := tenantsVerbs[t.verb]
	if !ok {
		return usageErrorf("unknown tenants command %q: want apply, list, show, set-token, invite, api-key, api-keys, revoke-key, connect-link, action-secret, approve-waba, remove-member, delete or usage", t.verb)
	}
	if err := verb.check(t); err != nil {
		return err
	}
	if err := t.prepare(); err != nil {
		return err
	}
	open := t.c.conn.Store
	if t.verb == "remove-member" {
		// It finds the member's contact by a phone or a BSUID: keyed ids.
		open = t.c.store
	}
	if t.db, err = open(ctx); err != nil {
		return err
	}
	defer t.db.Close()
	t.ops = &operator.Tenants{Store: store.NewTenants(t.db, store.Options{}), Keys: store.NewAPIKeys(t.db, store.Options{}), Dev: os.Getenv("APP_ENV") == "dev"}
	return verb.run(ctx, t)
}

// flags registers the flags of `wapipe tenants` on a new flag set.
func (t *tenantsRun) flags() *flagSet {
	fs := newFlagSet("tenants", tenantsUsage)
	t.c.register(fs)
	t.opsF.register(fs)
	fs.StringVar(&t.file, "f", "", "apply: the tenant file (YAML)")
	fs.BoolVar(&t.dryRun, "dry-run", false, "apply: say what would change; write nothing")
	fs.BoolVar(&t.allowShared, "allow-shared-member", false, "apply: list members who are already another tenant's on a shared number the file lists")
	fs.BoolVar(&t.noVerify, "no-verify", false, "set-token: do not check the token with Meta (you vouch for it)")
	fs.StringVar(&t.month, "month", "", "usage: the month, YYYY-MM (UTC); default this month")
	fs.StringVar(&t.expires, "expires", "", "api-key: the key expires after this long (90d, 720h); default never")
	fs.StringVar(&t.role, "role", string(tenant.DefaultRole), "invite: the role the invite gives: owner, admin or member")
	fs.StringVar(&t.kmsKey, "kms-key", os.Getenv("KMS_KEY_NAME"), "set-token: Cloud KMS key (env KMS_KEY_NAME); empty with APP_ENV=dev: the development key")
	fs.StringVar(&t.publicURL, "public-url", os.Getenv("PUBLIC_BASE_URL"), "connect-link: the api service's URL (env PUBLIC_BASE_URL)")
	fs.StringVar(&t.graphURL, "graph-url", env("GRAPH_API_BASE_URL", graph.DefaultBaseURL), "set-token, approve-waba: Graph API base URL (env GRAPH_API_BASE_URL)")
	return fs
}

// prepare checks --expires, reads apply's file and resolves the connection: everything the
// operator must fix before anything connects.
func (t *tenantsRun) prepare() error {
	if t.expires != "" {
		if t.verb != "api-key" {
			return usageErrorf("--expires applies to api-key only")
		}
		var err error
		if t.ttl, err = apikey.ParseTTL(t.expires); err != nil {
			return usageErrorf("--expires %v", err)
		}
	}
	if t.verb == "apply" {
		// Read the file before connecting: a missing file is the operator's to fix first.
		var err error
		if t.data, err = os.ReadFile(t.file); err != nil {
			return fmt.Errorf("read tenant file: %w", err)
		}
	}
	return t.c.resolve()
}

func checkNoArgs(t *tenantsRun) error {
	if len(t.rest) != 0 {
		return usageErrorf("%s takes no argument, got %q", t.verb, t.rest[0])
	}
	return nil
}

func checkApply(t *tenantsRun) error {
	if err := checkNoArgs(t); err != nil {
		return err
	}
	if t.file == "" {
		return usageErrorf("apply needs -f FILE")
	}
	return nil
}

func checkOneID(t *tenantsRun) error {
	if len(t.rest) != 1 {
		return usageErrorf("%s takes one tenant id", t.verb)
	}
	return nil
}

// checkArgs wants n arguments, and says msg otherwise.
func checkArgs(n int, msg string) func(t *tenantsRun) error {
	return func(t *tenantsRun) error {
		if len(t.rest) != n {
			return usageErrorf("%s", msg)
		}
		return nil
	}
}

func checkOps(t *tenantsRun) error { return checkOpsArgs(t.verb, t.rest) }

func runTenantsApply(ctx context.Context, t *tenantsRun) error {
	if !t.dryRun {
		queues, err := t.c.conn.Queues(ctx)
		if err != nil {
			return err
		}
		defer queues.Close()
		t.ops.Queues = queues
	}
	return tenantsApply(ctx, t.ops, t.file, t.data, operator.ApplyOptions{DryRun: t.dryRun, AllowSharedMember: t.allowShared}, t.stdout, t.stderr)
}

func runTenantsList(ctx context.Context, t *tenantsRun) error {
	recs, err := t.ops.List(ctx)
	if err != nil {
		return err
	}
	return writeTenantList(t.stdout, recs)
}

func runTenantsShow(ctx context.Context, t *tenantsRun) error {
	rec, err := t.ops.Show(ctx, t.rest[0])
	if err != nil {
		return err
	}
	period := turnstate.Period(time.Now())
	guard := store.NewGuard(t.db, store.Options{})
	used, err := guard.Usage(ctx, rec.Tenant.ID, period)
	if err != nil {
		return fmt.Errorf("read usage: %w", err)
	}
	tokens, err := guard.Tokens(ctx, rec.Tenant.ID, period)
	if err != nil {
		return fmt.Errorf("read token usage: %w", err)
	}
	grants, err := store.NewTenants(t.db, store.Options{}).PendingWABAGrants(ctx, rec.Tenant.ID)
	if err != nil {
		return err
	}
	_, err = io.WriteString(t.stdout, describeTenant(rec)+describeGrants(rec.Tenant.ID, grants)+describeUsage(rec, period, used)+describeTokens(period, tokens))
	return err
}

func runTenantsSetToken(ctx context.Context, t *tenantsRun) error {
	keeper, err := secrets.New(ctx, secrets.Config{KMSKeyName: t.kmsKey, Dev: os.Getenv("APP_ENV") == "dev"})
	if err != nil {
		return fmt.Errorf("secrets: %w", err)
	}
	defer keeper.Close()
	t.ops.Sealer = keeper
	if !t.noVerify {
		t.ops.Verify = operator.GraphTokenVerifier(t.graphURL)
	}
	token, err := io.ReadAll(io.LimitReader(stdinFrom(ctx), maxTokenBytes+1))
	if err != nil {
		return fmt.Errorf("read token from stdin: %w", err)
	}
	if len(token) > maxTokenBytes {
		return errors.New("the token on stdin is too long")
	}
	creds := credentials(ctx, t.ops, t.db, t.c)
	rec, released, err := creds.SetToken(ctx, t.rest[0], string(token), !t.noVerify)
	if err != nil {
		return err
	}
	if t.noVerify {
		fmt.Fprintln(t.stderr, "not checked with Meta (--no-verify): treated as verified")
	}
	fmt.Fprintf(t.stdout, "token set for %s: auth_status %s, access_token: set (%s)\n", rec.Tenant.ID, rec.AuthStatus, stamp(rec.TokenSetAt))
	if released > 0 {
		fmt.Fprintf(t.stdout, "released %d parked send(s)\n", released)
	}
	return nil
}

func runTenantsOpsVerb(ctx context.Context, t *tenantsRun) error {
	return runTenantsOps(ctx, t.verb, t.rest, t.db, t.opsF, t.stdout, t.stderr)
}

func runTenantsApproveWABA(ctx context.Context, t *tenantsRun) error {
	return tenantsApproveWABA(ctx, store.NewTenants(t.db, store.Options{}), t.rest[0], t.rest[1], t.kmsKey, t.graphURL, t.stdout, t.stderr)
}

func runTenantsCredential(ctx context.Context, t *tenantsRun) error {
	return tenantsCredential(ctx, t.verb, t.rest[0], t.ops, t.db, t.c, t.kmsKey, t.publicURL, t.ttl, t.stdout, t.stderr)
}

func runTenantsAPIKeys(ctx context.Context, t *tenantsRun) error {
	keys, err := t.ops.APIKeys(ctx, t.rest[0])
	if err != nil {
		return err
	}
	if len(keys) == 0 {
		fmt.Fprintf(t.stderr, "tenant %s has no API key (create one with wapipe tenants api-key %s)\n", t.rest[0], t.rest[0])
		return nil
	}
	return writeAPIKeys(t.stdout, keys)
}

func runTenantsUsage(ctx context.Context, t *tenantsRun) error {
	r := usage.Reporter{Ledgers: store.NewGuard(t.db, store.Options{}), Tenants: tenantcache.NewTenantCache(store.NewTenants(t.db, store.Options{}), 0)}
	rep, err := r.Report(ctx, t.rest[0], t.month)
	if ref, ok := refusal.As(err); ok {
		return usageErrorf("%s", ref.Message)
	}
	if err != nil {
		return err
	}
	enc := json.NewEncoder(t.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}

func runTenantsRevokeKey(ctx context.Context, t *tenantsRun) error {
	info, err := t.ops.RevokeAPIKey(ctx, t.rest[0], t.rest[1])
	if err != nil {
		return err
	}
	fmt.Fprintf(t.stdout, "%s %s (revoked %s): the api refuses it from the next request\n", info.Prefix, info.State, stamp(info.RevokedAt))
	return nil
}

func runTenantsInvite(ctx context.Context, t *tenantsRun) error {
	code, expire, err := t.ops.Invite(ctx, t.rest[0], tenant.Role(t.role))
	if err != nil {
		return err
	}
	fmt.Fprintf(t.stderr, "invite to %s as %s, valid once until %s. The person sends this code to one of the tenant's numbers:\n", t.rest[0], t.role, stamp(expire))
	fmt.Fprintln(t.stdout, code)
	return nil
}

// writeAPIKeys prints one row per key, its prefix first, under a header.
func writeAPIKeys(w io.Writer, keys []operator.APIKeyInfo) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PREFIX\tSTATE\tCREATED\tLAST_USED\tEXPIRES")
	for _, k := range keys {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", k.Prefix, k.State, stamp(k.CreatedAt), stamp(k.LastUsedAt), stamp(k.ExpiresAt))
	}
	return tw.Flush()
}

// tenantsApply runs apply and prints its outcome: the changes on stdout, or every problem of
// the file on stderr, one a line.
func tenantsApply(ctx context.Context, ops *operator.Tenants, file string, data []byte, opts operator.ApplyOptions, stdout, stderr io.Writer) error {
	dryRun := opts.DryRun
	rep, err := ops.ApplyWith(ctx, data, opts)
	var ps tenant.Problems
	if errors.As(err, &ps) {
		for _, p := range ps {
			fmt.Fprintln(stderr, file+": "+p.String())
		}
		return exitError{code: 1, msg: fmt.Sprintf("%d problem(s) in %s: nothing written", len(ps), file)}
	}
	if err != nil {
		return err
	}
	for _, l := range rep.Lines() {
		fmt.Fprintln(stdout, l)
	}
	for _, w := range rep.Warnings() {
		fmt.Fprintln(stderr, w)
	}
	switch {
	case dryRun:
		fmt.Fprintf(stderr, "dry run: nothing written (tenant %s, queue %s)\n", rep.ID, rep.Queue.ID)
	case rep.Changed():
		fmt.Fprintf(stderr, "tenant %s applied: version %d, queue %s\n", rep.ID, rep.Version, rep.Queue.ID)
	}
	return nil
}

// tenantsApproveWABA runs approve-waba: the numbers added on stdout (or "no change"), what it did
// on stderr.
func tenantsApproveWABA(ctx context.Context, st *store.Tenants, id, waba, kmsKey, graphURL string, stdout, stderr io.Writer) error {
	keeper, err := secrets.New(ctx, secrets.Config{KMSKeyName: kmsKey, Dev: os.Getenv("APP_ENV") == "dev"})
	if err != nil {
		return fmt.Errorf("secrets: %w", err)
	}
	defer keeper.Close()
	a := &operator.WABAApprover{Store: st, Opener: keeper, GraphURL: graphURL}
	rep, err := a.Approve(ctx, id, waba)
	var ps tenant.Problems
	if errors.As(err, &ps) {
		for _, p := range ps {
			fmt.Fprintln(stderr, p.String())
		}
		return exitError{code: 1, msg: fmt.Sprintf("account %s not attached to %s: nothing written", waba, id)}
	}
	if err != nil {
		return err
	}
	for _, l := range rep.Lines() {
		fmt.Fprintln(stdout, l)
	}
	granted := "not granted by a login: attached on your word"
	if !rep.Granted.IsZero() {
		granted = "granted by a login at " + stamp(rep.Granted)
	}
	fmt.Fprintf(stderr, "account %s (%s) approved for %s: app subscribed, %d number(s), %d added\n", waba, granted, id, len(rep.Numbers), len(rep.Added))
	return nil
}

// writeTenantList prints one row per tenant, its id first.
func writeTenantList(w io.Writer, recs []store.TenantRecord) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tAUTH\tNUMBERS\tMEMBERS\tASSISTANT\tNAME")
	for _, r := range recs {
		t := r.Tenant
		numbers := strconv.Itoa(len(t.PhoneNumbers))
		if n := countShared(t.PhoneNumbers); n > 0 {
			numbers += fmt.Sprintf(" (%d shared)", n)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", t.ID, r.AuthStatus, numbers, len(t.Members), t.Assistant.Mode, oneLine(t.Name))
	}
	return tw.Flush()
}

// countShared counts the numbers listed shared: true.
func countShared(ps []tenant.PhoneNumber) int {
	n := 0
	for _, p := range ps {
		if p.Shared {
			n++
		}
	}
	return n
}

// describeTenant renders one tenant for `show`: never a secret, members by masked label.
func describeTenant(r store.TenantRecord) string {
	t := r.Tenant
	var b strings.Builder
	line := func(k, format string, args ...any) {
		fmt.Fprintf(&b, "%-16s %s\n", k+":", fmt.Sprintf(format, args...))
	}
	line("id", "%s", t.ID)
	line("name", "%s", oneLine(t.Name))
	line("language", "%s", t.Language)
	line("audience", "%s", t.Audience)
	line("auth_status", "%s", r.AuthStatus)
	if r.AuthStatus == store.AuthNeedsReauth {
		line("action", "needs_reauth: the token was refused; set a new one with wapipe tenants set-token %s", t.ID)
	}
	if r.AuthLastError != "" {
		line("auth_last_error", "%s", oneLine(r.AuthLastError))
	}
	if r.Account.Event != "" {
		line("account_status", "%s", r.Account)
		if r.Account.Restricted {
			line("action", "Meta restricted the WhatsApp Business Account %s: the tenant's messaging is stopped; see Business Manager", r.Account.WABAID)
		}
	}
	if len(r.AccessToken) > 0 {
		line("access_token", "set (%s)", stamp(r.TokenSetAt))
	} else {
		line("access_token", "not set")
	}
	for _, p := range t.PhoneNumbers {
		if p.Shared {
			// The contact's membership, not the number, picks the tenant of a message there.
			line("phone_number", "%s (waba %s, shared)", p.PhoneNumberID, p.WABAID)
			continue
		}
		line("phone_number", "%s (waba %s)", p.PhoneNumberID, p.WABAID)
	}
	for _, m := range t.Members {
		line("member", "%s, %s", tenant.MemberLabel(m), m.Role)
	}
	for _, m := range r.Suspended {
		line("member", "%s, %s (suspended: changed number; list them by their new number or user_id)", tenant.MemberLabel(m), m.Role)
	}
	line("send_queue", "%s (%g/s, %d concurrent)", tasks.TenantQueueID(t.ID), t.Sending.PerSecond, t.Sending.MaxConcurrent)
	line("assistant", "%s", t.Assistant.Mode)
	line("version", "%d (applied %s)", r.Version, stamp(r.AppliedAt))
	line("updated_at", "%s", stamp(r.UpdatedAt))
	return b.String()
}

// describeGrants renders the accounts an Embedded Signup login granted beyond the tenant's, for
// `show`: they wait for approve-waba.
func describeGrants(id string, grants []store.WABAGrant) string {
	var b strings.Builder
	for _, g := range grants {
		fmt.Fprintf(&b, "%-16s %s\n", "waba_pending:", fmt.Sprintf("%s (granted %s): not attached; wapipe tenants approve-waba %s %s", g.WABAID, stamp(g.GrantedAt), id, g.WABAID))
	}
	return b.String()
}

// describeUsage renders the month's LLM calls against the tenant's quota, for `show`.
func describeUsage(r store.TenantRecord, period string, used int) string {
	limit, limited := r.Tenant.Quota.MonthlyLLMCalls()
	switch {
	case !limited:
		return fmt.Sprintf("%-16s %s\n", "llm_usage:", fmt.Sprintf("%d calls in %s (quota: unlimited)", used, period))
	case used >= limit:
		return fmt.Sprintf("%-16s %s\n", "llm_usage:", fmt.Sprintf("%d of %d calls in %s: over_quota, the assistant answers with the quota notice", used, limit, period))
	default:
		return fmt.Sprintf("%-16s %s\n", "llm_usage:", fmt.Sprintf("%d of %d calls in %s", used, limit, period))
	}
}

// describeTokens renders the month's LLM tokens, for `show`.
func describeTokens(period string, t store.TokenUsage) string {
	return fmt.Sprintf("%-16s %d prompt, %d output in %s\n", "llm_tokens:", t.Prompt, t.Output, period)
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return t.UTC().Format(time.RFC3339)
}
