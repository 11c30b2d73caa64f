package admission

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/wapipe/wapipe/internal/config"
	"github.com/wapipe/wapipe/internal/identity"
	"github.com/wapipe/wapipe/internal/identity/identitytest"
	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/internal/testenv"
	"github.com/wapipe/wapipe/tasks"
)

const (
	// testWorkerURL is the worker's URL, the audience of the tokens it admits.
	testWorkerURL = "https://wapipe-worker-123456789012.us-central1.run.app"
	internalToken = "0123456789abcdef0123456789abcdef"
)

// The accounts of a deployment as Terraform makes them: each enqueuer's invoker (what its tasks
// carry), each service's own runtime account (what its direct calls carry), the scheduler's.
func invokerOf(c tasks.Caller) string {
	return "wapipe-inv-" + string(c) + "@p.iam.gserviceaccount.com"
}
func runtimeOf(c tasks.Caller) string { return "wapipe-" + string(c) + "@p.iam.gserviceaccount.com" }

const schedulerAccount = "wapipe-scheduler@p.iam.gserviceaccount.com"

// accountOf is the account a caller reaches a route with, by how it reaches it.
func accountOf(c tasks.Caller, via tasks.Via) string {
	switch via {
	case tasks.ViaTask:
		return invokerOf(c)
	case tasks.ViaScheduler:
		return schedulerAccount
	}
	return runtimeOf(c)
}

// loadTableConfig is the worker's door as Terraform deploys it, under appEnv: ROUTE_CALLERS
// written from the table, tokens verified as Cloud Run forwards them (OIDC_VERIFIED_BY_PLATFORM).
func loadTableConfig(t *testing.T, appEnv string) Config {
	t.Helper()
	return Config{
		InternalToken: internalToken,
		RouteCallers:  tasks.CallersOf(accountOf),
		Dev:           appEnv == config.EnvDev,
		Invoker:       invokerOf(tasks.Worker),
		Verifier:      identity.NewOIDCVerifier(identity.GoogleIssuer, testWorkerURL, true),
	}
}

// admitCase is one request to the worker's door: its path, queue header, internal token and
// the account of its (Cloud Run verified) token; "" leaves each out.
type admitCase struct {
	name, method, path, queue, account string
	noInternalToken                    bool
	// admitted: the request reaches the route; else it is refused 401 with reason.
	admitted bool
	reason   string
}

// runAdmit sends tc through the worker's door to a handler that only notes it was reached, and
// checks the answer and the auth_refused line.
func runAdmit(t *testing.T, cfg Config, tc admitCase) {
	t.Helper()
	logs := &testenv.LogBuffer{}
	reached := false
	h := New(cfg).Wrap(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { reached = true }))
	method := tc.method
	if method == "" {
		method = http.MethodPost
	}
	r := httptest.NewRequest(method, tc.path, strings.NewReader("{}"))
	r = r.WithContext(logging.WithLogger(r.Context(), logging.New(logs, logging.Options{})))
	if !tc.noInternalToken {
		r.Header.Set(tasks.HeaderInternalToken, cfg.InternalToken)
	}
	if tc.queue != "" {
		r.Header.Set(tasks.HeaderQueueName, tc.queue)
	}
	if tc.account != "" {
		r.Header.Set("Authorization", "Bearer "+identitytest.CloudRunToken(t, identitytest.Claims(identity.GoogleIssuer, testWorkerURL, tc.account)))
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	switch {
	case tc.admitted && (!reached || w.Code != http.StatusOK):
		t.Fatalf("refused (%d): want admitted; logs:\n%s", w.Code, logs)
	case !tc.admitted && (reached || w.Code != http.StatusUnauthorized):
		t.Fatalf("answered %d, reached the route %v: want refused 401", w.Code, reached)
	case !tc.admitted && !strings.Contains(logs.String(), `"event":"auth_refused"`) || !tc.admitted && !strings.Contains(logs.String(), `"reason":"`+tc.reason+`"`):
		t.Fatalf("want an auth_refused line with reason %s; logs:\n%s", tc.reason, logs)
	}
}

