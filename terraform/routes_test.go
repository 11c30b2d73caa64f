package terraform

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
	"github.com/zclconf/go-cty/cty/function/stdlib"

	"github.com/wapipe/wapipe/tasks"
)

// invokerRef is the reference to the invoker account of an enqueuing service.
func invokerRef(service string) string {
	return fmt.Sprintf("google_service_account.invoker[%q].email", service)
}

// routeCallersJSON is ROUTE_CALLERS for the table with account's accounts.
func routeCallersJSON(t *testing.T, account func(tasks.Caller, tasks.Via) string) string {
	t.Helper()
	b, err := json.Marshal(tasks.CallersOf(account))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Stand-in emails for the accounts Terraform creates: the resources' email attributes are not
// known before an apply, so the tests give each account one of its own.
func invokerEmail(service string) string { return "invoker-" + service + "@p.iam.gserviceaccount.com" }
func ownEmail(service string) string     { return service + "@p.iam.gserviceaccount.com" }

const schedulerEmail = "scheduler@p.iam.gserviceaccount.com"

// tableAccount is the account each caller reaches a route with, as the table's Via says and
// Terraform must grant: a task route sees the enqueuer's invoker, a direct route its own
// account, the sweep the scheduler's.
func tableAccount(c tasks.Caller, via tasks.Via) string {
	switch via {
	case tasks.ViaTask:
		return invokerEmail(string(c))
	case tasks.ViaScheduler:
		return schedulerEmail
	}
	return ownEmail(string(c))
}

// accountsCtx gives google_service_account its stand-in emails, invoker by service.
func accountsCtx() map[string]cty.Value {
	accounts := map[string]cty.Value{"scheduler": cty.ObjectVal(map[string]cty.Value{"email": cty.StringVal(schedulerEmail)})}
	invokers := map[string]cty.Value{}
	for _, s := range []string{"webhook", "worker", "api", "console", "deployer"} {
		accounts[s] = cty.ObjectVal(map[string]cty.Value{"email": cty.StringVal(ownEmail(s))})
		if s != "deployer" {
			invokers[s] = cty.ObjectVal(map[string]cty.Value{"email": cty.StringVal(invokerEmail(s))})
		}
	}
	accounts["invoker"] = cty.ObjectVal(invokers)
	return map[string]cty.Value{"google_service_account": cty.ObjectVal(accounts)}
}

// evalRouteCallers evaluates local.route_callers with the stand-in emails.
func evalRouteCallers(t *testing.T, m *module) cty.Value {
	t.Helper()
	v, err := m.eval(m.localExpr(t, "route_callers"), accountsCtx())
	if err != nil {
		t.Fatalf("local.route_callers: %v", err)
	}
	return v
}

// asCallers reads a route path → emails value, each list sorted.
func asCallers(t *testing.T, v cty.Value) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for path, list := range v.AsValueMap() {
		emails := []string{}
		for _, e := range list.AsValueSlice() {
			emails = append(emails, e.AsString())
		}
		sort.Strings(emails)
		out[path] = emails
	}
	return out
}

func sortedCallers(rc tasks.RouteCallers) map[string][]string {
	out := map[string][]string{}
	for path, emails := range rc {
		emails = slices.Clone(emails)
		sort.Strings(emails)
		out[path] = emails
	}
	return out
}

