package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/wapipe/wapipe/internal/apikey"
	"github.com/wapipe/wapipe/internal/assistant"
	"github.com/wapipe/wapipe/internal/graph"
	"github.com/wapipe/wapipe/internal/operator"
	"github.com/wapipe/wapipe/internal/secrets"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/tenant"
	"github.com/wapipe/wapipe/tasks"
)

const tenantsUsage = `Usage: wapipe tenants apply -f FILE [--dry-run] [flags]
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

func runTenants(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("tenants", tenantsUsage)
	var (
		c                connFlags
		file, role       string
		kmsKey, graphURL string
		dryRun, noVerify bool
		expires          string
	)
	c.register(fs)
	var opsF opsFlags
	opsF.register(fs)
	fs.StringVar(&file, "f", "", "apply: the tenant file (YAML)")
	fs.BoolVar(&dryRun, "dry-run", false, "apply: say what would change; write nothing")
	fs.BoolVar(&noVerify, "no-verify", false, "set-token: do not check the token with Meta (you vouch for it)")
	fs.StringVar(&expires, "expires", "", "api-key: the key expires after this long (90d, 720h); default never")
	fs.StringVar(&role, "role", string(tenant.DefaultRole), "invite: the role the invite gives: owner, admin or member")
	fs.StringVar(&kmsKey, "kms-key", os.Getenv("KMS_KEY_NAME"), "set-token: Cloud KMS key (env KMS_KEY_NAME); empty with APP_ENV=dev: the development key")
	publicURL := fs.String("public-url", os.Getenv("PUBLIC_BASE_URL"), "connect-link: the api service's URL (env PUBLIC_BASE_URL)")
	fs.StringVar(&graphURL, "graph-url", env("GRAPH_API_BASE_URL", graph.DefaultBaseURL), "set-token, approve-waba: Graph API base URL (env GRAPH_API_BASE_URL)")
	pos, err := fs.parse(args, stdout)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usageErrorf("want apply, list, show, set-token, invite, api-key, api-keys, revoke-key, connect-link, action-secret, approve-waba, remove-member or delete (see wapipe tenants --help)")
	}
	verb, rest := pos[0], pos[1:]
	switch verb {
	case "apply", "list":
		if len(rest) != 0 {
			return usageErrorf("%s takes no argument, got %q", verb, rest[0])
		}
		if verb == "apply" && file == "" {
			return usageErrorf("apply needs -f FILE")
		}
	case "show", "set-token", "invite", "api-key", "api-keys", "connect-link", "action-secret":
		if len(rest) != 1 {
			return usageErrorf("%s takes one tenant id", verb)
		}
	case "approve-waba":
		if len(rest) != 2 {
			return usageErrorf("approve-waba takes a tenant id and a WhatsApp Business Account id")
		}
	case "revoke-key":
		if len(rest) != 2 {
			return usageErrorf("revoke-key takes a tenant id and a key prefix (see wapipe tenants api-keys ID)")
		}
	case "remove-member", "delete":
		if err := checkOpsArgs(verb, rest); err != nil {
			return err
		}
	default:
		return usageErrorf("unknown tenants command %q: want apply, list, show, set-token, invite, api-key, api-keys, revoke-key, connect-link, action-secret, approve-waba, remove-member or delete", verb)
	}
	var ttl time.Duration
	if expires != "" {
		if verb != "api-key" {
			return usageErrorf("--expires applies to api-key only")
		}
		if ttl, err = apikey.ParseTTL(expires); err != nil {
			return usageErrorf("--expires %v", err)
		}
	}
	var data []byte
	if verb == "apply" {
		// Read the file before connecting: a missing file is the operator's to fix first.
		if data, err = os.ReadFile(file); err != nil {
			return fmt.Errorf("read tenant file: %w", err)
		}
	}
	if err := c.resolve(); err != nil {
		return err
	}
	open := c.conn.Store
	if verb == "remove-member" {
		// It finds the member's contact by a phone or a BSUID: keyed ids.
		open = c.store
	}
	db, err := open(ctx)
	if err != nil {
		return err
	}
	defer db.Close()
	ops := &operator.Tenants{Store: store.NewTenants(db, store.Options{}), Keys: store.NewAPIKeys(db, store.Options{}), Dev: os.Getenv("APP_ENV") == "dev"}

	switch verb {
	case "apply":
		if !dryRun {
			queues, err := c.conn.Queues(ctx)
			if err != nil {
				return err
			}
			defer queues.Close()
			ops.Queues = queues
		}
		return tenantsApply(ctx, ops, file, data, dryRun, stdout, stderr)
	case "list":
		recs, err := ops.List(ctx)
		if err != nil {
			return err
		}
		return writeTenantList(stdout, recs)
	case "show":
		rec, err := ops.Show(ctx, rest[0])
		if err != nil {
			return err
		}
		period := assistant.Period(time.Now())
		guard := store.NewGuard(db, store.Options{})
		used, err := guard.Usage(ctx, rec.Tenant.ID, period)
		if err != nil {
			return fmt.Errorf("read usage: %w", err)
		}
		tokens, err := guard.Tokens(ctx, rec.Tenant.ID, period)
		if err != nil {
			return fmt.Errorf("read token usage: %w", err)
		}
		grants, err := store.NewTenants(db, store.Options{}).PendingWABAGrants(ctx, rec.Tenant.ID)
		if err != nil {
			return err
		}
		_, err = io.WriteString(stdout, describeTenant(rec)+describeGrants(rec.Tenant.ID, grants)+describeUsage(rec, period, used)+describeTokens(period, tokens))
		return err
	case "set-token":
		keeper, err := secrets.New(ctx, secrets.Config{KMSKeyName: kmsKey, Dev: os.Getenv("APP_ENV") == "dev"})
		if err != nil {
			return fmt.Errorf("secrets: %w", err)
		}
		defer keeper.Close()
		ops.Sealer = keeper
		if !noVerify {
			ops.Verify = operator.GraphTokenVerifier(graphURL)
		}
		token, err := io.ReadAll(io.LimitReader(stdinFrom(ctx), maxTokenBytes+1))
		if err != nil {
			return fmt.Errorf("read token from stdin: %w", err)
		}
		if len(token) > maxTokenBytes {
			return errors.New("the token on stdin is too long")
		}
		creds := credentials(ctx, ops, db, c)
		rec, released, err := creds.SetToken(ctx, rest[0], string(token), !noVerify)
		if err != nil {
			return err
		}
		if noVerify {
			fmt.Fprintln(stderr, "not checked with Meta (--no-verify): treated as verified")
		}
		fmt.Fprintf(stdout, "token set for %s: auth_status %s, access_token: set (%s)\n", rec.Tenant.ID, rec.AuthStatus, stamp(rec.TokenSetAt))
		if released > 0 {
			fmt.Fprintf(stdout, "released %d parked send(s)\n", released)
		}
		return nil
	case "remove-member", "delete":
		return runTenantsOps(ctx, verb, rest, db, opsF, stdout, stderr)
	case "approve-waba":
		return tenantsApproveWABA(ctx, store.NewTenants(db, store.Options{}), rest[0], rest[1], kmsKey, graphURL, stdout, stderr)
	case "api-key", "connect-link", "action-secret":
		return tenantsCredential(ctx, verb, rest[0], ops, db, c, kmsKey, *publicURL, ttl, stdout, stderr)
	case "api-keys":
		keys, err := ops.APIKeys(ctx, rest[0])
		if err != nil {
			return err
		}
		if len(keys) == 0 {
			fmt.Fprintf(stderr, "tenant %s has no API key (create one with wapipe tenants api-key %s)\n", rest[0], rest[0])
			return nil
		}
		return writeAPIKeys(stdout, keys)
	case "revoke-key":
		info, err := ops.RevokeAPIKey(ctx, rest[0], rest[1])
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s %s (revoked %s): the api refuses it from the next request\n", info.Prefix, info.State, stamp(info.RevokedAt))
		return nil
	case "invite":
		code, expire, err := ops.Invite(ctx, rest[0], tenant.Role(role))
		if err != nil {
			return err
		}
		fmt.Fprintf(stderr, "invite to %s as %s, valid once until %s. The person sends this code to one of the tenant's numbers:\n", rest[0], role, stamp(expire))
		fmt.Fprintln(stdout, code)
		return nil
	}
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
func tenantsApply(ctx context.Context, ops *operator.Tenants, file string, data []byte, dryRun bool, stdout, stderr io.Writer) error {
	rep, err := ops.Apply(ctx, data, dryRun)
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
