// Package cloudtasksemu is a local Cloud Tasks: a real gRPC server for google.cloud.tasks.v2.CloudTasks
// that the official cloud.google.com/go/cloudtasks/apiv2 client talks to unchanged, and that
// dispatches HTTP tasks the way Cloud Tasks does (schedule times, rate limits with a token bucket,
// max concurrent dispatches, the documented retry schedule, dispatch deadlines, Retry-After, the
// X-CloudTasks-* headers and OIDC tokens a worker can verify offline).
//
// It is embeddable: Start runs one on a free port for a test or the local stack and returns its
// address, which is what CLOUD_TASKS_EMULATOR_HOST holds. cmd/tasks-emulator is the thin binary
// around it.
//
// One port serves both gRPC and plain HTTP: connections that open with the HTTP/2 client preface go
// to the gRPC server, anything else to an HTTP server answering the OIDC issuer's discovery
// document and JWKS, so http://<addr> is a usable issuer for github.com/coreos/go-oidc/v3.
//
// Queue statistics exist only in the v2beta3 API (Queue.stats with GetQueue's read_mask), so the
// emulator also answers google.cloud.tasks.v2beta3.CloudTasks GetQueue and ListQueues over the same
// state; every other v2beta3 method answers Unimplemented.
//
// Where the Cloud Tasks documentation leaves a behaviour open, the emulator follows what production
// is observed to do, and says so where it does it.
package cloudtasksemu