// TestRouteCallersFollowTheTable (issue 35 item 6): ROUTE_CALLERS as Terraform writes it names,
// for every route of tasks.Routes and no other, the accounts of the route's callers: the
// enqueuers' invokers on the task routes, the api's and the console's own accounts on the routes
// they call directly, the scheduler's on the sweep. During the invokers' split
// (admit_previous_invoker) the former invoker, now the worker's, joins the task routes only.
func TestRouteCallersFollowTheTable(t *testing.T) {
	t.Parallel()
	m := loadModule(t)
	want := sortedCallers(tasks.CallersOf(tableAccount))
	got := asCallers(t, evalRouteCallers(t, m))
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("local.route_callers (-tasks.Routes, +terraform):\n%s", diff)
	}

	// What the worker is given, with and without the transition.
	deployed := m.localExpr(t, "route_callers_deployed")
	for _, transition := range []bool{false, true} {
		vars := m.ctx.Variables["var"].AsValueMap()
		vars["admit_previous_invoker"] = cty.BoolVal(transition)
		locals := m.ctx.Variables["local"].AsValueMap()
		if locals == nil {
			locals = map[string]cty.Value{}
		}
		locals["route_callers"] = evalRouteCallers(t, m)
		extra := accountsCtx()
		extra["var"], extra["local"] = cty.ObjectVal(vars), cty.ObjectVal(locals)
		ctx := m.ctx.NewChild()
		ctx.Variables = extra
		ctx.Functions = map[string]function.Function{"startswith": startsWith, "distinct": stdlib.DistinctFunc}
		v, diags := deployed.Value(ctx)
		if diags.HasErrors() {
			t.Fatalf("local.route_callers_deployed: %v", diags)
		}
		wantDeployed := sortedCallers(tasks.CallersOf(tableAccount))
		if transition {
			for _, r := range tasks.Routes() {
				if r.Via == tasks.ViaTask && !slices.Contains(wantDeployed[r.Path], invokerEmail("worker")) {
					wantDeployed[r.Path] = append(wantDeployed[r.Path], invokerEmail("worker"))
					sort.Strings(wantDeployed[r.Path])
				}
			}
		}
		if diff := cmp.Diff(wantDeployed, asCallers(t, v)); diff != "" {
			t.Errorf("admit_previous_invoker = %v: local.route_callers_deployed (-want, +terraform):\n%s", transition, diff)
		}
	}

	env := m.serviceEnv(t, services["worker"])
	if e := env["ROUTE_CALLERS"]; e == nil || m.text(attrExpr(e.Body, "value")) != "jsonencode(local.route_callers_deployed)" {
		t.Errorf("%s: ROUTE_CALLERS must be jsonencode(local.route_callers_deployed)", services["worker"])
	}
	if env["INTERNAL_CALLERS"] != nil {
		t.Errorf("%s: sets INTERNAL_CALLERS beside ROUTE_CALLERS, which the worker refuses", services["worker"])
	}
}

// startsWith is Terraform's startswith.
var startsWith = function.New(&function.Spec{
	Params: []function.Parameter{{Name: "str", Type: cty.String}, {Name: "prefix", Type: cty.String}},
	Type:   function.StaticReturnType(cty.Bool),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		return cty.BoolVal(strings.HasPrefix(args[0].AsString(), args[1].AsString())), nil
	},
})

