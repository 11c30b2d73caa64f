package tasks

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/mail"
	"slices"
	"sort"
	"strings"
)

// Worker routes that no task targets: the health report, the sweep Cloud Scheduler runs, and the
// prefix of the tenant routes (the Graph calls the api and the console ask the worker to make
// with a tenant's token).
const (
	HealthPath        = "/internal/health"
	SweepPath         = "/internal/sweep"
	TenantRoutePrefix = "/internal/tenants/{tenant_id}"
)

// Caller is a wapipe service that calls the worker, by the name Terraform gives its accounts
// (google_service_account.<caller> and, for a service that creates tasks, its invoker).
type Caller string

// The worker's callers.
const (
	Webhook   Caller = "webhook"
	API       Caller = "api"
	Console   Caller = "console"
	Worker    Caller = "worker"
	Scheduler Caller = "scheduler"
)

// Via is how a route's callers reach it, which says which of a caller's identities the worker
// sees in the verified OIDC token.
type Via string

const (
	// ViaTask: Cloud Tasks dispatches a task the caller created, with an OIDC token for the
	// caller's own invoker account (its TASKS_SERVICE_ACCOUNT_EMAIL). Only Cloud Tasks can mint
	// that token (the caller may act as the account, not sign for it), and Cloud Tasks sets
	// X-CloudTasks-QueueName itself, replacing whatever the task asked for, so the queue a task
	// came from is checked too.
	ViaTask Via = "task"
	// ViaDirect: the caller's service calls the worker itself, with an ID token of its own
	// runtime account (internal/workerclient).
	ViaDirect Via = "direct"
	// ViaScheduler: Cloud Scheduler calls with an OIDC token for the scheduler's account, and
	// outside dev no internal token: no secret is kept in Terraform's state for the job.
	ViaScheduler Via = "scheduler"
)

// Route is one worker route: who may call it, how, and for a task route from which queues, with
// what body, and what its replay reopens.
type Route struct {
	// Methods are the HTTP methods the worker serves on Path.
	Methods []string
	// Path is the route as the worker's router writes it ({name} for one path segment); it is
	// the route's key in ROUTE_CALLERS.
	Path    string
	Via     Via
	Callers []Caller
	// Queues are the queues a task route's tasks come from; TenantQueues adds every tenant's
	// send queue (TenantQueuePrefix + id), and then the first of Queues, if any, is the single-
	// tenant default's (QueueFor).
	Queues       []string
	TenantQueues bool
	// Body is a task route's body type (its zero value): the task's id, its tenant and so its
	// queue, and the record a replay of it reopens follow from a body (NewTask, QueueOf,
	// ReplayRecord). nil on the routes no task targets.
	Body Body
}

// routes is the table: every route the worker serves under /internal, and nothing else. The
// worker's admission (internal/admission) reads it, and the worker the queue of a task from it;
// the producers make their tasks with it (NewTask), a replay (internal/operator) and the
// console's failures page read a dead letter's queue and record from it; Terraform writes
// ROUTE_CALLERS from it (terraform/iam.tf, local.route_callers; terraform/routes_test.go checks
// they agree), and the README's "Who may call which worker route" says it in words.
var routes = []Route{
	// Meta's deliveries, enqueued by the webhook alone.
	{Methods: post, Path: ProcessInboundPath, Via: ViaTask, Callers: []Caller{Webhook}, Queues: []string{InboundQueueID}, Body: Inbound{}},
	// Replies, on the default's queue or the tenant's; an assistant's action calls and their
	// answers: the worker's own follow-ups.
	{Methods: post, Path: ProcessOutboundPath, Via: ViaTask, Callers: []Caller{Worker}, Queues: []string{OutboundQueueID}, TenantQueues: true, Body: Outbound{}},
	{Methods: post, Path: ProcessActionPath, Via: ViaTask, Callers: []Caller{Worker}, TenantQueues: true, Body: Action{}},
	// A send from its record: /v1/messages and released parked sends (api), an operator's
	// reply (console), an action's notice to members (worker, package notify), a record the
	// sweep sends from itself (worker, package delivery: the single-tenant default's on the
	// default's queue).
	{Methods: post, Path: ProcessSendPath, Via: ViaTask, Callers: []Caller{API, Console, Worker}, Queues: []string{OutboundQueueID}, TenantQueues: true, Body: Send{}},
	// The sweep probes health itself; the report stays for operators, through the console's
	// account (the operators' service inside the VPC). From a laptop: wapipe health --direct.
	{Methods: []string{http.MethodGet}, Path: HealthPath, Via: ViaDirect, Callers: []Caller{Console}},
	{Methods: post, Path: SweepPath, Via: ViaScheduler, Callers: []Caller{Scheduler}},
	// The tenant routes: the console shows a message's image; the api uploads media and
	// manages templates.
	{Methods: []string{http.MethodGet}, Path: TenantRoutePrefix + "/media/{media_id}", Via: ViaDirect, Callers: []Caller{Console}},
	{Methods: post, Path: TenantRoutePrefix + "/media", Via: ViaDirect, Callers: []Caller{API}},
	{Methods: []string{http.MethodGet, http.MethodPost}, Path: TenantRoutePrefix + "/templates", Via: ViaDirect, Callers: []Caller{API}},
	{Methods: []string{http.MethodDelete}, Path: TenantRoutePrefix + "/templates/{name}", Via: ViaDirect, Callers: []Caller{API}},
}

