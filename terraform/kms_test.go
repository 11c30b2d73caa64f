package terraform

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/tasks"
)

// TestKMSKeysPerPurpose: tenant secrets and connect states each have a rotating key in a key ring
// of its own, and each service is given the name of exactly the keys it uses.
func TestKMSKeysPerPurpose(t *testing.T) {
	t.Parallel()
	m := loadModule(t)

	if keys := m.resourcesOfType("google_kms_crypto_key"); !slices.Equal(keys, []string{
		"google_kms_crypto_key.connect_states", "google_kms_crypto_key.tenant_secrets",
	}) {
		t.Fatalf("crypto keys %v, want connect_states and tenant_secrets", keys)
	}
	rings := map[string]bool{}
	for _, addr := range m.resourcesOfType("google_kms_crypto_key") {
		key := m.resources[addr]
		if got, _ := literalString(attrExpr(key.Body, "purpose")); got != "ENCRYPT_DECRYPT" {
			t.Errorf("%s: purpose %q, want ENCRYPT_DECRYPT", addr, got)
		}
		if attrExpr(key.Body, "rotation_period") == nil {
			t.Errorf("%s: no rotation_period", addr)
		}
		rings[m.text(attrExpr(key.Body, "key_ring"))] = true
	}
	if len(rings) != 2 {
		t.Errorf("the keys share a key ring (%v): a grant on the ring would cover both purposes", rings)
	}
	for local, want := range map[string]string{
		"kms_key_name":               "google_kms_crypto_key.tenant_secrets.id",
		"connect_state_kms_key_name": "google_kms_crypto_key.connect_states.id",
	} {
		if got := m.text(m.localExpr(t, local)); got != want {
			t.Errorf("local.%s = %s, want %s (the key's full name, not a version)", local, got, want)
		}
	}

	// Which key variables each service gets: those it uses, and no other.
	want := map[string]map[string]string{
		"webhook": {},
		"worker":  {"KMS_KEY_NAME": "local.kms_key_name"},
		"api":     {"KMS_KEY_NAME": "local.kms_key_name", "CONNECT_STATE_KMS_KEY_NAME": "local.connect_state_kms_key_name"},
		"console": {"CONNECT_STATE_KMS_KEY_NAME": "local.connect_state_kms_key_name"},
	}
	for svc, keys := range want {
		env := m.serviceEnv(t, services[svc])
		for _, name := range []string{"KMS_KEY_NAME", "CONNECT_STATE_KMS_KEY_NAME"} {
			got := ""
			if env[name] != nil {
				got = m.text(attrExpr(env[name].Body, "value"))
			}
			if got != keys[name] {
				t.Errorf("%s: %s = %q, want %q", svc, name, got, keys[name])
			}
		}
	}
}

// decryptRoles can open a KMS ciphertext, or grant themselves the right to: none of them may
// reach a public service on the tenant secrets' key, its key ring or the project.
var decryptRoles = []string{
	"roles/cloudkms.cryptoKeyDecrypter",
	"roles/cloudkms.cryptoKeyEncrypterDecrypter",
	"roles/cloudkms.cryptoKeyDecrypterViaDelegation",
	"roles/cloudkms.cryptoKeyEncrypterDecrypterViaDelegation",
	"roles/cloudkms.cryptoOperator",
	"roles/cloudkms.admin",
	"roles/owner",
	"roles/editor",
	"roles/iam.securityAdmin",
	"roles/resourcemanager.projectIamAdmin",
}