// TestEachEnqueuerHasItsOwnInvoker (issue 35 item 6): every service that creates tasks has an
// invoker account of its own, sets it as TASKS_SERVICE_ACCOUNT_EMAIL, and is the only one that
// may act as it; the invokers and the scheduler, nothing else through that grant, may invoke
// the worker.
func TestEachEnqueuerHasItsOwnInvoker(t *testing.T) {
	t.Parallel()
	m := loadModule(t)

	// The enqueuers are the table's callers of task routes, and each has an invoker.
	var enqueuers []string
	for _, r := range tasks.Routes() {
		for _, c := range r.Callers {
			if r.Via == tasks.ViaTask && !slices.Contains(enqueuers, string(c)) {
				enqueuers = append(enqueuers, string(c))
			}
		}
	}
	sort.Strings(enqueuers)
	keys, err := m.forEachKeys("google_service_account.invoker")
	if err != nil {
		t.Fatalf("google_service_account.invoker: %v", err)
	}
	if diff := cmp.Diff(enqueuers, keys); diff != "" {
		t.Errorf("invoker accounts (-the table's enqueuers, +terraform):\n%s", diff)
	}
	// Every account id fits the 30 characters of a service account id, with the longest prefix.
	idExpr := attrExpr(m.resources["google_service_account.invoker"].Body, "account_id")
	for _, k := range keys {
		v, err := m.eval(idExpr, map[string]cty.Value{
			"each": cty.ObjectVal(map[string]cty.Value{"key": cty.StringVal(k), "value": cty.StringVal(k)}),
			"var":  cty.ObjectVal(map[string]cty.Value{"name_prefix": cty.StringVal(strings.Repeat("p", 16))}),
		})
		if err != nil || len(v.AsString()) > 30 {
			t.Errorf("invoker %s: account_id %v (%v): want at most 30 characters", k, v, err)
		}
	}

	// Each enqueuing service's tasks carry its own invoker.
	for _, svc := range enqueuers {
		env := m.serviceEnv(t, services[svc])
		e := env["TASKS_SERVICE_ACCOUNT_EMAIL"]
		if e == nil || m.text(attrExpr(e.Body, "value")) != invokerRef(svc) {
			t.Errorf("%s: TASKS_SERVICE_ACCOUNT_EMAIL must be %s", services[svc], invokerRef(svc))
		}
	}

	// Each runtime account acts as its own invoker, and nothing else grants actAs on one but the
	// console's replays (TestConsoleReplaysAsTheRoutesEnqueuer).
	for _, addr := range m.resourcesOfType("google_service_account_iam_member") {
		r := m.resources[addr]
		target := m.text(attrExpr(r.Body, "service_account_id"))
		if !strings.HasPrefix(target, "google_service_account.invoker") || addr == "google_service_account_iam_member.console_replays_as" {
			continue
		}
		if addr != "google_service_account_iam_member.enqueuer_acts_as_invoker" {
			t.Errorf("%s: a grant on an invoker account; only enqueuer_acts_as_invoker (and console_replays_as) may", addr)
			continue
		}
		if target != "google_service_account.invoker[each.key].name" || m.text(attrExpr(r.Body, "member")) != `"serviceAccount:${each.value}"` ||
			m.text(attrExpr(r.Body, "for_each")) != "local.runtime_service_accounts" {
			t.Errorf("%s: want each runtime account (local.runtime_service_accounts) a user of its own invoker only", addr)
		}
	}
	for _, svc := range enqueuers {
		if got := m.text(objectItem(t, m.localExpr(t, "runtime_service_accounts"), svc)); got != "google_service_account."+svc+".email" {
			t.Errorf("local.runtime_service_accounts[%s] = %s, want the %s's own account", svc, got, svc)
		}
	}

	// The worker's invokers through Cloud Tasks and Cloud Scheduler are the invokers and the
	// scheduler, by name.
	v, err := m.eval(m.localExpr(t, "worker_token_invokers"), accountsCtx())
	if err != nil {
		t.Fatalf("local.worker_token_invokers: %v", err)
	}
	got := map[string]string{}
	for k, e := range v.AsValueMap() {
		got[k] = e.AsString()
	}
	want := map[string]string{"scheduler": schedulerEmail}
	for _, svc := range enqueuers {
		want[svc] = invokerEmail(svc)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("local.worker_token_invokers (-want, +terraform):\n%s", diff)
	}
	if got := m.text(attrExpr(m.resources["google_cloud_run_v2_service_iam_member.worker_invoker"].Body, "for_each")); got != "local.worker_token_invokers" {
		t.Errorf("google_cloud_run_v2_service_iam_member.worker_invoker: for_each = %s, want local.worker_token_invokers", got)
	}
}

// objectItem returns the value expression of key in an object constructor expression.
func objectItem(t *testing.T, e hclsyntax.Expression, key string) hclsyntax.Expression {
	t.Helper()
	obj, ok := e.(*hclsyntax.ObjectConsExpr)
	if !ok {
		t.Fatalf("%T is not an object constructor", e)
	}
	for _, item := range obj.Items {
		if k, diags := item.KeyExpr.Value(nil); !diags.HasErrors() && k.Type() == cty.String && k.AsString() == key {
			return item.ValueExpr
		}
	}
	t.Fatalf("no key %q", key)
	return nil
}

