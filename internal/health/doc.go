// Package health answers "is wapipe all right?" in one request: queue depth and oldest task age for
// both queues (Cloud Tasks queue stats), outbound records pending, sending and failed, dead letters
// waiting, and over the last hour the send success rate and the webhook-to-sent latency p50/p95,
// all from count aggregations rather than scans. The verdict is ok, degraded or
// failing, with the reasons.
package health
