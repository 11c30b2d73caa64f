// Package overview is the console's front page: the health report as the worker computes it,
// the last hour's sends drawn as an inline SVG chart (chart.go), the tenants that need an
// operator (no working token, quota used up, account restricted) and every tenant's send queue.
// Each part is read concurrently and shown as failed on its own. The console mounts it
// (internal/console); it renders with the console's page kit (internal/console/page).
package overview