// TestSweepJob (issue 35 item 2): Terraform creates the sweep's Cloud Scheduler job: every
// minute, POST to the worker's sweep route, with an OIDC token for the scheduler's own account
// and the worker's URL as audience, and no header: the internal token never enters the state.
func TestSweepJob(t *testing.T) {
	t.Parallel()
	m := loadModule(t)
	jobs := m.resourcesOfType("google_cloud_scheduler_job")
	if len(jobs) != 1 || jobs[0] != "google_cloud_scheduler_job.sweep" {
		t.Fatalf("want one google_cloud_scheduler_job, sweep; got %v", jobs)
	}
	job := m.resources[jobs[0]]
	for attr, want := range map[string]string{
		"schedule": `"* * * * *"`,
		"name":     `"${var.name_prefix}-sweep"`,
	} {
		if got := m.text(attrExpr(job.Body, attr)); got != want {
			t.Errorf("%s: %s = %s, want %s", jobs[0], attr, got, want)
		}
	}
	targets := childBlocks(job.Body, "http_target")
	if len(targets) != 1 {
		t.Fatalf("%s: want one http_target", jobs[0])
	}
	target := targets[0].Body
	for attr, want := range map[string]string{
		"http_method": `"POST"`,
		"uri":         `"${local.worker_url}` + tasks.SweepPath + `"`,
	} {
		if got := m.text(attrExpr(target, attr)); got != want {
			t.Errorf("%s: http_target.%s = %s, want %s", jobs[0], attr, got, want)
		}
	}
	oidc := childBlocks(target, "oidc_token")
	if len(oidc) != 1 || m.text(attrExpr(oidc[0].Body, "service_account_email")) != "google_service_account.scheduler.email" ||
		m.text(attrExpr(oidc[0].Body, "audience")) != "local.worker_url" {
		t.Errorf("%s: want oidc_token { service_account_email = google_service_account.scheduler.email, audience = local.worker_url }", jobs[0])
	}
	if attrExpr(target, "headers") != nil || len(childBlocks(target, "oauth_token")) > 0 {
		t.Errorf("%s: carries headers or an OAuth token; the sweep is admitted on its OIDC identity alone", jobs[0])
	}
	src := string(job.Range().SliceBytes(m.sources[job.Range().Filename]))
	for _, secret := range []string{tasks.HeaderInternalToken, "INTERNAL_TASK_TOKEN", "google_secret_manager"} {
		if strings.Contains(src, secret) {
			t.Errorf("%s: mentions %s: no secret may reach the job (nor Terraform's state)", jobs[0], secret)
		}
	}

	if got := m.text(attrExpr(m.resources["google_service_account.scheduler"].Body, "account_id")); got != `"${var.name_prefix}-scheduler"` {
		t.Errorf("google_service_account.scheduler: account_id = %s, want \"${var.name_prefix}-scheduler\"", got)
	}
	apis, err := m.forEachKeys("google_project_service.api")
	if err != nil || !slices.Contains(apis, "cloudscheduler.googleapis.com") {
		t.Errorf("google_project_service.api: cloudscheduler.googleapis.com is not enabled (%v)", err)
	}
}

// TestConsoleReplaysAsTheRoutesEnqueuer (issue 35 item 6): the console's replays act as each
// task route's own enqueuer (REPLAY_INVOKERS follows tasks.ReplayInvokersOf), and the console may
// act as exactly those invokers: a replayed inbound task carries the webhook's invoker, which the
// worker admits there, and not the console's, which it would refuse.
func TestConsoleReplaysAsTheRoutesEnqueuer(t *testing.T) {
	t.Parallel()
	m := loadModule(t)
	v, err := m.eval(m.localExpr(t, "replay_invokers"), accountsCtx())
	if err != nil {
		t.Fatalf("local.replay_invokers: %v", err)
	}
	got := map[string]string{}
	for path, e := range v.AsValueMap() {
		got[path] = e.AsString()
	}
	want := map[string]string(tasks.ReplayInvokersOf(tasks.Console, func(c tasks.Caller) string { return invokerEmail(string(c)) }))
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("local.replay_invokers (-tasks.ReplayInvokersOf, +terraform):\n%s", diff)
	}
	env := m.serviceEnv(t, services["console"])
	if e := env["REPLAY_INVOKERS"]; e == nil || m.text(attrExpr(e.Body, "value")) != "jsonencode(local.replay_invokers)" {
		t.Errorf("%s: REPLAY_INVOKERS must be jsonencode(local.replay_invokers)", services["console"])
	}
	// The console acts as its own invoker (enqueuer_acts_as_invoker) and as the others a replay
	// needs (console_replays_as), no more.
	keys, err := m.forEachKeys("google_service_account_iam_member.console_replays_as")
	if err != nil {
		t.Fatalf("console_replays_as: %v", err)
	}
	var others []string
	for _, email := range want {
		if s := strings.TrimSuffix(strings.TrimPrefix(email, "invoker-"), "@p.iam.gserviceaccount.com"); s != "console" && !slices.Contains(others, s) {
			others = append(others, s)
		}
	}
	sort.Strings(others)
	if diff := cmp.Diff(others, keys); diff != "" {
		t.Errorf("the invokers the console may act as for replays (-REPLAY_INVOKERS, +terraform):\n%s", diff)
	}
	r := m.resources["google_service_account_iam_member.console_replays_as"]
	if m.text(attrExpr(r.Body, "member")) != `"serviceAccount:${google_service_account.console.email}"` ||
		m.text(attrExpr(r.Body, "service_account_id")) != "google_service_account.invoker[each.key].name" {
		t.Errorf("console_replays_as: want the console's runtime account a user of those invokers")
	}
}
