package terraform

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/sethvargo/go-envconfig"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
	"github.com/zclconf/go-cty/cty/function"
	"github.com/zclconf/go-cty/cty/function/stdlib"
	ctyjson "github.com/zclconf/go-cty/cty/json"
	"gopkg.in/yaml.v3"

	"github.com/wapipe/wapipe/internal/api"
	"github.com/wapipe/wapipe/internal/config"
	"github.com/wapipe/wapipe/internal/console"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/webhook"
	"github.com/wapipe/wapipe/internal/worker"
	"github.com/wapipe/wapipe/tasks"
)

// queuesFile is tasks/queues.yaml as seen from this directory, where `go test` runs.
const queuesFile = "../tasks/queues.yaml"

// The Cloud Run services, by the short name the tests use, and their resource addresses.
var services = map[string]string{
	"webhook": "google_cloud_run_v2_service.webhook",
	"worker":  "google_cloud_run_v2_service.worker",
	"api":     "google_cloud_run_v2_service.api",
	"console": "google_cloud_run_v2_service.console",
}

// secretEnv lists the variables that carry secrets: each must come from Secret Manager.
var secretEnv = []string{"INTERNAL_TASK_TOKEN", "LOG_HASH_KEY", "WHATSAPP_ACCESS_TOKEN", "WHATSAPP_APP_SECRET", "WHATSAPP_VERIFY_TOKEN"}

func TestQueuesComeFromQueuesYAML(t *testing.T) {
	t.Parallel()
	m := loadModule(t)
	want, err := tasks.LoadQueues(queuesFile)
	if err != nil {
		t.Fatalf("tasks.LoadQueues: %v", err)
	}

	queues := m.resourcesOfType("google_cloud_tasks_queue")
	if len(queues) != 1 {
		t.Fatalf("want one google_cloud_tasks_queue resource (for_each over queues.yaml), got %v", queues)
	}
	addr := queues[0]
	r := m.resources[addr]

	// for_each is yamldecode(file(".../tasks/queues.yaml")).queues, and it names the same file.
	forEach := attrExpr(r.Body, "for_each")
	if forEach == nil {
		t.Fatalf("%s: no for_each", addr)
	}
	rel, ok := forEach.(*hclsyntax.RelativeTraversalExpr)
	if !ok || traversalString(rel.Traversal) != ".queues" {
		t.Fatalf("%s: for_each = %s, want yamldecode(file(...)).queues", addr, m.text(forEach))
	}
	decode, ok := rel.Source.(*hclsyntax.FunctionCallExpr)
	if !ok || decode.Name != "yamldecode" || len(decode.Args) != 1 {
		t.Fatalf("%s: for_each = %s, want yamldecode(file(...)).queues", addr, m.text(forEach))
	}
	file, ok := decode.Args[0].(*hclsyntax.FunctionCallExpr)
	if !ok || file.Name != "file" || len(file.Args) != 1 {
		t.Fatalf("%s: for_each = %s, want yamldecode(file(...)).queues", addr, m.text(forEach))
	}
	path, err := m.eval(file.Args[0], nil)
	if err != nil {
		t.Fatalf("%s: file argument %s: %v", addr, m.text(file.Args[0]), err)
	}
	if got, wantPath := filepath.Clean(path.AsString()), filepath.Clean(queuesFile); got != wantPath {
		t.Errorf("%s: reads %s, want %s", addr, got, wantPath)
	}

	// The queue ids are the file's.
	keys, err := m.forEachKeys(addr)
	if err != nil {
		t.Fatalf("%s: for_each: %v", addr, err)
	}
	if diff := cmp.Diff(want.IDs(), keys); diff != "" {
		t.Errorf("%s: queue ids (-queues.yaml, +terraform):\n%s", addr, diff)
	}
	if got := m.text(attrExpr(r.Body, "name")); got != "each.key" {
		t.Errorf("%s: name = %s, want each.key", addr, got)
	}

	// Every block and field of tasks.Queue (the file's schema) is a block and attribute here, set
	// from each.value and nothing else, and evaluates to what the Go loader read.
	raw := rawQueueKeys(t)
	for _, blockField := range yamlFields(reflect.TypeFor[tasks.Queue]()) {
		t.Run(blockField.name, func(t *testing.T) {
			blocks := childBlocks(r.Body, blockField.name)
			if len(blocks) != 1 {
				t.Fatalf("%s: want one %s block, got %d", addr, blockField.name, len(blocks))
			}
			body := blocks[0].Body
			fields := yamlFields(blockField.typ)
			var names []string
			for _, f := range fields {
				names = append(names, f.name)
			}
			var got []string
			for name := range body.Attributes {
				got = append(got, name)
			}
			sort.Strings(names)
			sort.Strings(got)
			if diff := cmp.Diff(names, got); diff != "" {
				t.Errorf("%s.%s attributes (-tasks.Queue, +terraform):\n%s", addr, blockField.name, diff)
			}
			for _, f := range fields {
				e := attrExpr(body, f.name)
				if e == nil {
					continue
				}
				if want := "each.value." + blockField.name + "." + f.name; m.text(e) != want {
					t.Errorf("%s.%s.%s = %s, want %s", addr, blockField.name, f.name, m.text(e), want)
				}
			}
			// Every key the file sets in this block is one Terraform reads.
			for _, id := range want.IDs() {
				for _, key := range raw[id][blockField.name] {
					if !slices.Contains(names, key) {
						t.Errorf("queues.yaml: %s.%s.%s is not read by Terraform", id, blockField.name, key)
					}
				}
			}
		})
	}
	for _, id := range want.IDs() {
		for block := range raw[id] {
			if len(childBlocks(r.Body, block)) == 0 {
				t.Errorf("queues.yaml: %s.%s is not read by Terraform", id, block)
			}
		}
	}

	// Evaluated per queue, the settings are the values the code uses.
	all, err := m.eval(forEach, nil)
	if err != nil {
		t.Fatalf("%s: for_each: %v", addr, err)
	}
	for _, id := range want.IDs() {
		q := want.Queues[id]
		each := map[string]cty.Value{"each": cty.ObjectVal(map[string]cty.Value{
			"key":   cty.StringVal(id),
			"value": all.GetAttr(id),
		})}
		for _, tc := range []struct {
			block, field string
			want         any
		}{
			{"rate_limits", "max_dispatches_per_second", q.RateLimits.MaxDispatchesPerSecond},
			{"rate_limits", "max_concurrent_dispatches", float64(q.RateLimits.MaxConcurrentDispatches)},
			{"retry_config", "max_attempts", float64(q.RetryConfig.MaxAttempts)},
			{"retry_config", "min_backoff", q.RetryConfig.MinBackoff.Duration},
			{"retry_config", "max_backoff", q.RetryConfig.MaxBackoff.Duration},
			{"retry_config", "max_doublings", float64(q.RetryConfig.MaxDoublings)},
			{"retry_config", "max_retry_duration", q.RetryConfig.MaxRetryDuration.Duration},
			{"stackdriver_logging_config", "sampling_ratio", q.StackdriverLogging.SamplingRatio},
		} {
			blocks := childBlocks(r.Body, tc.block)
			if len(blocks) == 0 || attrExpr(blocks[0].Body, tc.field) == nil {
				continue // reported above
			}
			v, err := m.eval(attrExpr(blocks[0].Body, tc.field), each)
			if err != nil {
				t.Errorf("queue %s: %s.%s: %v", id, tc.block, tc.field, err)
				continue
			}
			var got any
			switch {
			case v.Type() == cty.Number:
				got, _ = v.AsBigFloat().Float64()
			case v.Type() == cty.String:
				d, err := time.ParseDuration(v.AsString())
				if err != nil {
					t.Errorf("queue %s: %s.%s = %q: not a duration", id, tc.block, tc.field, v.AsString())
					continue
				}
				got = d
			default:
				t.Errorf("queue %s: %s.%s has type %s", id, tc.block, tc.field, v.Type().FriendlyName())
				continue
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("queue %s: %s.%s (-code, +terraform):\n%s", id, tc.block, tc.field, diff)
			}
		}
	}

	// The queues the services use are the ones the code names.
	for local, id := range map[string]string{"inbound_queue": tasks.InboundQueueID, "outbound_queue": tasks.OutboundQueueID} {
		want := fmt.Sprintf("%s[%q]", addr, id)
		if got := m.text(m.localExpr(t, local)); got != want {
			t.Errorf("local.%s = %s, want %s", local, got, want)
		}
	}
}

