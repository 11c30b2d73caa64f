// Package taskqueue creates wapipe's HTTP tasks on Cloud Tasks (or the local emulator): every task
// targets the worker, carries the internal token, the correlation id and the trace context, has a
// deterministic name, and optionally an OIDC token. Admin reads and manages the queues and their
// tasks (queue stats for health, tasks for the operator CLI). This package is the only one that
// imports the Cloud Tasks client libraries (the emulator and tests aside).
package taskqueue
