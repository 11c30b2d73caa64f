// Package tasks holds wapipe's Cloud Tasks contracts: the queue definitions of queues.yaml (embedded,
// loaded and validated here, and read as well by Terraform and the local emulator), the JSON bodies
// of the inbound and outbound tasks, and the deterministic task names derived from Meta's ids.
//
// Everything a producer and a consumer of a task must agree on lives here, so the webhook, the
// worker, the emulator and the operator CLI cannot drift apart.
package tasks