func TestFirestoreTTLPolicies(t *testing.T) {
	t.Parallel()
	m := loadModule(t)

	// collection group -> the resource addresses with a TTL policy on expire_at for it.
	covered := map[string][]string{}
	for _, addr := range m.resourcesOfType("google_firestore_field") {
		r := m.resources[addr]
		field, ok := literalString(attrExpr(r.Body, "field"))
		if !ok || field != store.ExpireAtField || len(childBlocks(r.Body, "ttl_config")) != 1 {
			continue
		}
		if len(childBlocks(r.Body, "index_config")) != 1 {
			t.Errorf("%s: want an index_config block (expire_at is never queried; an index on it is a write hot spot)", addr)
		}
		collection := attrExpr(r.Body, "collection")
		if name, ok := literalString(collection); ok {
			covered[name] = append(covered[name], addr)
			continue
		}
		if m.text(collection) != "each.value" && m.text(collection) != "each.key" {
			t.Errorf("%s: collection = %s, want a literal or each.value", addr, m.text(collection))
			continue
		}
		keys, err := m.forEachKeys(addr)
		if err != nil {
			t.Errorf("%s: for_each: %v", addr, err)
			continue
		}
		for _, k := range keys {
			covered[k] = append(covered[k], addr)
		}
	}

	for _, c := range store.Collections() {
		t.Run(c, func(t *testing.T) {
			t.Parallel()
			if len(covered[c]) != 1 {
				t.Errorf("collection group %s: want one google_firestore_field with ttl_config on %s, got %v", c, store.ExpireAtField, covered[c])
			}
		})
	}
	for c := range covered {
		if !slices.Contains(store.Collections(), c) {
			t.Errorf("TTL policy on collection group %s, which store.Collections() does not list", c)
		}
	}
}

func TestServiceEnvironment(t *testing.T) {
	t.Parallel()
	m := loadModule(t)

	for _, tc := range []struct {
		service string
		config  any
		// Optional in Config, but production needs them set explicitly (the contract's variables).
		contract []string
	}{
		{
			service:  "webhook",
			config:   webhook.Config{},
			contract: []string{"APP_ENV", "FIRESTORE_DATABASE", "INBOUND_FIRESTORE_DATABASE", "TASKS_SERVICE_ACCOUNT_EMAIL", "INBOUND_TASK_QUEUE_NAME"},
		},
		{
			service:  "console",
			config:   console.Config{},
			contract: []string{"APP_ENV", "FIRESTORE_DATABASE", "INBOUND_FIRESTORE_DATABASE", "TASKS_SERVICE_ACCOUNT_EMAIL", "INBOUND_TASK_QUEUE_NAME", "OUTBOUND_TASK_QUEUE_NAME", "PUBLIC_BASE_URL", "CONNECT_STATE_KMS_KEY_NAME"},
		},
		{
			service:  "worker",
			config:   worker.Config{},
			contract: []string{"APP_ENV", "FIRESTORE_DATABASE", "INBOUND_FIRESTORE_DATABASE", "TASKS_SERVICE_ACCOUNT_EMAIL", "INBOUND_TASK_QUEUE_NAME", "OUTBOUND_TASK_QUEUE_NAME", "GRAPH_API_BASE_URL", "KMS_KEY_NAME", "ROUTE_CALLERS"},
		},
		{
			service:  "api",
			config:   api.Config{},
			contract: []string{"APP_ENV", "FIRESTORE_DATABASE", "TASKS_SERVICE_ACCOUNT_EMAIL", "GRAPH_API_BASE_URL", "KMS_KEY_NAME", "CONNECT_STATE_KMS_KEY_NAME", "META_APP_ID", "META_CONFIG_ID", "PUBLIC_BASE_URL", "FACEBOOK_DIALOG_URL"},
		},
	} {
		t.Run(tc.service, func(t *testing.T) {
			t.Parallel()
			addr := services[tc.service]
			known := envTags(reflect.TypeOf(tc.config))
			env := m.serviceEnv(t, addr)

			for name, tag := range known {
				if (tag.required || slices.Contains(tc.contract, name)) && env[name] == nil {
					t.Errorf("%s: %s is not set (required by %T)", addr, name, tc.config)
				}
			}
			for name := range env {
				if _, ok := known[name]; !ok {
					t.Errorf("%s: sets %s, which %T does not read", addr, name, tc.config)
				}
			}
			for _, name := range []string{
				"PORT",                      // Cloud Run sets it
				"FIRESTORE_EMULATOR_HOST",   // emulators only
				"CLOUD_TASKS_EMULATOR_HOST", // emulators only
			} {
				if env[name] != nil {
					t.Errorf("%s: must not set %s", addr, name)
				}
			}

			// A variable passed straight through defaults to what the code defaults to.
			for name, e := range env {
				value := attrExpr(e.Body, "value")
				if value == nil || !strings.HasPrefix(m.text(value), "var.") {
					continue
				}
				v := m.variables[strings.TrimPrefix(m.text(value), "var.")]
				if v == nil {
					continue // TestReferencesResolve reports it
				}
				def, ok := literalString(attrExpr(v.Body, "default"))
				if tag := known[name]; ok && tag.hasDefault && def != tag.def {
					t.Errorf("%s: %s = %s, whose default %q differs from the code's %q", addr, name, m.text(value), def, tag.def)
				}
			}

			// Both services target the worker at the same URL: it is also the tasks' OIDC audience.
			if got := m.text(attrExpr(env["INTERNAL_TASK_BASE_URL"].Body, "value")); got != "local.worker_url" {
				t.Errorf("%s: INTERNAL_TASK_BASE_URL = %s, want local.worker_url", addr, got)
			}
			// TASKS_SERVICE_ACCOUNT_EMAIL: each enqueuer's own invoker (routes_test.go).
		})
	}

	if url := m.text(m.localExpr(t, "worker_url")); !strings.HasPrefix(url, `"https://`) || !strings.HasSuffix(url, `.run.app"`) {
		t.Errorf("local.worker_url = %s, want an https run.app URL (APP_ENV staging and prod refuse http)", url)
	}
}

