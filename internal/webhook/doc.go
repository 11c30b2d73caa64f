// Package webhook is the public service Meta calls: it verifies each WhatsApp webhook delivery,
// derives its inbound_event_id, marks it in the dedupe store and creates exactly one inbound task,
// answering Meta in milliseconds and only once the task exists.
package webhook