// TestRouteCallersAdmission (issue 35 item 6): outside dev each route admits only the accounts
// ROUTE_CALLERS gives it, task routes only from their queues: code running as the api cannot
// post forged Meta events to process_inbound, the console cannot fire process_action, and a
// task with the right identity on another queue is refused.
func TestRouteCallersAdmission(t *testing.T) {
	t.Parallel()
	cfg := loadTableConfig(t, config.EnvProd)
	const tenantQueue = "wa-out-acme"
	for _, tc := range []admitCase{
		// Each enqueuer on its own routes, from their queues.
		{name: "webhook's inbound task", path: tasks.ProcessInboundPath, queue: tasks.InboundQueueID, account: invokerOf(tasks.Webhook), admitted: true},
		{name: "worker's reply", path: tasks.ProcessOutboundPath, queue: tasks.OutboundQueueID, account: invokerOf(tasks.Worker), admitted: true},
		{name: "worker's tenant reply", path: tasks.ProcessOutboundPath, queue: tenantQueue, account: invokerOf(tasks.Worker), admitted: true},
		{name: "worker's action", path: tasks.ProcessActionPath, queue: tenantQueue, account: invokerOf(tasks.Worker), admitted: true},
		{name: "api's send", path: tasks.ProcessSendPath, queue: tenantQueue, account: invokerOf(tasks.API), admitted: true},
		{name: "console's reply", path: tasks.ProcessSendPath, queue: tenantQueue, account: invokerOf(tasks.Console), admitted: true},
		{name: "worker's notice", path: tasks.ProcessSendPath, queue: tenantQueue, account: invokerOf(tasks.Worker), admitted: true},

		// Forged tasks: another service's identity.
		{name: "inbound task from the api's identity", path: tasks.ProcessInboundPath, queue: tasks.InboundQueueID, account: invokerOf(tasks.API), reason: refusedCaller},
		{name: "inbound task from the console's identity", path: tasks.ProcessInboundPath, queue: tasks.InboundQueueID, account: invokerOf(tasks.Console), reason: refusedCaller},
		{name: "inbound task from the worker's identity", path: tasks.ProcessInboundPath, queue: tasks.InboundQueueID, account: invokerOf(tasks.Worker), reason: refusedCaller},
		{name: "action from the console's identity", path: tasks.ProcessActionPath, queue: tenantQueue, account: invokerOf(tasks.Console), reason: refusedCaller},
		{name: "action from the api's identity", path: tasks.ProcessActionPath, queue: tenantQueue, account: invokerOf(tasks.API), reason: refusedCaller},
		{name: "reply from the api's identity", path: tasks.ProcessOutboundPath, queue: tenantQueue, account: invokerOf(tasks.API), reason: refusedCaller},
		{name: "send from the webhook's identity", path: tasks.ProcessSendPath, queue: tenantQueue, account: invokerOf(tasks.Webhook), reason: refusedCaller},
		{name: "send from the api's own account", path: tasks.ProcessSendPath, queue: tenantQueue, account: runtimeOf(tasks.API), reason: refusedCaller},

		// The right identity from the wrong queue.
		{name: "inbound task from the outbound queue", path: tasks.ProcessInboundPath, queue: tasks.OutboundQueueID, account: invokerOf(tasks.Webhook), reason: refusedQueue},
		{name: "inbound task from a tenant queue", path: tasks.ProcessInboundPath, queue: tenantQueue, account: invokerOf(tasks.Webhook), reason: refusedQueue},
		{name: "inbound task without a queue header", path: tasks.ProcessInboundPath, account: invokerOf(tasks.Webhook), reason: refusedQueue},
		{name: "api's send from the inbound queue", path: tasks.ProcessSendPath, queue: tasks.InboundQueueID, account: invokerOf(tasks.API), reason: refusedQueue},
		{name: "worker's action from the outbound queue", path: tasks.ProcessActionPath, queue: tasks.OutboundQueueID, account: invokerOf(tasks.Worker), reason: refusedQueue},

		// Tenant routes: the api's and the console's own accounts, each on its own.
		{name: "api lists templates", method: http.MethodGet, path: "/internal/tenants/acme/templates", account: runtimeOf(tasks.API), admitted: true},
		{name: "api deletes a template", method: http.MethodDelete, path: "/internal/tenants/acme/templates/hello", account: runtimeOf(tasks.API), admitted: true},
		{name: "api uploads", path: "/internal/tenants/acme/media", account: runtimeOf(tasks.API), admitted: true},
		{name: "console fetches media", method: http.MethodGet, path: "/internal/tenants/acme/media/123", account: runtimeOf(tasks.Console), admitted: true},
		{name: "console uploads", path: "/internal/tenants/acme/media", account: runtimeOf(tasks.Console), reason: refusedCaller},
		{name: "console creates a template", path: "/internal/tenants/acme/templates", account: runtimeOf(tasks.Console), reason: refusedCaller},
		{name: "api fetches media", method: http.MethodGet, path: "/internal/tenants/acme/media/123", account: runtimeOf(tasks.API), reason: refusedCaller},
		{name: "api's invoker on templates", method: http.MethodGet, path: "/internal/tenants/acme/templates", account: invokerOf(tasks.API), reason: refusedCaller},

		// Health: the console's account, with the internal token.
		{name: "health for the console", method: http.MethodGet, path: tasks.HealthPath, account: runtimeOf(tasks.Console), admitted: true},
		{name: "health for the worker's invoker", method: http.MethodGet, path: tasks.HealthPath, account: invokerOf(tasks.Worker), reason: refusedCaller},
		{name: "health without the internal token", method: http.MethodGet, path: tasks.HealthPath, account: runtimeOf(tasks.Console), noInternalToken: true, reason: refusedInternalToken},

		// Every route needs the internal token (but the sweep, below) and a verified token.
		{name: "inbound task without the internal token", path: tasks.ProcessInboundPath, queue: tasks.InboundQueueID, account: invokerOf(tasks.Webhook), noInternalToken: true, reason: refusedInternalToken},
		{name: "inbound task without an ID token", path: tasks.ProcessInboundPath, queue: tasks.InboundQueueID, reason: refusedOIDC},
		{name: "a route not in the table", path: "/internal/process_everything", queue: tasks.InboundQueueID, account: invokerOf(tasks.Worker), reason: refusedUnknownRoute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			runAdmit(t, cfg, tc)
		})
	}
}

