package config_test

import (
	"encoding/json"
	"maps"
	"testing"

	"github.com/sethvargo/go-envconfig"

	"github.com/wapipe/wapipe/internal/config"
	"github.com/wapipe/wapipe/tasks"
)

// invoker is the invoker account Terraform gives an enqueuing service.
func invoker(service string) string { return "wapipe-inv-" + service + "@p.iam.gserviceaccount.com" }

// routeCallers is ROUTE_CALLERS as Terraform writes it from the route table.
func routeCallers() string {
	b, err := json.Marshal(tasks.CallersOf(func(c tasks.Caller, via tasks.Via) string {
		switch via {
		case tasks.ViaTask:
			return invoker(string(c))
		case tasks.ViaScheduler:
			return "wapipe-scheduler@p.iam.gserviceaccount.com"
		}
		return "wapipe-" + string(c) + "@p.iam.gserviceaccount.com"
	}))
	if err != nil {
		panic(err)
	}
	return string(b)
}

// replayInvokers is REPLAY_INVOKERS as Terraform writes it for the console.
func replayInvokers() string {
	b, err := json.Marshal(tasks.ReplayInvokersOf(tasks.Console, func(c tasks.Caller) string { return invoker(string(c)) }))
	if err != nil {
		panic(err)
	}
	return string(b)
}

// TestEnqueuersRequireTheirInvoker (issue 35 item 6): outside dev every service that creates
// tasks (all four) refuses to start without TASKS_SERVICE_ACCOUNT_EMAIL, its own invoker, in one
// line that names it: a task without that account's token would be refused by the worker.
func TestEnqueuersRequireTheirInvoker(t *testing.T) {
	t.Parallel()
	for _, svc := range services() {
		for _, appEnv := range []string{config.EnvStaging, config.EnvProd} {
			t.Run(svc.name+"/"+appEnv, func(t *testing.T) {
				t.Parallel()
				env := maps.Clone(svc.env)
				env["APP_ENV"] = appEnv
				delete(env, "TASKS_SERVICE_ACCOUNT_EMAIL")
				checkRefusal(t, config.Load(t.Context(), envconfig.MapLookuper(env), svc.config()), "TASKS_SERVICE_ACCOUNT_EMAIL", "\x00")
			})
		}
		t.Run(svc.name+"/not an email", func(t *testing.T) {
			t.Parallel()
			env := maps.Clone(svc.env)
			env["TASKS_SERVICE_ACCOUNT_EMAIL"] = "wapipe-invoker"
			checkRefusal(t, config.Load(t.Context(), envconfig.MapLookuper(env), svc.config()), "TASKS_SERVICE_ACCOUNT_EMAIL", "\x00")
		})
	}
}
