package assistant

import "github.com/wapipe/wapipe/internal/tenant"

// DataLines renders an action's data of tenant tn as its confirmation showed it, in lang: one
// "label: value" line per field with a value, in the intent's field order. A notification of
// the action (package notify) shows the confirmed data the same way.
func DataLines(lang string, tn *tenant.Tenant, in tenant.Intent, data map[string]any) string {
	return dataLines(lang, tn.Currency, in, data)
}