var post = []string{http.MethodPost}

// Routes returns the table of the worker's routes (a copy).
func Routes() []Route {
	out := make([]Route, len(routes))
	for i, r := range routes {
		r.Methods, r.Callers, r.Queues = slices.Clone(r.Methods), slices.Clone(r.Callers), slices.Clone(r.Queues)
		out[i] = r
	}
	return out
}

// RouteOf returns the route of the table that a request path matches (the escaped path, as the
// router reads it: a {name} matches one non-empty segment).
func RouteOf(path string) (Route, bool) {
	got := strings.Split(path, "/")
	for _, r := range routes {
		want := strings.Split(r.Path, "/")
		if len(want) == len(got) && segmentsMatch(want, got) {
			return r, true
		}
	}
	return Route{}, false
}

func segmentsMatch(pattern, path []string) bool {
	for i, p := range pattern {
		if strings.HasPrefix(p, "{") && strings.HasSuffix(p, "}") {
			if path[i] == "" {
				return false
			}
		} else if p != path[i] {
			return false
		}
	}
	return true
}

// FromQueue reports whether a task of the route may come from queue (X-CloudTasks-QueueName: the
// queue's id, as Cloud Tasks sends it).
func (r Route) FromQueue(queue string) bool {
	if slices.Contains(r.Queues, queue) {
		return true
	}
	id, ok := strings.CutPrefix(queue, TenantQueuePrefix)
	return r.TenantQueues && ok && queueIDPattern.MatchString(id)
}

// RouteCallers is ROUTE_CALLERS: for each route of the table, by its Path, the service accounts
// whose verified OIDC tokens the worker admits there. Terraform writes it (jsonencode).
type RouteCallers map[string][]string

// EnvDecode reads ROUTE_CALLERS' JSON object (go-envconfig's Decoder). Empty is unset: nil.
func (rc *RouteCallers) EnvDecode(val string) error {
	if strings.TrimSpace(val) == "" {
		*rc = nil
		return nil
	}
	var m map[string][]string
	if err := json.Unmarshal([]byte(val), &m); err != nil {
		return fmt.Errorf("want a JSON object of route path to a list of service account emails: %w", err)
	}
	if m == nil {
		m = map[string][]string{}
	}
	*rc = m
	return nil
}

// Validate checks every path is a route of the table and every entry an email; with complete,
// that every route has its entry (outside dev). Each problem is one error naming ROUTE_CALLERS.
func (rc RouteCallers) Validate(complete bool) error {
	var errs []error
	for _, path := range sortedKeys(rc) {
		if _, ok := routeByPath(path); !ok {
			errs = append(errs, fmt.Errorf("ROUTE_CALLERS: %q is not a worker route (tasks.Routes)", path))
		}
		for _, email := range rc[path] {
			if err := checkEmail(email); err != nil {
				errs = append(errs, fmt.Errorf("ROUTE_CALLERS: %s: %w", path, err))
			}
		}
	}
	if complete {
		var missing []string
		for _, r := range routes {
			if _, ok := rc[r.Path]; !ok {
				missing = append(missing, r.Path)
			}
		}
		if len(missing) > 0 {
			errs = append(errs, fmt.Errorf("ROUTE_CALLERS: must name the callers of every worker route outside dev; missing %s", strings.Join(missing, ", ")))
		}
	}
	return errors.Join(errs...)
}

// Admits reports whether email is one of the callers of route.
func (rc RouteCallers) Admits(route Route, email string) bool {
	return email != "" && slices.Contains(rc[route.Path], email)
}

