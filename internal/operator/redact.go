package operator

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/wapipe/wapipe/internal/contact"
	"github.com/wapipe/wapipe/internal/logging"
)

// What an operator sees of a task or dead-letter body is an allow-list: a field not named here is
// shown as Redacted, whatever Meta adds to its payloads later. Objects and arrays are walked, so
// the shape stays visible; leaves are kept only when they say what happened, never what a person
// wrote or shared (text, captions, names, contact cards' addresses, birthdays and companies,
// Flows' response_json, locations, links, emails).

// keptKeys are kept as they are: types, times, states, codes, media metadata and wapipe's own
// correlation fields.
var keptKeys = map[string]bool{
	// Meta's envelope and message metadata.
	"object": true, "field": true, "messaging_product": true, "phone_number_id": true, "type": true,
	"timestamp": true, "time": true, "forwarded": true, "frequently_forwarded": true,
	"recipient_type": true,
	// Media metadata (the content is fetched by id; its filename and caption are private).
	"mime_type": true, "sha256": true, "file_size": true, "animated": true, "voice": true,
	// Button and list replies: the ids the business defined, not the titles shown to the user.
	"payload": true, "kind": true,
	// Statuses, billing and errors.
	"status": true, "code": true, "biz_opaque_callback_data": true, "billable": true,
	"pricing_model": true, "category": true, "pricing_category": true, "expiration_timestamp": true,
	"conversation_id": true,
	// wapipe's task fields.
	"idempotency_key": true, "correlation_id": true, "received_at": true, "payload_ref": true,
}

// errorKeys are kept inside Meta's error objects (errors, error_data): the error's fixed title and
// its documentation link; elsewhere a title is what a person chose. Meta's message and
// error_data.details can quote the recipient ("recipient 4477…"), so they are not kept.
var errorKeys = map[string]bool{"title": true, "href": true}

// phoneKeys hold phone numbers or WhatsApp ids: they are shown as their keyed ph_ ref (wapipe
// hash-phone), so one customer can still be followed.
var phoneKeys = map[string]bool{
	"from": true, "to": true, "wa_id": true, "recipient_id": true, "input": true,
	"display_phone_number": true, "phone": true, "new_wa_id": true,
}

// userKeys hold business-scoped user ids (BSUIDs) and parent BSUIDs: shown as their keyed us_
// ref (wapipe hash-id), so a person known by BSUID alone can be followed too.
var userKeys = map[string]bool{
	"user_id": true, "from_user_id": true, "from_parent_user_id": true, "parent_user_id": true, "recipient_user_id": true,
	"recipient_parent_user_id": true, "parent_recipient_user_id": true, "to_user_id": true, "to_parent_user_id": true,
	"previous_user_id": true, "previous_parent_user_id": true, "recipient": true, "previous": true, "current": true,
}

// idKeys hold ids: a wamid (which holds the customer's number) is shown as its ref (wapipe
// hash-id); any other id (media ids, reply ids, the account's ids) as it is.
var idKeys = map[string]bool{
	"id": true, "message_id": true, "inbound_event_id": true, "context_id": true, "graph_message_id": true,
}

// Redacted stands in for private values.
const Redacted = logging.Redacted

// RedactJSON decodes a JSON document and returns it with every value not on the allow-list
// replaced; a document that is not JSON is replaced whole, as it could hold anything. h makes the
// refs of phone numbers and wamids; with a nil h they are Redacted too.
func RedactJSON(h *logging.Hasher, raw []byte) any {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return Redacted + " (not JSON)"
	}
	return Redact(h, v)
}

// Redact walks a decoded JSON value (maps, slices, strings, json.Number…) and returns a copy that
// keeps only allow-listed values: phone numbers and wamids become their refs, everything else not
// on the list becomes Redacted. Objects and arrays are walked, not dropped.
func Redact(h *logging.Hasher, v any) any {
	return redactor{h}.walk("", false, v)
}

type redactor struct{ h *logging.Hasher }

// walk redacts v found under key; inErrors says an enclosing key was errors or error_data.
func (r redactor) walk(key string, inErrors bool, v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		inErrors = inErrors || key == "errors" || key == "error_data"
		for k, e := range t {
			out[k] = r.walk(strings.ToLower(k), inErrors, e)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = r.walk(key, inErrors, e)
		}
		return out
	case nil:
		return nil
	}
	s, isString := v.(string)
	switch {
	case phoneKeys[key] && isString && r.h != nil && (contact.ValidUserID(s) || contact.ValidParentUserID(s)):
		// A BSUID where a phone was expected (some senders put it in from or wa_id).
		return r.h.User(s)
	case phoneKeys[key]:
		if isString && r.h != nil {
			return r.h.Phone(s)
		}
		return Redacted
	case userKeys[key]:
		if isString && r.h != nil {
			return r.h.User(s)
		}
		return Redacted
	case idKeys[key] && isString:
		if !strings.HasPrefix(s, "wamid.") {
			return s
		}
		if r.h != nil {
			return r.h.Ref(s)
		}
		return Redacted
	case keptKeys[key], inErrors && errorKeys[key]:
		return v
	}
	return Redacted
}