// TestWorkerTrustsCloudRunsIAMCheck (security item 1): the worker requires IAM, so Cloud Run checks
// each task's OIDC token and hands it on with its signature replaced by SIGNATURE_REMOVED_BY_GOOGLE.
// The worker is deployed with OIDC_VERIFIED_BY_PLATFORM=true, and with the environment this
// configuration gives it, such a token passes.
func TestWorkerTrustsCloudRunsIAMCheck(t *testing.T) {
	t.Parallel()
	m := loadModule(t)
	env := m.serviceEnv(t, services["worker"])
	e := env["OIDC_VERIFIED_BY_PLATFORM"]
	if e == nil {
		t.Fatalf("%s: OIDC_VERIFIED_BY_PLATFORM is not set: every task would be refused", services["worker"])
	}
	value, ok := literalString(attrExpr(e.Body, "value"))
	if !ok || value != "true" {
		t.Fatalf("%s: OIDC_VERIFIED_BY_PLATFORM = %s, want \"true\"", services["worker"], m.text(attrExpr(e.Body, "value")))
	}
	if webhookEnv := m.serviceEnv(t, services["webhook"]); webhookEnv["OIDC_VERIFIED_BY_PLATFORM"] != nil {
		t.Errorf("%s: sets OIDC_VERIFIED_BY_PLATFORM; only the IAM-only worker may", services["webhook"])
	}

	const workerURL, invoker = "https://wapipe-worker-123456789012.us-central1.run.app", "wapipe-tasks-invoker@p.iam.gserviceaccount.com"
	var cfg worker.Config
	err := config.Load(t.Context(), envconfig.MapLookuper(map[string]string{
		"GOOGLE_CLOUD_PROJECT":        "p",
		"TASKS_LOCATION":              "us-central1",
		"INTERNAL_TASK_BASE_URL":      workerURL,
		"INTERNAL_TASK_TOKEN":         "0123456789abcdef0123456789abcdef",
		"LOG_HASH_KEY":                "0123456789abcdef0123456789abcdef-log-key",
		"TASKS_SERVICE_ACCOUNT_EMAIL": invoker,
		"ROUTE_CALLERS":               routeCallersJSON(t, func(tasks.Caller, tasks.Via) string { return invoker }),
		"WHATSAPP_ACCESS_TOKEN":       "EAAG-test",
		"KMS_KEY_NAME":                "projects/p/locations/us-central1/keyRings/wapipe/cryptoKeys/tenant-secrets",
		"OIDC_VERIFIED_BY_PLATFORM":   value,
	}), &cfg)
	if err != nil {
		t.Fatalf("load the worker's configuration: %v", err)
	}
	claims, _ := json.Marshal(map[string]any{"iss": "https://accounts.google.com", "aud": workerURL,
		"exp": time.Now().Add(time.Hour).Unix(), "email": invoker, "email_verified": true})
	enc := base64.RawURLEncoding.EncodeToString
	token := enc([]byte(`{"alg":"RS256","typ":"JWT"}`)) + "." + enc(claims) + ".SIGNATURE_REMOVED_BY_GOOGLE"
	email, err := cfg.OIDCVerifier().Verify(t.Context(), token)
	if err != nil || email != invoker {
		t.Fatalf("a token as Cloud Run forwards it: Verify = %q, %v; want %s", email, err, invoker)
	}
}

