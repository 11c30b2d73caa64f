package terraform

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

// TestAlertConditions finds, for each of the contract's five alert conditions ("Notifications
// and alerts") and for a restricted account (account_update at ERROR), a log-based metric whose filter selects the worker's log lines of the condition's
// event, and one alert policy on that metric that notifies var.alert_notification_channels; and
// checks that every event a metric filters on is one the Go code logs (a renamed event would
// leave an alert that never fires).
func TestAlertConditions(t *testing.T) {
	t.Parallel()
	m := loadModule(t)
	for _, tc := range []struct {
		condition string
		terms     []string
	}{
		{"dead letters written", []string{`jsonPayload.event="dead_lettered"`, `severity="ERROR"`}},
		{"tenants needing reauth", []string{`jsonPayload.event="tenant_needs_reauth"`, `severity="ERROR"`}},
		{"failed delivery statuses", []string{`jsonPayload.event="status_applied"`, `jsonPayload.status="failed"`, `severity="ERROR"`}},
		{"actions failed after their last attempt", []string{`jsonPayload.event="action_failed"`, `severity="ERROR"`}},
		{"oldest task of a queue older than 10 minutes", []string{`jsonPayload.event="queue_stalled"`, `severity="ERROR"`}},
		{"account restricted", []string{`jsonPayload.event="account_update"`, `severity="ERROR"`}},
	} {
		t.Run(tc.condition, func(t *testing.T) {
			t.Parallel()
			metrics := metricFilters(t, m)
			var found []string
			for name, terms := range metrics {
				if containsAll(terms, tc.terms) {
					found = append(found, name)
					if !slices.Contains(terms, `resource.labels.service_name="wapipe-worker"`) {
						t.Errorf("%s: the filter %v does not name the worker service", name, terms)
					}
				}
			}
			if len(found) != 1 {
				t.Fatalf("%d log-based metrics filter %v, want 1 (metrics: %v)", len(found), tc.terms, sortedKeys(metrics))
			}
			if n := policiesOn(t, m, found[0]); n != 1 {
				t.Errorf("%d alert policies on %s notify var.alert_notification_channels, want 1", n, found[0])
			}
		})
	}

	events := map[string]bool{}
	re := regexp.MustCompile(`jsonPayload\.event="([^"]+)"`)
	for _, terms := range metricFilters(t, m) {
		for _, term := range terms {
			if s := re.FindStringSubmatch(term); s != nil {
				events[s[1]] = true
			}
		}
	}
	logged := loggedEvents(t)
	for _, ev := range sortedKeys(events) {
		if !logged[ev] {
			t.Errorf("a metric filters on event %q, which no Go file under internal/ logs", ev)
		}
	}
}

// metricFilters returns every log-based metric's filter terms, by address ("type.name", or
// "type.name[key]" for each instance of a for_each metric).
func metricFilters(t *testing.T, m *module) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, addr := range m.resourcesOfType("google_logging_metric") {
		body := m.resources[addr].Body
		filter := attrExpr(body, "filter")
		if attrExpr(body, "for_each") == nil {
			v, err := m.eval(filter, nil)
			if err != nil {
				t.Fatalf("%s filter: %v", addr, err)
			}
			out[addr] = filterTerms(v.AsString())
			continue
		}
		each, err := m.eval(attrExpr(body, "for_each"), nil)
		if err != nil {
			t.Fatalf("%s for_each: %v", addr, err)
		}
		for key, val := range each.AsValueMap() {
			v, err := m.eval(filter, map[string]cty.Value{"each": cty.ObjectVal(map[string]cty.Value{"key": cty.StringVal(key), "value": val})})
			if err != nil {
				t.Fatalf("%s[%s] filter: %v", addr, key, err)
			}
			out[addr+"["+key+"]"] = filterTerms(v.AsString())
		}
	}
	return out
}

// policiesOn counts the alert policies with a condition on metric (an address from
// metricFilters) whose notification_channels is var.alert_notification_channels. A for_each
// policy is on metric[key] when it refers to the metric as metric[each.key] and has the same
// for_each.
func policiesOn(t *testing.T, m *module, metric string) int {
	t.Helper()
	base, key, keyed := strings.Cut(strings.TrimSuffix(metric, "]"), "[")
	n := 0
	for _, addr := range m.resourcesOfType("google_monitoring_alert_policy") {
		body := m.resources[addr].Body
		if m.text(attrExpr(body, "notification_channels")) != "var.alert_notification_channels" {
			continue
		}
		forEach := attrExpr(body, "for_each")
		if keyed != (forEach != nil) {
			continue
		}
		if keyed {
			metricEach := attrExpr(m.resources[base].Body, "for_each")
			if m.text(forEach) != m.text(metricEach) {
				continue
			}
			v, err := m.eval(forEach, nil)
			if err != nil || !v.Type().IsObjectType() || !v.Type().HasAttribute(key) {
				continue
			}
		}
		want := metric + ".name"
		if keyed {
			want = base + "[each.key].name"
		}
		on := false
		for _, c := range childBlocks(body, "conditions") {
			for _, th := range childBlocks(c.Body, "condition_threshold") {
				f := attrExpr(th.Body, "filter")
				for _, tr := range hclsyntax.Variables(f) {
					if traversalString(tr) == want || strings.Contains(m.text(f), want) {
						on = true
					}
				}
			}
		}
		if on {
			n++
		}
	}
	return n
}

// loggedEvents returns the event names the Go code under ../internal logs: string literals in
// non-test files that log with an "event" attribute (`"event", "x"`, or a constant or variable
// holding "x" passed as the event).
func loggedEvents(t *testing.T) map[string]bool {
	t.Helper()
	lit := regexp.MustCompile(`"([a-z][a-z0-9_]+)"`)
	out := map[string]bool{}
	err := filepath.WalkDir("../internal", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		src := string(b)
		if !strings.Contains(src, `"event"`) {
			return nil
		}
		for _, s := range lit.FindAllStringSubmatch(src, -1) {
			out[s[1]] = true
		}
		return nil
	})
	if err != nil {
		t.Fatalf("read the Go code: %v", err)
	}
	return out
}

func containsAll(have, want []string) bool {
	for _, w := range want {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}
