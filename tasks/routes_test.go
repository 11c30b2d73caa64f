package tasks_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/wapipe/wapipe/tasks"
)

// TestRouteTable: the table says, for every route, who calls it and how, with the contract's
// pairs (webhook → process_inbound; api and console → process_send; api → uploads and
// templates; console → media; the scheduler → the sweep; the worker → the rest), each path
// once, and queues exactly on the task routes.
func TestRouteTable(t *testing.T) {
	t.Parallel()
	want := map[string][]tasks.Caller{
		tasks.ProcessInboundPath:                         {tasks.Webhook},
		tasks.ProcessOutboundPath:                        {tasks.Worker},
		tasks.ProcessActionPath:                          {tasks.Worker},
		tasks.ProcessSendPath:                            {tasks.API, tasks.Console, tasks.Worker},
		tasks.HealthPath:                                 {tasks.Console},
		tasks.SweepPath:                                  {tasks.Scheduler},
		"/internal/tenants/{tenant_id}/media/{media_id}": {tasks.Console},
		"/internal/tenants/{tenant_id}/media":            {tasks.API},
		"/internal/tenants/{tenant_id}/templates":        {tasks.API},
		"/internal/tenants/{tenant_id}/templates/{name}": {tasks.API},
	}
	seen := map[string]bool{}
	for _, r := range tasks.Routes() {
		if seen[r.Path] {
			t.Errorf("%s: in the table twice", r.Path)
		}
		seen[r.Path] = true
		if w, ok := want[r.Path]; !ok || !slices.Equal(w, r.Callers) {
			t.Errorf("%s: callers %v, want %v", r.Path, r.Callers, w)
		}
		if len(r.Methods) == 0 {
			t.Errorf("%s: no method", r.Path)
		}
		isTask := strings.HasPrefix(r.Path, "/internal/process_")
		switch {
		case isTask && r.Via != tasks.ViaTask:
			t.Errorf("%s: via %s, want task", r.Path, r.Via)
		case isTask && len(r.Queues) == 0 && !r.TenantQueues:
			t.Errorf("%s: a task route fed by no queue", r.Path)
		case !isTask && (len(r.Queues) > 0 || r.TenantQueues):
			t.Errorf("%s: queues on a route no task targets", r.Path)
		case r.Path == tasks.SweepPath && r.Via != tasks.ViaScheduler:
			t.Errorf("%s: via %s, want scheduler", r.Path, r.Via)
		}
	}
	for path := range want {
		if !seen[path] {
			t.Errorf("%s: not in the table", path)
		}
	}
}

func TestRouteOf(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ path, want string }{
		{"/internal/process_inbound", tasks.ProcessInboundPath},
		{"/internal/sweep", tasks.SweepPath},
		{"/internal/tenants/acme/media/123", "/internal/tenants/{tenant_id}/media/{media_id}"},
		{"/internal/tenants/acme/media", "/internal/tenants/{tenant_id}/media"},
		{"/internal/tenants/acme/templates/hello%2Fthere", "/internal/tenants/{tenant_id}/templates/{name}"},
		{"/internal/tenants//media", ""},
		{"/internal/tenants/acme/media/1/2", ""},
		{"/internal/process_inbound/", ""},
		{"/internal/nope", ""},
		{"/healthz", ""},
	} {
		r, ok := tasks.RouteOf(tc.path)
		if r.Path != tc.want || ok != (tc.want != "") {
			t.Errorf("RouteOf(%q) = %q, %v; want %q", tc.path, r.Path, ok, tc.want)
		}
	}
}