func TestServiceContainers(t *testing.T) {
	t.Parallel()
	m := loadModule(t)
	dockerfile, err := os.ReadFile("../Dockerfile")
	if err != nil {
		t.Fatalf("read Dockerfile: %v", err)
	}

	for service, addr := range services {
		t.Run(service, func(t *testing.T) {
			t.Parallel()
			r := m.resources[addr]
			if r == nil {
				t.Fatalf("no %s", addr)
			}
			c := m.container(t, addr)

			// The command picks the binary the Dockerfile puts at /<service>, built from cmd/<service>.
			if got, want := m.text(attrExpr(c.Body, "command")), fmt.Sprintf("[%q]", "/"+service); got != want {
				t.Errorf("%s: command = %s, want %s", addr, got, want)
			}
			if !bytes.Contains(dockerfile, fmt.Appendf(nil, "/out/%s /%s\n", service, service)) {
				t.Errorf("Dockerfile: no COPY of the %s binary to /%s", service, service)
			}
			if _, err := os.Stat(filepath.Join("..", "cmd", service)); err != nil {
				t.Errorf("cmd/%s: %v", service, err)
			}

			// The probes' paths: TestProbes (probes_test.go).

			template := childBlocks(r.Body, "template")[0]
			for _, want := range []string{"max_instance_request_concurrency", "service_account"} {
				if attrExpr(template.Body, want) == nil {
					t.Errorf("%s: template.%s is not set", addr, want)
				}
			}
			if s := childBlocks(template.Body, "scaling"); len(s) != 1 || attrExpr(s[0].Body, "min_instance_count") == nil || attrExpr(s[0].Body, "max_instance_count") == nil {
				t.Errorf("%s: want template.scaling with min_instance_count and max_instance_count", addr)
			}
			if res := childBlocks(c.Body, "resources"); len(res) != 1 || attrExpr(res[0].Body, "startup_cpu_boost") == nil {
				t.Errorf("%s: want resources.startup_cpu_boost", addr)
			}

			// Cloud Build deploys the images: Terraform must not roll them back.
			ignored := m.ignoreChanges(r)
			for _, want := range []string{"template[0].containers[0].image", "client", "client_version"} {
				if !slices.Contains(ignored, want) {
					t.Errorf("%s: lifecycle.ignore_changes lacks %s (got %v)", addr, want, ignored)
				}
			}
		})
	}
}

func TestSecretsComeFromSecretManager(t *testing.T) {
	t.Parallel()
	m := loadModule(t)

	readersVal, err := m.eval(m.localExpr(t, "secret_readers"), nil)
	if err != nil {
		t.Fatalf("local.secret_readers: %v", err)
	}
	readers := map[string][]string{}
	for env, list := range readersVal.AsValueMap() {
		for _, r := range list.AsValueSlice() {
			readers[env] = append(readers[env], r.AsString())
		}
	}
	var declared []string
	for env := range readers {
		declared = append(declared, env)
	}
	sort.Strings(declared)
	if diff := cmp.Diff(secretEnv, declared); diff != "" {
		t.Errorf("local.secret_readers: secrets (-want, +got):\n%s", diff)
	}
	keys, err := m.forEachKeys("google_secret_manager_secret.secret")
	if err != nil {
		t.Fatalf("google_secret_manager_secret.secret: for_each: %v", err)
	}
	if diff := cmp.Diff(secretEnv, keys); diff != "" {
		t.Errorf("google_secret_manager_secret.secret: secrets (-want, +got):\n%s", diff)
	}

	for service, addr := range services {
		t.Run(service, func(t *testing.T) {
			t.Parallel()
			env := m.serviceEnv(t, addr)
			var reads, granted []string
			for name, e := range env {
				if !slices.Contains(secretEnv, name) {
					continue
				}
				reads = append(reads, name)
				if attrExpr(e.Body, "value") != nil {
					t.Errorf("%s: %s has a plain value; secrets come from Secret Manager only", addr, name)
				}
				var ref *hclsyntax.Block
				if vs := childBlocks(e.Body, "value_source"); len(vs) == 1 {
					if r := childBlocks(vs[0].Body, "secret_key_ref"); len(r) == 1 {
						ref = r[0]
					}
				}
				if ref == nil {
					t.Errorf("%s: %s: want value_source.secret_key_ref", addr, name)
					continue
				}
				// In a dynamic env block, env.value is the variable's name.
				got := strings.Replace(m.text(attrExpr(ref.Body, "secret")), "[env.value]", fmt.Sprintf("[%q]", name), 1)
				if want := fmt.Sprintf("google_secret_manager_secret.secret[%q].secret_id", name); got != want {
					t.Errorf("%s: %s: secret = %s, want %s", addr, name, got, want)
				}
				if attrExpr(ref.Body, "version") == nil {
					t.Errorf("%s: %s: secret_key_ref.version is not set", addr, name)
				}
			}
			for env, rs := range readers {
				if slices.Contains(rs, service) {
					granted = append(granted, env)
				}
			}
			sort.Strings(reads)
			sort.Strings(granted)
			if diff := cmp.Diff(granted, reads); diff != "" {
				t.Errorf("%s: secrets read (-granted in local.secret_readers, +read by the service):\n%s", addr, diff)
			}
		})
	}

	for _, addr := range m.resourcesOfType("google_secret_manager_secret_version") {
		if !slices.Contains(m.ignoreChanges(m.resources[addr]), "secret_data") {
			t.Errorf("%s: lifecycle.ignore_changes lacks secret_data: a rotation by gcloud would be undone", addr)
		}
	}
}

