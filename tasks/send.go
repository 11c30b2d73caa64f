package tasks

import (
	"strconv"
	"time"
)

// ProcessSendPath is the worker route that sends one message from its outbound record alone: a
// send made through the api service (POST /v1/messages), or a parked send released.
const ProcessSendPath = "/internal/process_send"

// Send is the body of a task on a tenant's send queue to ProcessSendPath. The record
// (outbound_messages, keyed by IdempotencyKey) holds the message, the recipient and the number;
// the task only names it.
type Send struct {
	IdempotencyKey string `json:"idempotency_key"`
	CorrelationID  string `json:"correlation_id"`
	// TenantID is always written: "" is the single-tenant default's record (which the sweep
	// sends from itself, on the outbound queue); a body without it names nobody (Route.QueueOf).
	TenantID string `json:"tenant_id"`
	// ReleaseGen is the release generation of a parked send released (store.Sends.ReleaseParked);
	// 0 for a send's first task.
	ReleaseGen int64 `json:"release_gen,omitempty"`
}

// sendKeyPrefix starts the idempotency keys of sends made through the api service; they travel
// as biz_opaque_callback_data like replies' keys, so statuses find their record.
const sendKeyPrefix = "send-"

// SendKey is the idempotency key of the record of the api message apiMessageID.
func SendKey(apiMessageID string) string {
	return sendKeyPrefix + hashID("send", apiMessageID)
}

// SendTaskID is the task id of the send of the record key, for its release generation gen (0
// for its first task): deterministic, so a request or a release repeated creates no second task.
func SendTaskID(key string, gen int64) string {
	return hashID("send", key+"\x00"+strconv.FormatInt(gen, 10)) + "-send"
}

// SweptSendTaskID is the task id of the send the sweep makes of a record, for why ("held": its
// wait for an unknown outcome ends; "stranded": its task may be gone) and its state since:
// deterministic, so the sweeps of the hour that follows make no second task for the same state
// of the record; a resend, or a record held after a stranded one's task, begins a new one.
func SweptSendTaskID(key, why string, since time.Time) string {
	return hashID("swept", key+"\x00"+why+"\x00"+strconv.FormatInt(since.UnixNano(), 10)) + "-swept"
}

// SendTask is the process_send task of the record key of tenant tenantID ("" the single-tenant
// default's), for its release generation gen (0 for its first task): the one place a process_send
// body is written, whoever sends a record from itself (an api send, a console reply, a
// notification, a released parked send, the sweep, a record's own dead letter).
func SendTask(key, correlationID, tenantID string, gen int64) Spec {
	task, err := NewTask(Send{IdempotencyKey: key, CorrelationID: correlationID, TenantID: tenantID, ReleaseGen: gen})
	if err != nil {
		// A Send is strings and an integer, and its route has a queue for every tenant.
		panic("tasks.SendTask: " + err.Error())
	}
	return task
}
