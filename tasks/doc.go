// Package tasks holds wapipe's Cloud Tasks contracts: the queue definitions of queues.yaml (embedded,
// loaded and validated here, and read as well by Terraform and the local emulator), the JSON bodies
// of the tasks and the deterministic task names derived from them, and the one table of the
// worker's routes (routes.go): who may call each, and for a task route the queues that feed it, its
// body, and so its task's id and queue (NewTask) and what a replay of its dead letter reopens.
//
// Everything a producer and a consumer of a task must agree on lives here, so the webhook, the
// worker, the emulator and the operator CLI cannot drift apart.
package tasks