func TestWorkerIsPrivate(t *testing.T) {
	t.Parallel()
	m := loadModule(t)

	for _, tc := range []struct{ addr, ingress string }{
		// Cloud Tasks in the same project counts as internal traffic (services.tf says why).
		{services["worker"], "INGRESS_TRAFFIC_INTERNAL_ONLY"},
		{services["webhook"], "INGRESS_TRAFFIC_ALL"},
		// Reached through IAM (gcloud run services proxy) or IAP: open ingress, IAM required.
		{services["console"], "INGRESS_TRAFFIC_ALL"},
	} {
		r := m.resources[tc.addr]
		if r == nil {
			t.Fatalf("no %s", tc.addr)
		}
		if got, _ := literalString(attrExpr(r.Body, "ingress")); got != tc.ingress {
			t.Errorf("%s: ingress = %q, want %q", tc.addr, got, tc.ingress)
		}
	}
	for _, svc := range []string{"worker", "console"} {
		if e := attrExpr(m.resources[services[svc]].Body, "invoker_iam_disabled"); e != nil {
			t.Errorf("%s: invoker_iam_disabled is set: the %s must check IAM", services[svc], svc)
		}
	}

	// The enqueuers' invokers and the scheduler, in one grant over local.worker_token_invokers
	// (routes_test.go checks whose accounts those are).
	const invoker, invokersLocal = `"serviceAccount:${each.value}"`, "local.worker_token_invokers"
	// The api and the console call the worker's tenant routes (the worker admits them there only).
	internalCallers := []string{`"serviceAccount:${google_service_account.api.email}"`, `"serviceAccount:${google_service_account.console.email}"`}
	public := []string{`"allUsers"`, `"allAuthenticatedUsers"`}
	var workerInvokers, webhookPublic []string
	for _, addr := range m.sortedResources() {
		typ, _, _ := strings.Cut(addr, ".")
		r := m.resources[addr]
		members := m.members(r)
		role, _ := literalString(attrExpr(r.Body, "role"))
		switch {
		case strings.HasPrefix(typ, "google_cloud_run_v2_service_iam_") || strings.HasPrefix(typ, "google_cloud_run_service_iam_"):
			if typ == "google_cloud_run_v2_service_iam_policy" || typ == "google_cloud_run_service_iam_policy" {
				t.Errorf("%s: use iam_member grants, which this test can read", addr)
				continue
			}
			targets := m.iamTargets(t, r)
			for _, target := range targets {
				for _, member := range members {
					switch {
					case target == services["worker"] && slices.Contains(public, member):
						t.Errorf("%s: makes the worker public (%s)", addr, member)
					case target == services["console"] && slices.Contains(public, member):
						t.Errorf("%s: makes the console public (%s)", addr, member)
					case target == services["worker"] && role == "roles/run.invoker":
						byInvokers := member == invoker && m.text(attrExpr(r.Body, "for_each")) == invokersLocal
						if !byInvokers && !slices.Contains(internalCallers, member) {
							t.Errorf("%s: grants run.invoker on the worker to %s; only the task invokers, the scheduler, the api and the console may", addr, member)
						}
						workerInvokers = append(workerInvokers, member)
					case target == services["webhook"] && role == "roles/run.invoker" && member == `"allUsers"`:
						webhookPublic = append(webhookPublic, addr)
					}
				}
			}
		case strings.Contains(typ, "_iam_"):
			for _, member := range members {
				if slices.Contains(public, member) {
					t.Errorf("%s: grants %s to %s; only the webhook service is public", addr, role, member)
				}
			}
			if role == "roles/run.invoker" || role == "roles/run.admin" {
				t.Errorf("%s: grants %s outside a single service: it would reach the worker", addr, role)
			}
		}
	}
	// Roles computed from locals escape the literal checks above: run.invoker may appear only in
	// per-service grants.
	for _, addr := range m.sortedResources() {
		typ, _, _ := strings.Cut(addr, ".")
		if strings.HasPrefix(typ, "google_cloud_run_v2_service_iam_") {
			continue
		}
		r := m.resources[addr]
		if bytes.Contains(r.Range().SliceBytes(m.sources[r.Range().Filename]), []byte("roles/run.invoker")) {
			t.Errorf("%s: mentions roles/run.invoker outside a Cloud Run service grant", addr)
		}
	}
	for name, a := range m.locals {
		if strings.Contains(m.text(a.Expr), "roles/run.invoker") {
			t.Errorf("local.%s: mentions roles/run.invoker, which only per-service grants may", name)
		}
	}
	if len(workerInvokers) == 0 {
		t.Errorf("nothing grants the Cloud Tasks invoker run.invoker on the worker")
	}
	if len(webhookPublic) != 1 {
		t.Errorf("want one allUsers run.invoker grant on the webhook, got %v", webhookPublic)
	}
}

func TestReferencesResolve(t *testing.T) {
	t.Parallel()
	m := loadModule(t)

	used := map[string]bool{}
	// iterators are the names dynamic blocks bind around body (their label).
	var check func(owner string, forEach bool, body *hclsyntax.Body, countUse bool, iterators ...string)
	check = func(owner string, forEach bool, body *hclsyntax.Body, countUse bool, iterators ...string) {
		for _, a := range sortedAttributes(body) {
			if a.Name == "type" && strings.HasPrefix(owner, "variable ") {
				continue // a type constraint, not a reference
			}
			for _, tr := range hclsyntax.Variables(a.Expr) {
				if slices.Contains(iterators, tr.RootName()) {
					continue
				}
				if err := m.resolve(tr, forEach, used, countUse); err != nil {
					t.Errorf("%s: %s: %s: %v", m.pos(a.Expr), owner, traversalString(tr), err)
				}
			}
		}
		for _, b := range body.Blocks {
			if b.Type == "lifecycle" {
				continue // ignore_changes names attributes, not objects
			}
			if b.Type == "dynamic" && len(b.Labels) == 1 {
				check(owner, forEach, b.Body, countUse, append(slices.Clone(iterators), b.Labels[0])...)
				continue
			}
			check(owner, forEach, b.Body, countUse, iterators...)
		}
	}
	for _, f := range m.bodies {
		for _, b := range f.Blocks {
			owner := b.Type + " " + strings.Join(b.Labels, ".")
			switch b.Type {
			case "resource", "data":
				check(owner, b.Body.Attributes["for_each"] != nil, b.Body, true)
			case "variable":
				check(owner, false, b.Body, false) // a validation naming its own variable is no use
			case "terraform":
			case "moved":
				// from names an address that no longer exists, by design.
			default:
				check(owner, false, b.Body, true)
			}
		}
	}

	for name := range m.variables {
		if !used["var."+name] {
			t.Errorf("variable %q is declared but never used", name)
		}
	}
	for name := range m.locals {
		if !used["local."+name] {
			t.Errorf("local %q is declared but never used", name)
		}
	}
	for addr := range m.data {
		if !used["data."+addr] {
			t.Errorf("data %q is declared but never used", addr)
		}
	}
	for _, name := range sortedKeys(m.variables) {
		v := m.variables[name]
		if attrExpr(v.Body, "description") == nil || attrExpr(v.Body, "type") == nil {
			t.Errorf("variable %q: want a description and a type", name)
		}
	}
	for _, name := range sortedKeys(m.outputs) {
		if attrExpr(m.outputs[name].Body, "description") == nil {
			t.Errorf("output %q: want a description", name)
		}
	}
}

// TestFormat runs terraform fmt when the binary is installed; CI need not have it.
func TestFormat(t *testing.T) {
	t.Parallel()
	bin, err := exec.LookPath("terraform")
	if err != nil {
		t.Skip("terraform not on PATH")
	}
	cmd := exec.Command(bin, "fmt", "-check", "-recursive", "-diff", ".")
	cmd.Env = append(os.Environ(), "CHECKPOINT_DISABLE=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Errorf("terraform fmt -check -recursive: %v\n%s%s", err, stdout.String(), stderr.String())
	}
}

