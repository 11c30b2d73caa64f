package terraform

import (
	"strings"
	"testing"
)

// TestAlertChannelsVariable: var.alert_notification_channels, which every alert policy notifies
// (TestAlertConditions), is a list of channel ids that defaults to none.
func TestAlertChannelsVariable(t *testing.T) {
	t.Parallel()
	m := loadModule(t)
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

// filterTerms splits a Cloud Logging filter written one term a line into its terms.
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