// TestSweepAdmission (issue 35 item 2): outside dev the sweep is admitted on the verified OIDC
// identity of the scheduler's account alone, with no internal token (Terraform keeps no secret
// for the job), and refused for any other identity; in dev the internal token admits it, as the
// local stack posts it.
func TestSweepAdmission(t *testing.T) {
	t.Parallel()
	prod, staging, dev := loadTableConfig(t, config.EnvProd), loadTableConfig(t, config.EnvStaging), loadTableConfig(t, config.EnvDev)
	for _, tc := range []struct {
		cfg Config
		admitCase
	}{
		{prod, admitCase{name: "prod: scheduler, no internal token", account: schedulerAccount, noInternalToken: true, admitted: true}},
		{staging, admitCase{name: "staging: scheduler, no internal token", account: schedulerAccount, noInternalToken: true, admitted: true}},
		{prod, admitCase{name: "prod: scheduler, with the internal token", account: schedulerAccount, admitted: true}},
		{prod, admitCase{name: "prod: worker's invoker", account: invokerOf(tasks.Worker), noInternalToken: true, reason: refusedCaller}},
		{prod, admitCase{name: "prod: worker's invoker with the internal token", account: invokerOf(tasks.Worker), reason: refusedCaller}},
		{prod, admitCase{name: "prod: webhook's invoker", account: invokerOf(tasks.Webhook), noInternalToken: true, reason: refusedCaller}},
		{prod, admitCase{name: "prod: console's account", account: runtimeOf(tasks.Console), noInternalToken: true, reason: refusedCaller}},
		{prod, admitCase{name: "prod: no ID token", noInternalToken: true, reason: refusedOIDC}},
		{prod, admitCase{name: "prod: no ID token, the internal token", reason: refusedOIDC}},
		{dev, admitCase{name: "dev: the internal token alone", admitted: true}},
		{dev, admitCase{name: "dev: scheduler without the internal token", account: schedulerAccount, noInternalToken: true, reason: refusedInternalToken}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.path = tasks.SweepPath
			runAdmit(t, tc.cfg, tc.admitCase)
		})
	}
}