// module is the parsed configuration of this directory.
type module struct {
	sources   map[string][]byte
	bodies    []*hclsyntax.Body
	resources map[string]*hclsyntax.Block // "type.name"
	data      map[string]*hclsyntax.Block // "type.name"
	variables map[string]*hclsyntax.Block
	outputs   map[string]*hclsyntax.Block
	locals    map[string]*hclsyntax.Attribute
	// ctx evaluates what needs no provider: functions, path.module, and every local that depends
	// on nothing but other such locals.
	ctx *hcl.EvalContext
}

var parseModule = sync.OnceValues(func() (*module, error) {
	paths, err := filepath.Glob("*.tf")
	if err != nil {
		return nil, err
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("no .tf files")
	}
	sort.Strings(paths)
	m := &module{
		sources:   map[string][]byte{},
		resources: map[string]*hclsyntax.Block{},
		data:      map[string]*hclsyntax.Block{},
		variables: map[string]*hclsyntax.Block{},
		outputs:   map[string]*hclsyntax.Block{},
		locals:    map[string]*hclsyntax.Attribute{},
	}
	parser := hclparse.NewParser()
	var errs []string
	add := func(what, key string, seen bool) {
		if seen {
			errs = append(errs, fmt.Sprintf("%s %s declared twice", what, key))
		}
	}
	for _, p := range paths {
		f, diags := parser.ParseHCLFile(p)
		if diags.HasErrors() {
			return nil, diags
		}
		m.sources[p] = f.Bytes
		body := f.Body.(*hclsyntax.Body)
		m.bodies = append(m.bodies, body)
		for _, b := range body.Blocks {
			switch b.Type {
			case "resource":
				key := b.Labels[0] + "." + b.Labels[1]
				add("resource", key, m.resources[key] != nil)
				m.resources[key] = b
			case "data":
				key := b.Labels[0] + "." + b.Labels[1]
				add("data", key, m.data[key] != nil)
				m.data[key] = b
			case "variable":
				add("variable", b.Labels[0], m.variables[b.Labels[0]] != nil)
				m.variables[b.Labels[0]] = b
			case "output":
				add("output", b.Labels[0], m.outputs[b.Labels[0]] != nil)
				m.outputs[b.Labels[0]] = b
			case "locals":
				for name, a := range b.Body.Attributes {
					add("local", name, m.locals[name] != nil)
					m.locals[name] = a
				}
			}
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	m.ctx = &hcl.EvalContext{
		Variables: map[string]cty.Value{"path": cty.ObjectVal(map[string]cty.Value{"module": cty.StringVal(".")})},
		Functions: functions(),
	}
	// Variables take their default; one without (project_id, image) is unknown, and so is
	// everything that depends on it.
	vars := map[string]cty.Value{}
	for name, v := range m.variables {
		vars[name] = cty.DynamicVal
		if def := attrExpr(v.Body, "default"); def != nil {
			if val, diags := def.Value(m.ctx); !diags.HasErrors() {
				vars[name] = val
			}
		}
	}
	m.ctx.Variables["var"] = cty.ObjectVal(vars)
	evalLocals(m.ctx, m.locals)
	return m, nil
})

// evalLocals sets ctx's local to every local that evaluates in ctx, in dependency order (until
// no more does).
func evalLocals(ctx *hcl.EvalContext, locals map[string]*hclsyntax.Attribute) {
	known := map[string]cty.Value{}
	for progress := true; progress; {
		progress = false
		for name, a := range locals {
			if _, ok := known[name]; ok {
				continue
			}
			ctx.Variables["local"] = cty.ObjectVal(known)
			if v, diags := a.Expr.Value(ctx); !diags.HasErrors() && v.IsWhollyKnown() {
				known[name] = v
				progress = true
			}
		}
	}
	ctx.Variables["local"] = cty.ObjectVal(known)
}

func loadModule(t *testing.T) *module {
	t.Helper()
	m, err := parseModule()
	if err != nil {
		t.Fatalf("parse terraform: %v", err)
	}
	return m
}

// functions are the Terraform functions the configuration uses that static evaluation needs.
func functions() map[string]function.Function {
	file := function.New(&function.Spec{
		Params: []function.Parameter{{Name: "path", Type: cty.String}},
		Type:   function.StaticReturnType(cty.String),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			b, err := os.ReadFile(args[0].AsString())
			if err != nil {
				return cty.NilVal, err
			}
			return cty.StringVal(string(b)), nil
		},
	})
	// yamldecode via JSON: the same types Terraform's yamldecode gives for the plain YAML here.
	yamldecode := function.New(&function.Spec{
		Params: []function.Parameter{{Name: "src", Type: cty.String}},
		Type:   function.StaticReturnType(cty.DynamicPseudoType),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			var v any
			if err := yaml.Unmarshal([]byte(args[0].AsString()), &v); err != nil {
				return cty.NilVal, err
			}
			b, err := json.Marshal(v)
			if err != nil {
				return cty.NilVal, err
			}
			ty, err := ctyjson.ImpliedType(b)
			if err != nil {
				return cty.NilVal, err
			}
			return ctyjson.Unmarshal(b, ty)
		},
	})
	to := func(ty cty.Type) function.Function {
		return function.New(&function.Spec{
			Params: []function.Parameter{{Name: "v", Type: cty.DynamicPseudoType}},
			Type: func(args []cty.Value) (cty.Type, error) {
				v, err := convert.Convert(args[0], ty)
				if err != nil {
					return cty.NilType, err
				}
				return v.Type(), nil
			},
			Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) { return convert.Convert(args[0], ty) },
		})
	}
	return map[string]function.Function{
		"coalesce":   stdlib.CoalesceFunc,
		"concat":     stdlib.ConcatFunc,
		"file":       file,
		"flatten":    stdlib.FlattenFunc,
		"join":       stdlib.JoinFunc,
		"keys":       stdlib.KeysFunc,
		"length":     stdlib.LengthFunc,
		"lower":      stdlib.LowerFunc,
		"merge":      stdlib.MergeFunc,
		"replace":    stdlib.ReplaceFunc,
		"setproduct": stdlib.SetProductFunc,
		"tolist":     to(cty.List(cty.DynamicPseudoType)),
		"toset":      to(cty.Set(cty.DynamicPseudoType)),
		"values":     stdlib.ValuesFunc,
		"yamldecode": yamldecode,
	}
}

