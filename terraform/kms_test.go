package terraform

import (
	"slices"
	"strings"
	"testing"

	"github.com/wapipe/wapipe/tasks"
)

// TestTenantSecretsKey: the KMS key that seals tenant secrets rotates, the worker gets its name
// (KMS_KEY_NAME) and is the only runtime identity that may decrypt, operators may only encrypt.
func TestTenantSecretsKey(t *testing.T) {
	t.Parallel()
	m := loadModule(t)

	keys := m.resourcesOfType("google_kms_crypto_key")
	if len(keys) != 1 || len(m.resourcesOfType("google_kms_key_ring")) != 1 {
		t.Fatalf("want one key ring and one crypto key, got %v", keys)
	}
	key := m.resources[keys[0]]
	if got, _ := literalString(attrExpr(key.Body, "purpose")); got != "ENCRYPT_DECRYPT" {
		t.Errorf("%s: purpose %q, want ENCRYPT_DECRYPT", keys[0], got)
	}
	if attrExpr(key.Body, "rotation_period") == nil {
		t.Errorf("%s: no rotation_period", keys[0])
	}

	env := m.serviceEnv(t, services["worker"])
	if env["KMS_KEY_NAME"] == nil {
		t.Fatalf("%s: KMS_KEY_NAME is not set", services["worker"])
	}
	if got := m.text(attrExpr(env["KMS_KEY_NAME"].Body, "value")); got != "local.kms_key_name" {
		t.Errorf("KMS_KEY_NAME = %s, want local.kms_key_name", got)
	}
	if got := m.text(m.localExpr(t, "kms_key_name")); got != "google_kms_crypto_key.tenant_secrets.id" {
		t.Errorf("local.kms_key_name = %s, want the key's id (its full name, not a version)", got)
	}
	if webhookEnv := m.serviceEnv(t, services["webhook"]); webhookEnv["KMS_KEY_NAME"] != nil {
		t.Errorf("the webhook gets KMS_KEY_NAME: it has no secret to open")
	}

	// Who holds which KMS role, anywhere in the module.
	holders := map[string][]string{}
	for _, addr := range m.sortedResources() {
		r := m.resources[addr]
		role, _ := literalString(attrExpr(r.Body, "role"))
		if !strings.HasPrefix(role, "roles/cloudkms.") {
			continue
		}
		holders[role] = append(holders[role], m.members(r)...)
	}
	worker := `"serviceAccount:${google_service_account.worker.email}"`
	// The api opens connect links' states and seals the tokens Embedded Signup brings.
	api := `"serviceAccount:${google_service_account.api.email}"`
	// The console seals the connect links of its Reconnect button.
	console := `"serviceAccount:${google_service_account.console.email}"`
	for role := range holders {
		slices.Sort(holders[role])
	}
	if got := holders["roles/cloudkms.cryptoKeyDecrypter"]; !slices.Equal(got, []string{api, worker}) {
		t.Errorf("cryptoKeyDecrypter held by %v, want the worker and the api only", got)
	}
	if got := holders["roles/cloudkms.cryptoKeyEncrypter"]; !slices.Equal(got, []string{api, console, "each.value"}) {
		t.Errorf("cryptoKeyEncrypter held by %v, want the operators (each.value of var.operators), the api and the console", got)
	}
	for role, who := range holders {
		switch role {
		case "roles/cloudkms.cryptoKeyDecrypter", "roles/cloudkms.cryptoKeyEncrypter":
		default:
			t.Errorf("%s granted to %v: only decrypt (worker) and encrypt (operators)", role, who)
		}
	}
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