// TestPublicServicesCannotReadTenantSecrets (issue 21 item 6): the webhook and the api face the
// internet, so neither may decrypt with the tenant secrets' key, by a grant on the key, on its key
// ring or on the project, nor act as an account that may (the worker's).
func TestPublicServicesCannotReadTenantSecrets(t *testing.T) {
	t.Parallel()
	grants := loadGrants(t)
	tenantScopes := []string{"google_kms_crypto_key.tenant_secrets.id", "google_kms_key_ring.wapipe.id", "project"}
	for _, public := range []string{"webhook", "api"} {
		for _, g := range grants[public] {
			if slices.Contains(decryptRoles, g.role) && slices.ContainsFunc(tenantScopes, func(s string) bool { return strings.HasPrefix(g.target, s) }) {
				t.Errorf("%s holds %s on %s (%s): a public service must not read tenant secrets", public, g.role, g.target, g.addr)
			}
			if g.role == "roles/iam.serviceAccountUser" || g.role == "roles/iam.serviceAccountTokenCreator" {
				if own := `google_service_account.invoker["` + public + `"].name`; g.target != own {
					t.Errorf("%s may act as %s (%s): only as its own task invoker, which holds no key", public, g.target, g.addr)
				}
			}
		}
	}
}

// TestGrantsPerIdentity (issue 21 item 6): every IAM grant of the module, by identity, is exactly
// the table below: what each service needs, with the reason beside it. A new grant must be added
// here on purpose.
func TestGrantsPerIdentity(t *testing.T) {
	t.Parallel()
	const (
		project      = "project"
		tenantKey    = "google_kms_crypto_key.tenant_secrets.id"
		stateKey     = "google_kms_crypto_key.connect_states.id"
		inbound      = `google_cloud_tasks_queue.queue["wa-inbound"].name`
		outbound     = `google_cloud_tasks_queue.queue["wa-outbound"].name`
		tenantQueues = `project if resource.name.startsWith("projects/project/locations/var.tasks_location/queues/wa-out-")`
		mainDB       = `resource.name == "projects/project/databases/google_firestore_database.database.name"`
		inboundDB    = `resource.name == "projects/project/databases/google_firestore_database.inbound.name"`
	)
	secret := func(env string) string { return `google_secret_manager_secret.secret["` + env + `"].secret_id` }
	// Every runtime service writes logs and traces, and its tasks carry an OIDC token of its own
	// invoker account, and of no other's (routes_test.go).
	runtime := []string{
		"roles/logging.logWriter on " + project,
		"roles/cloudtrace.agent on " + project,
		"roles/secretmanager.secretAccessor on " + secret("INTERNAL_TASK_TOKEN"),
		"roles/secretmanager.secretAccessor on " + secret("LOG_HASH_KEY"),
	}
	actsAsOwnInvoker := func(service string) string {
		return `roles/iam.serviceAccountUser on google_service_account.invoker["` + service + `"].name`
	}
	// The invokers and the scheduler may invoke the worker; its check (ROUTE_CALLERS) says on
	// which routes.
	invokesWorker := []string{"roles/run.invoker on google_cloud_run_v2_service.worker.name"}
	want := map[string][]string{
		"webhook": append(slices.Clone(runtime), actsAsOwnInvoker("webhook"),
			"roles/datastore.user on "+project+" if "+inboundDB, // its markers and payloads, nothing else
			"roles/cloudtasks.enqueuer on "+inbound,
			"roles/secretmanager.secretAccessor on "+secret("WHATSAPP_APP_SECRET"),
			"roles/secretmanager.secretAccessor on "+secret("WHATSAPP_VERIFY_TOKEN"),
		),
		"worker": append(slices.Clone(runtime), actsAsOwnInvoker("worker"),
			"roles/datastore.user on "+project+" if "+mainDB+" || "+inboundDB, // reads payloads
			"roles/aiplatform.user on "+project,                               // the assistant's Gemini calls
			"roles/cloudtasks.enqueuer on "+outbound,
			"roles/cloudtasks.enqueuer on "+tenantQueues,
			"roles/cloudtasks.viewer on "+inbound, // health
			"roles/cloudtasks.viewer on "+outbound,
			"roles/cloudtasks.viewer on "+tenantQueues, // health: each tenant's backlog
			"roles/secretmanager.secretAccessor on "+secret("WHATSAPP_ACCESS_TOKEN"),
			"roles/cloudkms.cryptoKeyDecrypter on "+tenantKey, // sends with tenants' tokens, signs actions
		),
		"api": append(slices.Clone(runtime), actsAsOwnInvoker("api"),
			"roles/datastore.user on "+project+" if "+mainDB,                       // never the webhook's data
			"roles/cloudtasks.enqueuer on "+tenantQueues,                           // POST /v1/messages
			"roles/secretmanager.secretAccessor on "+secret("WHATSAPP_APP_SECRET"), // code exchange
			"roles/cloudkms.cryptoKeyEncrypter on "+tenantKey,                      // Embedded Signup stores a token
			"roles/cloudkms.cryptoKeyEncrypterDecrypter on "+stateKey,              // opens connect states
			"roles/run.invoker on google_cloud_run_v2_service.worker.name",         // media uploads, templates
		),
		"console": append(slices.Clone(runtime), actsAsOwnInvoker("console"),
			// Its replays act as the route's own enqueuer (REPLAY_INVOKERS).
			actsAsOwnInvoker("webhook"), actsAsOwnInvoker("worker"),
			"roles/datastore.user on "+project+" if "+mainDB+" || "+inboundDB, // inspects markers
			"roles/cloudtasks.viewer on "+inbound,
			"roles/cloudtasks.viewer on "+outbound,
			"roles/cloudtasks.viewer on "+tenantQueues,
			"roles/cloudtasks.enqueuer on "+inbound, // replays
			"roles/cloudtasks.enqueuer on "+outbound,
			"roles/cloudtasks.enqueuer on "+tenantQueues,
			"roles/cloudkms.cryptoKeyEncrypter on "+stateKey,               // Reconnect links
			"roles/run.invoker on google_cloud_run_v2_service.worker.name", // a message's image
		),
		// var.operators (here one group): apply, set-token, action-secret, connect-link.
		"group:operators": {
			"roles/cloudtasks.queueAdmin on " + project,
			"roles/datastore.user on " + project,
			"roles/cloudkms.cryptoKeyEncrypter on " + tenantKey,
			"roles/cloudkms.cryptoKeyEncrypter on " + stateKey,
		},
		`invoker["webhook"]`: invokesWorker,
		`invoker["api"]`:     invokesWorker,
		`invoker["console"]`: invokesWorker,
		`invoker["worker"]`:  invokesWorker,
		"scheduler":          invokesWorker,
		// Meta and businesses call the public services without Google credentials.
		"allUsers": {
			"roles/run.invoker on google_cloud_run_v2_service.webhook.name",
			"roles/run.invoker on google_cloud_run_v2_service.api.name",
		},
		// var.console_invokers (here one group).
		"group:console-users": {"roles/run.invoker on google_cloud_run_v2_service.console.name"},
		// Cloud Build: push the image, deploy revisions that run as the runtime accounts.
		"deployer": {
			"roles/artifactregistry.writer on google_artifact_registry_repository.images.name",
			"roles/logging.logWriter on " + project,
			"roles/run.developer on google_cloud_run_v2_service.webhook.name",
			"roles/run.developer on google_cloud_run_v2_service.worker.name",
			"roles/run.developer on google_cloud_run_v2_service.api.name",
			"roles/run.developer on google_cloud_run_v2_service.console.name",
			"roles/iam.serviceAccountUser on google_service_account.webhook.name",
			"roles/iam.serviceAccountUser on google_service_account.worker.name",
			"roles/iam.serviceAccountUser on google_service_account.api.name",
			"roles/iam.serviceAccountUser on google_service_account.console.name",
		},
	}
	grants := loadGrants(t)
	for who := range grants {
		if want[who] == nil {
			t.Errorf("%s holds grants the table does not list: %v", who, grants[who])
		}
	}
	for who, w := range want {
		var got []string
		for _, g := range grants[who] {
			got = append(got, g.role+" on "+g.target)
		}
		slices.Sort(got)
		slices.Sort(w)
		if diff := cmp.Diff(w, got); diff != "" {
			t.Errorf("grants of %s (-want, +got):\n%s", who, diff)
		}
	}
	// No role anywhere can open every key of the project.
	for who, gs := range grants {
		for _, g := range gs {
			if g.target == project && slices.Contains(decryptRoles, g.role) {
				t.Errorf("%s holds %s on the project (%s)", who, g.role, g.addr)
			}
		}
	}
}

