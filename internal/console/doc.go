// Package console is the operators' web console (cmd/console, a private service): server-rendered
// pages over wapipe's state — the health report with the last hour's sends, the tenants and their
// usage, each tenant's inbox and conversations, the dead letters with replay, and the search that
// wapipe inspect does — and the few actions an operator takes from them (reply, assign, close,
// replay, reconnect).
//
// The package is the service's door: it checks the host and the operator, gives each browser
// its CSRF token, and mounts the rooms that hold the pages, each a package below it that does
// not import it: overview (the front page), tenants (the tenants, a tenant's page, its API
// keys), inbox (conversations, replies, images) and failures (dead letters, replay, inspect).
// What they share, the templates and page chrome, errors, audited actions and the CSRF guard,
// is package page.
//
// Every request but /healthz must name one of the console's hosts (HostPolicy: against DNS
// rebinding) and carry a verified operator: IAP's signed assertion, or the ID token Cloud Run's
// IAM check accepted (internal/identity); in dev a loopback caller. The verified email is the
// operator the audit records; a header that merely names a user is never read.
//
// The inbox is a split view: a tenant's conversations (filters open, assigned to me, needs
// reply, closed, all; a preview, the messages since the last answer and the status of each) beside
// the open conversation, whose thread htmx refreshes every few seconds (204 while nothing
// changed) above a reply box that stays in view. A conversation reads in Meta's time, then in
// the order wapipe had the messages, and says who wrote each: the contact, the assistant, an
// operator (by email) or an action's result.
//
// People are shown by what people read (inbox/contacts.go): the WhatsApp profile name and username,
// and the phone's last four digits where Meta shared it; never a phone number or a
// business-scoped user id (BSUID) in clear. A contact known by BSUID alone is offered Meta's
// REQUEST_CONTACT_INFO button, sent through the operator's reply path; the tenant page marks the
// file members listed by phone whose BSUID is not known yet (they would be strangers if they
// wrote by BSUID alone). Replies go to the phone when it is known, else by recipient (the BSUID).
//
// No URL the console makes carries a person (CONTRACT.md, Wave 4): conversation ids are keyed,
// the inbox search (number, BSUID, name, @username, message text) and the inspect search (wamid,
// idempotency key, …) are POSTs behind the CSRF token, a GET of the inspect search runs only a
// keyed ref_ or a dead letter's id, and the failures page links those, never a wamid or a phone.
//
// Pages are html/template with htmx and a small console.js (local times, Ctrl/Cmd+Enter),
// vendored under static/ and embedded; no CDN, no JavaScript build. Every action is a POST that passes net/http's cross-origin protection and a
// double-submit CSRF token, carries a request id made when its form was rendered, and is written
// once to the audit collection under that id: a double click finds the entry and does not act
// twice. Tokens and secrets are never rendered; message text appears on the conversation page
// (its purpose) and never in logs.
package console
