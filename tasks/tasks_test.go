package tasks_test

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wapipe/wapipe/internal/keyedid"
	"github.com/wapipe/wapipe/internal/tenant"
	"github.com/wapipe/wapipe/tasks"
)

func TestEmbeddedQueues(t *testing.T) {
	t.Parallel()
	f, err := tasks.ParseQueues(tasks.EmbeddedQueuesYAML())
	if err != nil {
		t.Fatalf("the embedded queues.yaml is invalid: %v", err)
	}
	in, ok1 := f.Queue(tasks.InboundQueueID)
	out, ok2 := f.Queue(tasks.OutboundQueueID)
	if !ok1 || !ok2 {
		t.Fatalf("queues %v, want %s and %s", f.IDs(), tasks.InboundQueueID, tasks.OutboundQueueID)
	}
	// What the issue asks of the two queues.
	if in.RateLimits.MaxDispatchesPerSecond < 50 || in.RateLimits.MaxConcurrentDispatches < 50 {
		t.Errorf("inbound rate limits %+v, want ≥ 50", in.RateLimits)
	}
	if r := out.RateLimits.MaxDispatchesPerSecond; r < 5 || r > 20 {
		t.Errorf("outbound rate %v, want 5–20 to stay under Meta's limits", r)
	}
	for _, q := range []tasks.Queue{in, out} {
		rc := q.RetryConfig
		if rc.MinBackoff.Duration < 5*time.Second || rc.MaxBackoff.Duration > 10*time.Minute || rc.MaxAttempts < 1 {
			t.Errorf("%s retry config %+v: want min backoff ≥ 5 s, max ≤ 10 min, finite attempts", q.ID, rc)
		}
	}
}

func TestParseQueuesRefuses(t *testing.T) {
	t.Parallel()
	valid := `queues:
  q1:
    rate_limits: {max_dispatches_per_second: 10, max_concurrent_dispatches: 5}
    retry_config: {max_attempts: 3, min_backoff: 1s, max_backoff: 10s, max_doublings: 2, max_retry_duration: 0s}
    stackdriver_logging_config: {sampling_ratio: 1.0}
`
	if _, err := tasks.ParseQueues([]byte(valid)); err != nil {
		t.Fatalf("valid file refused: %v", err)
	}
	tests := []struct{ name, from, to, wantErr string }{
		{"zero rate", "max_dispatches_per_second: 10", "max_dispatches_per_second: 0", "max_dispatches_per_second"},
		{"zero attempts", "max_attempts: 3", "max_attempts: 0", "max_attempts"},
		{"max below min backoff", "max_backoff: 10s", "max_backoff: 0.5s", "max_backoff"},
		{"duration without unit", "min_backoff: 1s", "min_backoff: 1", "duration"},
		{"Go-style duration", "min_backoff: 1s", "min_backoff: 1m", "duration"},
		{"unknown field", "max_doublings: 2", "max_doublings: 2, max_burst: 3", "max_burst"},
		{"bad queue id", "  q1:", "  q_1:", "id must match"},
		{"sampling over 1", "sampling_ratio: 1.0", "sampling_ratio: 1.5", "sampling_ratio"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := tasks.ParseQueues([]byte(strings.Replace(valid, tc.from, tc.to, 1)))
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error %v, want one about %s", err, tc.wantErr)
			}
		})
	}
}

func TestIsLastAttempt(t *testing.T) {
	t.Parallel()
	q := tasks.Queue{RetryConfig: tasks.RetryConfig{MaxAttempts: 3}}
	for retry, want := range []bool{false, false, true, true} {
		if got := q.IsLastAttempt(retry); got != want {
			t.Errorf("retry count %d: last attempt %v, want %v (max_attempts 3 counts the first)", retry, got, want)
		}
	}
	if (tasks.Queue{RetryConfig: tasks.RetryConfig{MaxAttempts: -1}}).IsLastAttempt(1000) {
		t.Error("an unlimited queue has no last attempt")
	}
}