// grant is one evaluated IAM grant: a role on a target for a member.
type grant struct {
	addr, role, target string
}

// loadGrants evaluates every IAM resource of the module (each for_each instance), with symbolic
// values for what only exists once applied: an attribute of a resource evaluates to its own
// address ("google_kms_crypto_key.tenant_secrets.id"), var.project_id to "project", the operators
// to one group "group:operators". The grants are keyed by identity: a service account's short
// name ("worker"), or the member as written. An IAM resource that does not evaluate fails the
// test, so none escapes the table.
func loadGrants(t *testing.T) map[string][]grant {
	t.Helper()
	m := loadModule(t)
	ctx := m.symbolicContext(t)
	out := map[string][]grant{}
	for _, addr := range m.sortedResources() {
		r := m.resources[addr]
		if !strings.Contains(r.Labels[0], "_iam_") {
			continue
		}
		if !strings.HasSuffix(r.Labels[0], "_iam_member") {
			t.Errorf("%s: only _iam_member resources are checked here (a binding or policy replaces others' grants)", addr)
			continue
		}
		instances := []map[string]cty.Value{nil}
		if fe := attrExpr(r.Body, "for_each"); fe != nil {
			v, diags := fe.Value(ctx)
			if diags.HasErrors() {
				t.Errorf("%s: for_each: %v", addr, diags)
				continue
			}
			instances = nil
			for k, val := range eachOf(v) {
				instances = append(instances, map[string]cty.Value{"each": cty.ObjectVal(map[string]cty.Value{"key": cty.StringVal(k), "value": val})})
			}
		}
		for _, each := range instances {
			child := ctx.NewChild()
			child.Variables = each
			str := func(name string) string {
				e := attrExpr(r.Body, name)
				if e == nil {
					return ""
				}
				v, diags := e.Value(child)
				if diags.HasErrors() || !v.IsWhollyKnown() || v.Type() != cty.String {
					t.Errorf("%s: %s = %s does not evaluate to a string: %v", addr, name, m.text(e), diags)
					return ""
				}
				return v.AsString()
			}
			g := grant{addr: addr, role: str("role")}
			for _, name := range []string{"crypto_key_id", "key_ring_id", "service_account_id", "secret_id", "repository", "name", "project"} {
				if attrExpr(r.Body, name) != nil {
					g.target = str(name)
					break
				}
			}
			for _, c := range childBlocks(r.Body, "condition") {
				v, diags := attrExpr(c.Body, "expression").Value(child)
				if diags.HasErrors() || !v.IsWhollyKnown() {
					t.Errorf("%s: condition does not evaluate: %v", addr, diags)
					continue
				}
				g.target += " if " + v.AsString()
			}
			member := str("member")
			who := member
			if sa, ok := strings.CutPrefix(member, "serviceAccount:google_service_account."); ok {
				who = strings.TrimSuffix(sa, ".email")
			}
			out[who] = append(out[who], g)
		}
	}
	return out
}

