// Package page is what the console's rooms (inbox, tenants, failures, overview) share to answer
// an operator: the parsed templates and their page chrome (Kit.Render, with the security
// headers), the errors an operator may read (Kit.Fail, UserMessage), the actions that run once
// per request id and are audited (Kit.Perform), the CSRF guard of every POST (Kit.Protect), the
// verified operator in the request's context, and the lookups several rooms make (a tenant from
// the path, a contact's conversation). The console package mounts the rooms and imports them;
// neither the rooms nor this package import it.
package page
