// Package httpserver runs an HTTP handler the way Cloud Run expects: serve on the listener main
// opened on $PORT, stop accepting on SIGTERM (the context ending), and drain in-flight requests
// before returning. It also bounds how request bodies arrive (BodyLimits): a body must keep pace
// with a floor rate, and the bytes held by requests in flight are charged to a Budget as they
// arrive, so slow or oversized uploads cannot hold a service's memory or its requests hostage;
// with NewClientBudget, one client's unverified bodies hold at most its share of the budget, so
// no one address can fill it.
//
// It holds the one way the services answer JSON (WriteJSON: encoded before anything is written)
// and the one set of security headers of what a browser renders (SetSecurityHeaders: every HTML
// page and every contact's file).
package httpserver