// eachOf returns a for_each value's instances: a map's or object's entries, a set's strings.
func eachOf(v cty.Value) map[string]cty.Value {
	out := map[string]cty.Value{}
	switch {
	case v.Type().IsMapType() || v.Type().IsObjectType():
		maps.Copy(out, v.AsValueMap())
	case v.Type().IsSetType() || v.Type().IsListType() || v.Type().IsTupleType():
		for _, k := range v.AsValueSlice() {
			out[k.AsString()] = k
		}
	}
	return out
}

// symbolicContext is an evaluation context for the whole module: variables take their default
// (var.project_id "project", var.operators one group), resources and data sources are objects whose
// attributes name themselves, and the locals are evaluated on top.
func (m *module) symbolicContext(t *testing.T) *hcl.EvalContext {
	t.Helper()
	attrs := []string{"id", "name", "email", "location", "secret_id", "repository", "repository_id", "uri", "number", "project"}
	self := func(prefix string) cty.Value {
		obj := map[string]cty.Value{}
		for _, a := range attrs {
			obj[a] = cty.StringVal(prefix + "." + a)
		}
		return cty.ObjectVal(obj)
	}
	ctx := &hcl.EvalContext{Variables: map[string]cty.Value{}, Functions: m.ctx.Functions}
	ctx.Variables["path"] = m.ctx.Variables["path"]

	vars := map[string]cty.Value{}
	for name, v := range m.variables {
		vars[name] = cty.StringVal("var." + name)
		if def := attrExpr(v.Body, "default"); def != nil {
			if val, diags := def.Value(m.ctx); !diags.HasErrors() && val.IsWhollyKnown() && !val.IsNull() {
				vars[name] = val
			}
		}
	}
	vars["project_id"] = cty.StringVal("project")
	vars["operators"] = cty.ListVal([]cty.Value{cty.StringVal("group:operators")})
	vars["console_invokers"] = cty.ListVal([]cty.Value{cty.StringVal("group:console-users")})
	ctx.Variables["var"] = cty.ObjectVal(vars)

	byType := map[string]map[string]cty.Value{}
	for _, addr := range m.sortedResources() {
		typ, name, _ := strings.Cut(addr, ".")
		if byType[typ] == nil {
			byType[typ] = map[string]cty.Value{}
		}
		byType[typ][name] = self(addr)
		if keys, err := m.forEachKeys(addr); err == nil {
			inst := map[string]cty.Value{}
			for _, k := range keys {
				inst[k] = self(addr + `["` + k + `"]`)
			}
			byType[typ][name] = cty.ObjectVal(inst)
		}
	}
	for typ, objs := range byType {
		ctx.Variables[typ] = cty.ObjectVal(objs)
	}
	data := map[string]cty.Value{}
	for addr := range m.data {
		typ, name, _ := strings.Cut(addr, ".")
		objs := map[string]cty.Value{}
		if d, ok := data[typ]; ok {
			objs = d.AsValueMap()
		}
		objs[name] = self("data." + addr)
		data[typ] = cty.ObjectVal(objs)
	}
	ctx.Variables["data"] = cty.ObjectVal(data)

	evalLocals(ctx, m.locals)
	return ctx
}