// CheckInvoker checks TASKS_SERVICE_ACCOUNT_EMAIL of a service that creates tasks: required
// outside dev (the worker admits each route only for its callers' accounts, so a task without
// a token for its service's own account would be refused), and an email when set.
func CheckInvoker(email string, dev bool) error {
	switch {
	case email == "" && dev:
		return nil
	case email == "":
		return errors.New("TASKS_SERVICE_ACCOUNT_EMAIL: required outside dev: this service's own invoker account, whose OIDC token its tasks carry (the worker admits it only on its routes, ROUTE_CALLERS)")
	}
	if err := checkEmail(email); err != nil {
		return fmt.Errorf("TASKS_SERVICE_ACCOUNT_EMAIL: %w", err)
	}
	return nil
}

// checkEmail refuses what no OIDC token's verified email can be.
func checkEmail(email string) error {
	a, err := mail.ParseAddress(email)
	if err != nil || a.Address != email || a.Name != "" {
		return fmt.Errorf("%q is not a service account email", email)
	}
	return nil
}

func routeByPath(path string) (Route, bool) {
	for _, r := range routes {
		if r.Path == path {
			return r, true
		}
	}
	return Route{}, false
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// CallersOf writes ROUTE_CALLERS from the table: for each route, the account of each of its
// callers as account names it for the route's Via (a task route sees an enqueuer's invoker, a
// direct route the caller's own account). Terraform writes the same (local.route_callers).
func CallersOf(account func(c Caller, via Via) string) RouteCallers {
	rc := RouteCallers{}
	for _, r := range routes {
		emails := []string{}
		for _, c := range r.Callers {
			emails = append(emails, account(c, r.Via))
		}
		rc[r.Path] = emails
	}
	return rc
}

// ReplayInvokers is REPLAY_INVOKERS (the console's): for each task route, by its Path, the
// invoker account a replay of its dead letters acts as: the route's own enqueuer's, the one
// ROUTE_CALLERS admits there (the webhook's for process_inbound, the worker's for its own
// follow-ups, the console's for process_send). Terraform writes it (jsonencode) and lets the
// console act as those accounts.
type ReplayInvokers map[string]string

// EnvDecode reads REPLAY_INVOKERS' JSON object (go-envconfig's Decoder). Empty is unset: nil.
func (ri *ReplayInvokers) EnvDecode(val string) error {
	if strings.TrimSpace(val) == "" {
		*ri = nil
		return nil
	}
	var m map[string]string
	if err := json.Unmarshal([]byte(val), &m); err != nil {
		return fmt.Errorf("want a JSON object of task route path to a service account email: %w", err)
	}
	*ri = m
	return nil
}

// Validate checks every path is a task route and every value an email; with complete, that
// every task route has one (outside dev). Each problem is one error naming REPLAY_INVOKERS.
func (ri ReplayInvokers) Validate(complete bool) error {
	var errs []error
	for _, path := range sortedKeys(ri) {
		if r, ok := routeByPath(path); !ok || r.Via != ViaTask {
			errs = append(errs, fmt.Errorf("REPLAY_INVOKERS: %q is not a task route of the worker (tasks.Routes)", path))
		}
		if err := checkEmail(ri[path]); err != nil {
			errs = append(errs, fmt.Errorf("REPLAY_INVOKERS: %s: %w", path, err))
		}
	}
	if complete {
		var missing []string
		for _, r := range routes {
			if _, ok := ri[r.Path]; r.Via == ViaTask && !ok {
				missing = append(missing, r.Path)
			}
		}
		if len(missing) > 0 {
			errs = append(errs, fmt.Errorf("REPLAY_INVOKERS: must name the invoker of every task route outside dev (else a replay is refused by the worker); missing %s",
				strings.Join(missing, ", ")))
		}
	}
	return errors.Join(errs...)
}

// ReplayInvokersOf is REPLAY_INVOKERS for the replayer self (the console) with invoker's
// accounts: for each task route, self's own invoker where self may enqueue it, else the
// invoker of the route's first caller (its own enqueuer).
func ReplayInvokersOf(self Caller, invoker func(Caller) string) ReplayInvokers {
	out := ReplayInvokers{}
	for _, r := range routes {
		if r.Via != ViaTask || len(r.Callers) == 0 {
			continue
		}
		c := r.Callers[0]
		if slices.Contains(r.Callers, self) {
			c = self
		}
		out[r.Path] = invoker(c)
	}
	return out
}
