// Package httpserver runs an HTTP handler the way Cloud Run expects: serve on the listener main
// opened on $PORT, stop accepting on SIGTERM (the context ending), and drain in-flight requests
// before returning.
package httpserver
