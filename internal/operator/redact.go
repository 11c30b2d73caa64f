package operator

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/wapipe/wapipe/internal/logging"
)

// phoneKeys hold phone numbers or WhatsApp ids in Meta's payloads, wapipe's task bodies and Graph
// API requests: they are shown as logging.HashPhone, so one customer can still be followed.
var phoneKeys = map[string]bool{
	"from": true, "to": true, "wa_id": true, "recipient_id": true, "input": true,
	"display_phone_number": true, "phone": true,
}

// privateKeys hold what people wrote or shared: message text, captions, names, places, links.
var privateKeys = map[string]bool{
	"body": true, "text": true, "caption": true, "name": true, "contact_name": true,
	"formatted_name": true, "first_name": true, "last_name": true, "address": true,
	"latitude": true, "longitude": true, "url": true, "title": true, "description": true,
	"emoji": true, "email": true, "filename": true, "payload_text": true,
}

// Redacted stands in for private values.
const Redacted = "[redacted]"

// RedactJSON decodes a JSON document and returns it with private values replaced; a document
// that is not JSON is replaced whole, as it could hold anything.
func RedactJSON(raw []byte) any {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return Redacted + " (not JSON)"
	}
	return Redact(v)
}

// Redact walks a decoded JSON value (maps, slices, strings, json.Number…) and returns a copy
// with private values replaced: phone numbers by their hash, text, names and places by
// Redacted. Objects and arrays under a private key are walked, not dropped.
func Redact(v any) any {
	return redact("", v)
}

func redact(key string, v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[k] = redact(strings.ToLower(k), e)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = redact(key, e)
		}
		return out
	case string:
		switch {
		case phoneKeys[key]:
			return logging.HashPhone(t)
		case privateKeys[key]:
			return Redacted
		}
		return t
	case json.Number, float64:
		if privateKeys[key] {
			return Redacted
		}
		return t
	default:
		return v
	}
}