// eval evaluates e statically, with extra variables such as each.
func (m *module) eval(e hclsyntax.Expression, extra map[string]cty.Value) (cty.Value, error) {
	ctx := m.ctx.NewChild()
	ctx.Variables = extra
	v, diags := e.Value(ctx)
	if diags.HasErrors() {
		return cty.NilVal, diags
	}
	if !v.IsWhollyKnown() {
		return cty.NilVal, fmt.Errorf("%s is not known statically", m.text(e))
	}
	return v, nil
}

// forEachKeys returns the sorted instance keys of a for_each resource, when they are static.
func (m *module) forEachKeys(addr string) ([]string, error) {
	r := m.resources[addr]
	if r == nil {
		return nil, fmt.Errorf("no resource %s", addr)
	}
	e := attrExpr(r.Body, "for_each")
	if e == nil {
		return nil, fmt.Errorf("%s has no for_each", addr)
	}
	v, err := m.eval(e, nil)
	if err != nil {
		return nil, err
	}
	var keys []string
	switch {
	case v.Type().IsMapType() || v.Type().IsObjectType():
		for k := range v.AsValueMap() {
			keys = append(keys, k)
		}
	case v.Type().IsSetType():
		for _, k := range v.AsValueSlice() {
			if k.Type() != cty.String {
				return nil, fmt.Errorf("for_each set of %s", k.Type().FriendlyName())
			}
			keys = append(keys, k.AsString())
		}
	default:
		return nil, fmt.Errorf("for_each is a %s, want a map or a set of strings", v.Type().FriendlyName())
	}
	sort.Strings(keys)
	return keys, nil
}

// resolve checks that a reference names something declared, and records it as used.
// Variables count as used only when referenced outside their own declaration (countUse).
func (m *module) resolve(tr hcl.Traversal, forEach bool, used map[string]bool, countUse bool) error {
	attr := func(i int) string {
		if i < len(tr) {
			if a, ok := tr[i].(hcl.TraverseAttr); ok {
				return a.Name
			}
		}
		return ""
	}
	root := tr.RootName()
	switch root {
	case "var":
		if countUse {
			used["var."+attr(1)] = true
		}
		if m.variables[attr(1)] == nil {
			return fmt.Errorf("no variable %q", attr(1))
		}
	case "local":
		used["local."+attr(1)] = true
		if m.locals[attr(1)] == nil {
			return fmt.Errorf("no local %q", attr(1))
		}
	case "data":
		addr := attr(1) + "." + attr(2)
		used["data."+addr] = true
		if m.data[addr] == nil {
			return fmt.Errorf("no data source %q", addr)
		}
	case "each":
		if !forEach {
			return fmt.Errorf("each outside a for_each resource")
		}
	case "path", "terraform", "self", "count":
	default:
		addr := root + "." + attr(1)
		r := m.resources[addr]
		if r == nil {
			return fmt.Errorf("no resource %q", addr)
		}
		if len(tr) > 2 {
			if idx, ok := tr[2].(hcl.TraverseIndex); ok && idx.Key.Type() == cty.String {
				if attrExpr(r.Body, "for_each") == nil {
					return fmt.Errorf("%s has no for_each to index", addr)
				}
				if keys, err := m.forEachKeys(addr); err == nil && !slices.Contains(keys, idx.Key.AsString()) {
					return fmt.Errorf("%s has no instance %q (instances: %v)", addr, idx.Key.AsString(), keys)
				}
			}
		}
	}
	return nil
}

// serviceEnv returns a Cloud Run service's env blocks by variable name.
func (m *module) serviceEnv(t *testing.T, addr string) map[string]*hclsyntax.Block {
	t.Helper()
	env := map[string]*hclsyntax.Block{}
	add := func(name string, e *hclsyntax.Block) {
		if env[name] != nil {
			t.Errorf("%s: %s is set twice", addr, name)
		}
		env[name] = e
	}
	for _, e := range childBlocks(m.container(t, addr).Body, "env") {
		name, ok := literalString(attrExpr(e.Body, "name"))
		if !ok {
			t.Fatalf("%s: env name %s is not a literal", addr, m.text(attrExpr(e.Body, "name")))
		}
		add(name, e)
	}
	// A dynamic "env" over variable names (for_each with the variables' defaults), whose content
	// is named env.value: each name gets the content block.
	for _, d := range childBlocks(m.container(t, addr).Body, "dynamic") {
		contents := childBlocks(d.Body, "content")
		if len(d.Labels) != 1 || d.Labels[0] != "env" || len(contents) != 1 || m.text(attrExpr(contents[0].Body, "name")) != "env.value" {
			t.Fatalf("%s: a dynamic block other than dynamic \"env\" { content { name = env.value } }", addr)
		}
		names, err := m.eval(attrExpr(d.Body, "for_each"), nil)
		if err != nil {
			t.Fatalf("%s: dynamic env for_each: %v", addr, err)
		}
		for _, n := range names.AsValueSlice() {
			add(n.AsString(), contents[0])
		}
	}
	return env
}

// container returns the one container block of a Cloud Run service.
func (m *module) container(t *testing.T, addr string) *hclsyntax.Block {
	t.Helper()
	r := m.resources[addr]
	if r == nil {
		t.Fatalf("no %s", addr)
	}
	templates := childBlocks(r.Body, "template")
	if len(templates) != 1 {
		t.Fatalf("%s: want one template block", addr)
	}
	containers := childBlocks(templates[0].Body, "containers")
	if len(containers) != 1 {
		t.Fatalf("%s: want one containers block", addr)
	}
	return containers[0]
}

// iamTargets returns the Cloud Run services an IAM resource applies to, following for_each
// objects whose values are services.
func (m *module) iamTargets(t *testing.T, r *hclsyntax.Block) []string {
	t.Helper()
	e := attrExpr(r.Body, "name")
	if e == nil {
		e = attrExpr(r.Body, "service")
	}
	if e == nil {
		t.Errorf("%s: no name", strings.Join(r.Labels, "."))
		return nil
	}
	serviceOf := func(e hclsyntax.Expression) string {
		for _, tr := range hclsyntax.Variables(e) {
			if s := tr.RootName(); strings.HasPrefix(s, "google_cloud_run") && len(tr) > 1 {
				if a, ok := tr[1].(hcl.TraverseAttr); ok {
					return s + "." + a.Name
				}
			}
		}
		return ""
	}
	if s := serviceOf(e); s != "" {
		return []string{s}
	}
	if strings.HasPrefix(m.text(e), "each.value") {
		if obj, ok := attrExpr(r.Body, "for_each").(*hclsyntax.ObjectConsExpr); ok {
			var targets []string
			for _, item := range obj.Items {
				if s := serviceOf(item.ValueExpr); s != "" {
					targets = append(targets, s)
				}
			}
			return targets
		}
	}
	t.Errorf("%s: cannot tell which service name = %s is", strings.Join(r.Labels, "."), m.text(e))
	return nil
}