// TestOperatorsAndTenantQueues: operators get what apply and set-token need; the worker may
// enqueue on tenant queues created after Terraform ran, and only on those.
func TestOperatorsAndTenantQueues(t *testing.T) {
	t.Parallel()
	m := loadModule(t)
	v := m.variables["operators"]
	if v == nil || m.text(attrExpr(v.Body, "default")) != "[]" {
		t.Fatalf("want variable operators with default []")
	}
	roles := m.text(m.localExpr(t, "operator_project_roles"))
	for _, role := range []string{"roles/cloudtasks.queueAdmin", "roles/datastore.user"} {
		if !strings.Contains(roles, role) {
			t.Errorf("local.operator_project_roles lacks %s", role)
		}
	}

	r := m.resources["google_project_iam_member.worker_enqueues_tenant_queues"]
	if r == nil {
		t.Fatal("no google_project_iam_member.worker_enqueues_tenant_queues")
	}
	if role, _ := literalString(attrExpr(r.Body, "role")); role != "roles/cloudtasks.enqueuer" {
		t.Errorf("worker tenant queue role %q, want roles/cloudtasks.enqueuer", role)
	}
	conds := childBlocks(r.Body, "condition")
	if len(conds) != 1 {
		t.Fatal("the project-level enqueuer grant has no condition")
	}
	expr := m.text(attrExpr(conds[0].Body, "expression"))
	if !strings.Contains(expr, "resource.name.startsWith") || !strings.Contains(expr, "/queues/"+tasks.TenantQueuePrefix) {
		t.Errorf("condition %s, want resource.name.startsWith(…/queues/%s)", expr, tasks.TenantQueuePrefix)
	}
}