func TestFromQueue(t *testing.T) {
	t.Parallel()
	route := func(path string) tasks.Route {
		r, _ := tasks.RouteOf(path)
		return r
	}
	for _, tc := range []struct {
		path, queue string
		want        bool
	}{
		{tasks.ProcessInboundPath, tasks.InboundQueueID, true},
		{tasks.ProcessInboundPath, tasks.OutboundQueueID, false},
		{tasks.ProcessInboundPath, "wa-out-acme", false},
		{tasks.ProcessInboundPath, "", false},
		{tasks.ProcessOutboundPath, tasks.OutboundQueueID, true},
		{tasks.ProcessOutboundPath, "wa-out-acme", true},
		{tasks.ProcessOutboundPath, tasks.InboundQueueID, false},
		{tasks.ProcessSendPath, "wa-out-acme", true},
		{tasks.ProcessSendPath, "wa-out-", false},
		// The single-tenant default's records, sent by the sweep from themselves.
		{tasks.ProcessSendPath, tasks.OutboundQueueID, true},
		{tasks.ProcessSendPath, tasks.InboundQueueID, false},
		// The full name is not what Cloud Tasks sends: the queue's id is.
		{tasks.ProcessSendPath, "projects/p/locations/l/queues/wa-out-acme", false},
		{tasks.ProcessActionPath, "wa-out-acme", true},
		{tasks.ProcessActionPath, tasks.InboundQueueID, false},
	} {
		if got := route(tc.path).FromQueue(tc.queue); got != tc.want {
			t.Errorf("%s from %q: %v, want %v", tc.path, tc.queue, got, tc.want)
		}
	}
}

func TestRouteCallers(t *testing.T) {
	t.Parallel()
	full := tasks.CallersOf(func(c tasks.Caller, via tasks.Via) string {
		return string(c) + "-" + string(via) + "@p.iam.gserviceaccount.com"
	})
	with := func(path string, emails ...string) tasks.RouteCallers {
		rc := tasks.RouteCallers{}
		for k, v := range full {
			rc[k] = v
		}
		if emails == nil {
			delete(rc, path)
		} else {
			rc[path] = emails
		}
		return rc
	}
	for _, tc := range []struct {
		name     string
		rc       tasks.RouteCallers
		complete bool
		wantErr  string
	}{
		{"the whole table", full, true, ""},
		{"a route missing, in dev", with(tasks.SweepPath), false, ""},
		{"a route missing, outside dev", with(tasks.SweepPath), true, "missing /internal/sweep"},
		{"nobody on a route", with(tasks.HealthPath, []string{}...), true, ""},
		{"unknown route", with("/internal/process_everything", "a@p.iam.gserviceaccount.com"), true, `"/internal/process_everything" is not a worker route`},
		{"not an email", with(tasks.ProcessInboundPath, "webhook-invoker"), true, `"webhook-invoker" is not a service account email`},
		{"a name and an email", with(tasks.ProcessInboundPath, "Hook <a@p.iam.gserviceaccount.com>"), true, "is not a service account email"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := tc.rc.Validate(tc.complete)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("Validate: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), "ROUTE_CALLERS: ")):
				t.Fatalf("Validate = %v, want an error naming ROUTE_CALLERS with %q", err, tc.wantErr)
			}
		})
	}

	var rc tasks.RouteCallers
	sweep, _ := tasks.RouteOf(tasks.SweepPath)
	if err := rc.EnvDecode(`{"/internal/sweep":["s@p.iam.gserviceaccount.com"]}`); err != nil || !rc.Admits(sweep, "s@p.iam.gserviceaccount.com") {
		t.Errorf("EnvDecode: %v, %v", err, rc)
	}
	for _, bad := range []string{`["/internal/sweep"]`, `{"/internal/sweep":"s@p"}`, `{`, `{} {}`} {
		if err := rc.EnvDecode(bad); err == nil {
			t.Errorf("EnvDecode(%s) accepted", bad)
		}
	}
}

func TestCheckInvoker(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		email   string
		dev     bool
		wantErr bool
	}{
		{"", true, false},
		{"", false, true},
		{"wapipe-inv-api@p.iam.gserviceaccount.com", false, false},
		{"not an email", true, true},
	} {
		err := tasks.CheckInvoker(tc.email, tc.dev)
		if (err != nil) != tc.wantErr || (err != nil && !strings.HasPrefix(err.Error(), "TASKS_SERVICE_ACCOUNT_EMAIL: ")) {
			t.Errorf("CheckInvoker(%q, dev %v) = %v, want error %v naming TASKS_SERVICE_ACCOUNT_EMAIL", tc.email, tc.dev, err, tc.wantErr)
		}
	}
}
