package webhook

import (
	"net/http"

	"github.com/wapipe/wapipe/internal/httpserver"
)

// outcome is what became of one delivery. Each step of handleEvent returns one, and respond alone
// turns it into Meta's answer, so the status codes the contract gives live in one place.
type outcome int

const (
	// undecided: no answer yet; the delivery goes on to its next step.
	undecided outcome = iota
	// accepted: the event's inbound task exists.
	accepted
	// duplicate: the event was marked before and its task exists by name.
	duplicate
	// storeUnavailable: the dedupe store is unreachable and DEDUPE_FAIL_MODE is closed.
	storeUnavailable
	// enqueueFailed: the inbound task was not created: Meta redelivers.
	enqueueFailed
	// badSignature: X-Hub-Signature-256 is missing, malformed (not sha256= and 64 hex digits:
	// refused before the body is read) or does not match the body.
	badSignature
	// malformed: the body is not a WhatsApp payload with an inbound_event_id.
	malformed
	// tooLarge: the body is over MaxBodyBytes.
	tooLarge
	// unreadable: the body could not be read.
	unreadable
	// tooSlow: the body did not arrive within its deadline (httpserver.BodyLimits).
	tooSlow
	// overloaded: the body's bytes could not be charged under MAX_INFLIGHT_BODY_BYTES in time:
	// Meta redelivers.
	overloaded
)

// statusBody is the JSON answer to a delivery.
type statusBody struct {
	Status string `json:"status"`
	Error  string `json:"error,omitempty"`
}

// response maps an outcome to Meta's answer: 200 only once the event is safe (its task exists),
// 5xx when Meta should redeliver, 4xx when redelivering cannot help.
func response(o outcome) (int, statusBody) {
	switch o {
	case accepted:
		return http.StatusOK, statusBody{Status: "accepted"}
	case duplicate:
		return http.StatusOK, statusBody{Status: "duplicate"}
	case storeUnavailable:
		return http.StatusInternalServerError, statusBody{Status: "error", Error: "dedupe_unavailable"}
	case enqueueFailed:
		return http.StatusServiceUnavailable, statusBody{Status: "error", Error: "enqueue_failed"}
	case overloaded:
		return http.StatusServiceUnavailable, statusBody{Status: "error", Error: "overloaded"}
	case badSignature:
		return http.StatusUnauthorized, statusBody{Status: "error", Error: "invalid_signature"}
	case malformed:
		return http.StatusBadRequest, statusBody{Status: "error", Error: "malformed_payload"}
	case tooLarge:
		return http.StatusRequestEntityTooLarge, statusBody{Status: "error", Error: "body_too_large"}
	case tooSlow:
		return http.StatusRequestTimeout, statusBody{Status: "error", Error: "body_timeout"}
	case unreadable:
		return http.StatusBadRequest, statusBody{Status: "error", Error: "body_unreadable"}
	default:
		// undecided reaching the answer is a defect; 500 makes Meta redeliver, which is safe.
		return http.StatusInternalServerError, statusBody{Status: "error", Error: "internal"}
	}
}

func respond(w http.ResponseWriter, o outcome) {
	code, body := response(o)
	httpserver.WriteJSON(w, code, body)
}