// TestWorkerCallsVertexAI: the assistant calls Gemini with the worker's own identity, so the
// worker, and only it, holds roles/aiplatform.user, and the API is enabled.
func TestWorkerCallsVertexAI(t *testing.T) {
	t.Parallel()
	m := loadModule(t)
	var holders []string
	for addr, r := range m.resources {
		if role, _ := literalString(attrExpr(r.Body, "role")); role == "roles/aiplatform.user" {
			holders = append(holders, addr+" "+m.text(attrExpr(r.Body, "member")))
		}
	}
	if len(holders) != 1 || !strings.Contains(holders[0], "google_service_account.worker.email") {
		t.Errorf("roles/aiplatform.user held by %v, want the worker's service account only", holders)
	}
	if apis := m.text(attrExpr(m.resources["google_project_service.api"].Body, "for_each")); !strings.Contains(apis, "aiplatform.googleapis.com") {
		t.Errorf("aiplatform.googleapis.com is not enabled: %s", apis)
	}
}

// TestWebhookHasItsOwnDatabase (issue 21 item 6): what the webhook writes (the dedupe markers
// and the payloads under them) lives in a database of its own, with its TTL policies there, and
// the services that read it are told where it is.
func TestWebhookHasItsOwnDatabase(t *testing.T) {
	t.Parallel()
	m := loadModule(t)
	const inbound = "google_firestore_database.inbound.name"
	r := m.resources["google_firestore_field.inbound_expire_at"]
	if r == nil {
		t.Fatal("no google_firestore_field.inbound_expire_at")
	}
	if got := m.text(attrExpr(r.Body, "database")); got != inbound {
		t.Errorf("inbound TTL policies on %s, want %s", got, inbound)
	}
	keys, err := m.forEachKeys("google_firestore_field.inbound_expire_at")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{store.InboundEvents, store.PayloadChunks}; !slices.Equal(keys, want) {
		t.Errorf("inbound database collections %v, want %v (what the webhook writes)", keys, want)
	}
	for svc, want := range map[string]string{"webhook": inbound, "worker": inbound, "console": inbound, "api": ""} {
		got := ""
		if e := m.serviceEnv(t, services[svc])["INBOUND_FIRESTORE_DATABASE"]; e != nil {
			got = m.text(attrExpr(e.Body, "value"))
		}
		if got != want {
			t.Errorf("%s: INBOUND_FIRESTORE_DATABASE = %q, want %q", svc, got, want)
		}
	}
}

// TestNoDefaultTokenSecretWithoutDefault (issue 21 item 7): every service refuses a secret left
// at its placeholder, so a deployment of tenants only (var.single_tenant_default = false) has no
// WHATSAPP_ACCESS_TOKEN secret to fill in: none is created, granted or read.
func TestNoDefaultTokenSecretWithoutDefault(t *testing.T) {
	t.Parallel()
	m := loadModule(t)
	if def := m.text(attrExpr(m.variables["single_tenant_default"].Body, "default")); def != "true" {
		t.Errorf("single_tenant_default defaults to %s, want true (what deployments had)", def)
	}
	for _, on := range []bool{true, false} {
		ctx := m.ctx.NewChild()
		vars := m.ctx.Variables["var"].AsValueMap()
		vars["single_tenant_default"] = cty.BoolVal(on)
		ctx.Variables = map[string]cty.Value{"var": cty.ObjectVal(vars)}
		readers, diags := m.localExpr(t, "secret_readers").Value(ctx)
		if diags.HasErrors() {
			t.Fatalf("local.secret_readers: %v", diags)
		}
		if got := readers.Type().HasAttribute("WHATSAPP_ACCESS_TOKEN"); got != on {
			t.Errorf("single_tenant_default = %v: WHATSAPP_ACCESS_TOKEN secret %v, want %v", on, got, on)
		}
		var names []string
		for _, d := range childBlocks(m.container(t, services["worker"]).Body, "dynamic") {
			v, diags := attrExpr(d.Body, "for_each").Value(ctx)
			if diags.HasErrors() {
				t.Fatalf("worker dynamic env: %v", diags)
			}
			for _, n := range v.AsValueSlice() {
				names = append(names, n.AsString())
			}
		}
		if got := slices.Contains(names, "WHATSAPP_ACCESS_TOKEN"); got != on {
			t.Errorf("single_tenant_default = %v: worker reads WHATSAPP_ACCESS_TOKEN %v, want %v", on, got, on)
		}
	}
}