func TestNamesAndKeys(t *testing.T) {
	t.Parallel()
	taskID := regexp.MustCompile(`^[A-Za-z0-9_-]{1,500}$`)
	ids := []string{"wamid.HBgLMTY1MDU1NTEyMzQVAgASGBQ/+=", "wamid.x:delivered", ""}
	seen := map[string]bool{}
	for _, id := range ids {
		for _, name := range []string{tasks.InboundTaskID(id), tasks.OutboundTaskID(id), tasks.ReplayTaskID(id)} {
			if !taskID.MatchString(name) {
				t.Errorf("task id %q is not a valid Cloud Tasks id", name)
			}
			if seen[name] {
				t.Errorf("task id %q derived twice", name)
			}
			seen[name] = true
		}
		if tasks.InboundTaskID(id) != tasks.InboundTaskID(id) {
			t.Error("task ids must be deterministic")
		}
		k := keyedid.Dev()
		for _, key := range []string{tasks.IdempotencyKey(k, id), tasks.LegacyIdempotencyKey(id), tasks.ActionReplyKey(k, id),
			tasks.LegacyActionReplyKey(id), tasks.LegacyReplyKey(id, 1)} {
			if !tasks.IsIdempotencyKey(key) || len(key) > 512 {
				t.Errorf("idempotency key %q: not recognised, or too long for biz_opaque_callback_data", key)
			}
		}
		if tasks.IdempotencyKey(k, id) == tasks.LegacyIdempotencyKey(id) {
			t.Error("the keyed idempotency key equals the unkeyed one")
		}
		if tasks.IdempotencyKey(k, id) != k.ReplyKey(id, 0) || tasks.LegacyReplyKey(id, 0) != tasks.LegacyIdempotencyKey(id) {
			t.Error("a turn's first reply key must be the message's idempotency key")
		}
	}
	for _, s := range []string{"", "reply-", "reply-xyz", "order-1234", "reply-" + strings.Repeat("g", 32)} {
		if tasks.IsIdempotencyKey(s) {
			t.Errorf("IsIdempotencyKey(%q) = true", s)
		}
	}
	for _, s := range []string{"wa-inbound", "projects/p/locations/l/queues/wa-inbound"} {
		if got := tasks.QueueID(s); got != "wa-inbound" {
			t.Errorf("QueueID(%q) = %q", s, got)
		}
	}
}

func TestTenantQueues(t *testing.T) {
	t.Parallel()
	f := tasks.DefaultQueues()
	tmpl, ok := f.Templates[tasks.TenantOutboundTemplate]
	if !ok {
		t.Fatalf("queues.yaml has no %s template", tasks.TenantOutboundTemplate)
	}
	out, _ := f.Queue(tasks.OutboundQueueID)
	if tmpl.RetryConfig != out.RetryConfig {
		t.Errorf("tenant retry config %+v, want wa-outbound's %+v", tmpl.RetryConfig, out.RetryConfig)
	}
	for _, id := range f.IDs() {
		if id == tasks.TenantOutboundTemplate {
			t.Errorf("the template is listed among the queues to create")
		}
	}

	if got := tasks.TenantQueueID("acme-bus"); got != "wa-out-acme-bus" {
		t.Errorf("TenantQueueID = %q", got)
	}
	q, ok := f.Queue("wa-out-acme-bus")
	if !ok || q.ID != "wa-out-acme-bus" || q.RetryConfig != tmpl.RetryConfig {
		t.Errorf("Queue(wa-out-acme-bus) = %+v, %v; want the template under that id", q, ok)
	}
	if _, ok := f.Queue(tasks.TenantQueuePrefix); ok {
		t.Error("Queue(wa-out-) resolved: a tenant queue needs a tenant id")
	}
	if _, ok := f.Queue(tasks.TenantOutboundTemplate); ok {
		t.Error("the template resolves as a queue")
	}

	tq := tasks.TenantQueue("acme-bus", tenant.Sending{PerSecond: 5, MaxConcurrent: 3})
	want := tmpl
	want.ID = "wa-out-acme-bus"
	want.RateLimits = tasks.RateLimits{MaxDispatchesPerSecond: 5, MaxConcurrentDispatches: 3}
	if diff := cmp.Diff(want, tq); diff != "" {
		t.Errorf("TenantQueue (-want, +got):\n%s", diff)
	}
}
