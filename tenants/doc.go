// Package tenants holds tenant files (the input of `wapipe tenants apply`) that ship with wapipe:
// the local stack's sample tenant, which cmd/devstack applies on start.
package tenants

import _ "embed"

//go:embed sample.yaml
var sample []byte

// Sample returns tenants/sample.yaml, the local stack's sample tenant.
func Sample() []byte { return append([]byte(nil), sample...) }
