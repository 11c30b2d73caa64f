// Package api is the business-facing service (cmd/api): POST /v1/messages sends a message on a
// tenant's behalf through its send queue and the same idempotency records as replies, GET
// /v1/messages/{id} reports its state, /v1/templates and /v1/media pass through the worker's
// tenant routes, and it mounts Embedded Signup (internal/signup), which connects (or reconnects)
// a tenant's WhatsApp account, at its routes under the caller's address limit.
package api
