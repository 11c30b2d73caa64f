package worker

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/wapipe/wapipe/internal/keyedid"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/whatsapp"
	"github.com/wapipe/wapipe/tasks"
)

// FuzzInboundTask feeds arbitrary bytes to the inbound task's reader and validator, and what they
// accept to the payload parser: nothing may panic, and an accepted task has what processing needs.
func FuzzInboundTask(f *testing.F) {
	good, _ := json.Marshal(tasks.Inbound{InboundEventID: "evt-1", CorrelationID: "c", ReceivedAt: time.Unix(1763800000, 0),
		Payload: whatsapp.SampleBatch(whatsapp.SampleOptions{}, 2)})
	ref, _ := json.Marshal(tasks.Inbound{InboundEventID: "evt-1", PayloadRef: "firestore://inbound_events/" + store.DocID("evt-1")})
	for _, seed := range []string{string(good), string(ref), `{}`, `{"inbound_event_id":"e","payload":null}`,
		`{"inbound_event_id":"e","payload_ref":"firestore://inbound_events/a/b"}`, `{"inbound_event_id":"e","payload":[1]}`,
		`{"inbound_event_id":"e","payload":{"entry":[{"changes":[{"value":{"messages":[{}]}}]}]}}`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var in tasks.Inbound
		if _, err := tasks.DecodeBody(body, &in); err != nil {
			return
		}
		if err := validateInbound(in); err != nil {
			return
		}
		if in.InboundEventID == "" || (len(in.Payload) == 0) == (in.PayloadRef == "") {
			t.Fatalf("accepted an inbound task without an event id or with not exactly one payload: %q", body)
		}
		if in.PayloadRef != "" {
			if _, err := store.CheckPayloadRef(in.PayloadRef); err != nil {
				t.Fatalf("accepted a bad payload_ref: %v", err)
			}
			return
		}
		p, err := whatsapp.Parse(in.Payload)
		if err != nil {
			return
		}
		msgs, statuses := whatsapp.Normalize(p)
		for _, m := range msgs {
			_ = tasks.IdempotencyKey(keyedid.Dev(), m.ID)
		}
		for _, s := range statuses {
			_ = s.DedupeKey()
			_ = tasks.IsIdempotencyKey(s.BizOpaqueCallbackData)
		}
	})
}

// FuzzOutboundTask feeds arbitrary bytes to the outbound task's reader and validator: nothing may
// panic, and an accepted task names its reply, its sender and its recipient.
func FuzzOutboundTask(f *testing.F) {
	good, _ := json.Marshal(tasks.Outbound{IdempotencyKey: tasks.IdempotencyKey(keyedid.Dev(), "wamid.1"), CorrelationID: "c", InboundEventID: "e",
		PhoneNumberID: "PNID", To: "16505551234", Message: whatsapp.Message{ID: "wamid.1", Type: "text", From: "16505551234"}})
	byUser, _ := json.Marshal(tasks.Outbound{IdempotencyKey: tasks.IdempotencyKey(keyedid.Dev(), "wamid.2"), CorrelationID: "c", InboundEventID: "e",
		PhoneNumberID: "PNID", UserID: "US.13491208655302741918", Message: whatsapp.Message{ID: "wamid.2", Type: "text", FromUserID: "US.13491208655302741918"}})
	for _, seed := range []string{string(good), string(byUser), `{}`, `{"idempotency_key":"ik_zz"}`, `{"message":{"id":1}}`, `[]`, `null`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var out tasks.Outbound
		if _, err := tasks.DecodeBody(body, &out); err != nil {
			return
		}
		if err := out.Validate(); err != nil {
			return
		}
		// The sender is named by a phone or a BSUID, in the task's fields or its message's.
		if !tasks.IsIdempotencyKey(out.IdempotencyKey) || out.PhoneNumberID == "" || out.Sender().IsZero() || out.Message.ID == "" {
			t.Fatalf("accepted an incomplete outbound task: %q", body)
		}
	})
}
