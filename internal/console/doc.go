// Package console is the operators' web console (cmd/console, a private service): server-rendered
// pages over wapipe's state — the health report with the last hour's sends, the tenants and their
// usage, each tenant's inbox and conversations, the dead letters with replay, and the search that
// wapipe inspect does — and the few actions an operator takes from them (reply, assign, close,
// replay, reconnect).
//
// Every request but /healthz must name one of the console's hosts (HostPolicy: against DNS
// rebinding) and carry a verified operator: IAP's signed assertion, or the ID token Cloud Run's
// IAM check accepted (internal/identity); in dev a loopback caller. The verified email is the
// operator the audit records; a header that merely names a user is never read.
//
// Pages are html/template with htmx (vendored under static/, embedded; no CDN, no JavaScript
// build). Every action is a POST that passes net/http's cross-origin protection and a
// double-submit CSRF token, carries a request id made when its form was rendered, and is written
// once to the audit collection under that id: a double click finds the entry and does not act
// twice. Tokens and secrets are never rendered; message text appears on the conversation page
// (its purpose) and never in logs.
package console
