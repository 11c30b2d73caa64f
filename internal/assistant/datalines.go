package assistant

import "github.com/wapipe/wapipe/internal/tenant"

// DataLines renders an action's data as its confirmation showed it: one "field: value" line per
// field with a value, in the intent's field order. A notification of the action (package
// notify) shows the confirmed data the same way.
func DataLines(in tenant.Intent, data map[string]any) string { return dataLines(in, data) }
