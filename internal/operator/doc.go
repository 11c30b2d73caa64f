// Package operator is what wapipe's operator CLI (cmd/wapipe) does, kept out of the command so that it
// can be tested and reused: deliver signed sample webhooks, follow one event through the pipeline
// (dedupe marker, trace, outbound record, statuses, dead letters, tasks still queued), read the
// Cloud Tasks queues the way `gcloud tasks list/describe` does, replay dead letters without ever
// answering twice, and read the worker's health report.
//
// Everything it renders for people keeps the logging rules: task and dead-letter bodies show an
// allow-list of fields (redact.go), with phone numbers and wamids replaced by their keyed refs
// (logging.Hasher, LOG_HASH_KEY), and token headers are masked.
package operator
