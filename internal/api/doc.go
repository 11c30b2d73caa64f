// Package api is the business-facing service (cmd/api): POST /v1/messages sends a message on a
// tenant's behalf through its send queue and the same idempotency records as replies, GET
// /v1/messages/{id} reports its state, and the Embedded Signup routes connect (or reconnect) a
// tenant's WhatsApp account: the state of a connect link is sealed with the secrets keeper (so
// the CLI that makes it and the service that opens it share no other secret), valid an hour and
// used once.
package api
