// Package tenants is the console's room of tenants: the list with each tenant's usage and send
// queue (Rows, which the overview shows too), a tenant's page (its file as applied, its token's
// state, usage, members who joined by invite, templates, and Reconnect, which makes an Embedded
// Signup link) and its API keys. It never renders a token or an action secret. The console mounts
// it (internal/console); it renders with the console's page kit (internal/console/page).
package tenants
