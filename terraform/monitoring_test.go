package terraform

import (
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// TestAccountRestrictionAlert finds the log-based metric counting the worker's account_update
// lines at ERROR (a tenant's WhatsApp Business Account restricted: internal/events) and an alert
// policy on that metric that notifies var.alert_notification_channels, which defaults to none.
func TestAccountRestrictionAlert(t *testing.T) {
	t.Parallel()
	m := loadModule(t)

	metric := ""
	for _, addr := range m.resourcesOfType("google_logging_metric") {
		terms := filterTerms(m.text(attrExpr(m.resources[addr].Body, "filter")))
		if slices.Contains(terms, `jsonPayload.event="account_update"`) && slices.Contains(terms, `severity="ERROR"`) {
			if !slices.Contains(terms, `resource.labels.service_name="${local.worker_service_name}"`) {
				t.Errorf("%s: the filter %v does not name the worker service", addr, terms)
			}
			metric = addr
		}
	}
	if metric == "" {
		t.Fatalf(`no google_logging_metric filters jsonPayload.event="account_update" severity="ERROR" (metrics: %v)`,
			m.resourcesOfType("google_logging_metric"))
	}

	policies := 0
	for _, addr := range m.resourcesOfType("google_monitoring_alert_policy") {
		body := m.resources[addr].Body
		onMetric := false
		for _, c := range childBlocks(body, "conditions") {
			for _, th := range childBlocks(c.Body, "condition_threshold") {
				for _, tr := range hclsyntax.Variables(attrExpr(th.Body, "filter")) {
					if traversalString(tr) == metric+".name" {
						onMetric = true
					}
				}
			}
		}
		if !onMetric {
			continue
		}
		policies++
		channels := attrExpr(body, "notification_channels")
		if got := m.text(channels); got != "var.alert_notification_channels" {
			t.Errorf("%s: notification_channels = %q, want var.alert_notification_channels", addr, got)
		}
	}
	if policies != 1 {
		t.Fatalf("%d google_monitoring_alert_policy resources on %s, want 1", policies, metric)
	}

	v := m.variables["alert_notification_channels"]
	if v == nil {
		t.Fatal("no variable alert_notification_channels")
	}
	if got := m.text(attrExpr(v.Body, "type")); got != "list(string)" {
		t.Errorf("alert_notification_channels type = %q, want list(string)", got)
	}
	if got := m.text(attrExpr(v.Body, "default")); got != "[]" {
		t.Errorf("alert_notification_channels default = %q, want []", got)
	}
}

// filterTerms splits a Cloud Logging filter written one term a line (a heredoc) into its terms.
func filterTerms(src string) []string {
	var out []string
	for _, line := range strings.Split(src, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "<<") || line == "EOT" {
			continue
		}
		out = append(out, line)
	}
	return out
}
