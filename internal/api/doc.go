// Package api is the business-facing service (cmd/api): POST /v1/messages sends a message on a
// tenant's behalf through its send queue and the same idempotency records as replies, GET
// /v1/messages/{id} reports its state, and the Embedded Signup routes connect (or reconnect) a
// tenant's WhatsApp account: the state of a connect link is sealed with the secrets keeper (so
// the CLI that makes it and the service that opens it share no other secret), valid an hour and
// used once. The link opens a page naming the tenant; only its button (a same-origin POST) spends
// the link and starts Meta's dialog, and the callback accepts a login only when it shares every
// account the tenant has.
package api