// members returns the source text of an IAM resource's member or members.
func (m *module) members(r *hclsyntax.Block) []string {
	if e := attrExpr(r.Body, "member"); e != nil {
		return []string{m.text(e)}
	}
	if tuple, ok := attrExpr(r.Body, "members").(*hclsyntax.TupleConsExpr); ok {
		var out []string
		for _, e := range tuple.Exprs {
			out = append(out, m.text(e))
		}
		return out
	}
	return nil
}

// ignoreChanges returns the source text of a resource's lifecycle.ignore_changes entries.
func (m *module) ignoreChanges(r *hclsyntax.Block) []string {
	var out []string
	for _, l := range childBlocks(r.Body, "lifecycle") {
		if tuple, ok := attrExpr(l.Body, "ignore_changes").(*hclsyntax.TupleConsExpr); ok {
			for _, e := range tuple.Exprs {
				out = append(out, m.text(e))
			}
		}
	}
	return out
}

func (m *module) localExpr(t *testing.T, name string) hclsyntax.Expression {
	t.Helper()
	a := m.locals[name]
	if a == nil {
		t.Fatalf("no local %q", name)
	}
	return a.Expr
}

func (m *module) resourcesOfType(typ string) []string {
	var out []string
	for _, addr := range m.sortedResources() {
		if strings.HasPrefix(addr, typ+".") {
			out = append(out, addr)
		}
	}
	return out
}

func (m *module) sortedResources() []string { return sortedKeys(m.resources) }

// text returns an expression's source text.
func (m *module) text(e hclsyntax.Expression) string {
	if e == nil {
		return ""
	}
	r := e.Range()
	return string(r.SliceBytes(m.sources[r.Filename]))
}

func (m *module) pos(e hclsyntax.Expression) string {
	r := e.Range()
	return fmt.Sprintf("%s:%d", r.Filename, r.Start.Line)
}

func childBlocks(b *hclsyntax.Body, typ string) []*hclsyntax.Block {
	var out []*hclsyntax.Block
	for _, c := range b.Blocks {
		if c.Type == typ {
			out = append(out, c)
		}
	}
	return out
}

func attrExpr(b *hclsyntax.Body, name string) hclsyntax.Expression {
	if a := b.Attributes[name]; a != nil {
		return a.Expr
	}
	return nil
}

func sortedAttributes(b *hclsyntax.Body) []*hclsyntax.Attribute {
	out := make([]*hclsyntax.Attribute, 0, len(b.Attributes))
	for _, name := range sortedKeys(b.Attributes) {
		out = append(out, b.Attributes[name])
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// literalString returns the value of a string expression that references nothing.
func literalString(e hclsyntax.Expression) (string, bool) {
	if e == nil || len(hclsyntax.Variables(e)) > 0 {
		return "", false
	}
	v, diags := e.Value(nil)
	if diags.HasErrors() || v.IsNull() || !v.IsKnown() || v.Type() != cty.String {
		return "", false
	}
	return v.AsString(), true
}

// traversalString writes a traversal as it reads in HCL: a.b["k"][0].
func traversalString(tr hcl.Traversal) string {
	var b strings.Builder
	for i, step := range tr {
		switch s := step.(type) {
		case hcl.TraverseRoot:
			b.WriteString(s.Name)
		case hcl.TraverseAttr:
			b.WriteString("." + s.Name)
		case hcl.TraverseIndex:
			switch {
			case s.Key.Type() == cty.String:
				fmt.Fprintf(&b, "[%q]", s.Key.AsString())
			case s.Key.Type() == cty.Number:
				fmt.Fprintf(&b, "[%s]", s.Key.AsBigFloat().String())
			default:
				b.WriteString("[?]")
			}
		case hcl.TraverseSplat:
			b.WriteString("[*]")
		default:
			fmt.Fprintf(&b, "<%d>", i)
		}
	}
	return b.String()
}

type yamlField struct {
	name string
	typ  reflect.Type
}

// yamlFields lists a struct's fields by their yaml names.
func yamlFields(t reflect.Type) []yamlField {
	var out []yamlField
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "" || name == "-" {
			continue
		}
		out = append(out, yamlField{name: name, typ: f.Type})
	}
	return out
}

// rawQueueKeys reads queues.yaml without the Go schema: queue -> block -> keys it sets.
func rawQueueKeys(t *testing.T) map[string]map[string][]string {
	t.Helper()
	b, err := os.ReadFile(queuesFile)
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Queues map[string]map[string]map[string]any `yaml:"queues"`
	}
	if err := yaml.Unmarshal(b, &f); err != nil {
		t.Fatalf("%s: %v", queuesFile, err)
	}
	out := map[string]map[string][]string{}
	for id, blocks := range f.Queues {
		out[id] = map[string][]string{}
		for block, fields := range blocks {
			out[id][block] = sortedKeys(fields)
		}
	}
	return out
}

type envTag struct {
	required   bool
	hasDefault bool
	def        string
}

// envTags reads the go-envconfig tags of a Config: `env:"NAME, required"`, `env:"NAME, default=x"`,
// through embedded and nested structs.
func envTags(t reflect.Type) map[string]envTag {
	out := map[string]envTag{}
	for i := range t.NumField() {
		f := t.Field(i)
		tag, ok := f.Tag.Lookup("env")
		if !ok {
			if f.Type.Kind() == reflect.Struct {
				for k, v := range envTags(f.Type) {
					out[k] = v
				}
			}
			continue
		}
		parts := strings.Split(tag, ",")
		var et envTag
		for _, opt := range parts[1:] {
			opt = strings.TrimSpace(opt)
			switch {
			case opt == "required":
				et.required = true
			case strings.HasPrefix(opt, "default="):
				et.hasDefault, et.def = true, strings.TrimPrefix(opt, "default=")
			}
		}
		out[strings.TrimSpace(parts[0])] = et
	}
	return out
}
