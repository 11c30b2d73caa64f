package whatsapp

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
)

// volatileEntryFields are the keys dropped from every element of the top-level "entry" array
// before a payload without messages or statuses is hashed.
//
// The list holds what changes between Meta's redeliveries of one event, and nothing else:
//
//   - "time": Meta's Graph webhooks reference documents entry[].time as "a UNIX timestamp
//     indicating when the Event Notification was sent (not when the change that triggered the
//     notification occurred)". A redelivery is sent later, so it carries a new time. The
//     "messages" field does not send it, but the payloads that reach the hash (errors-only
//     changes, other subscribed fields such as account or template updates) can.
//
// Nothing else in the body is documented as per-delivery: timestamps inside values (message,
// status, conversation expiry) describe the event itself and are identical on redelivery, and
// the signature travels in a header, not the body. Keeping the list this small means two
// genuinely different events never hash the same.
var volatileEntryFields = []string{"time"}

// InboundEventID derives the id the webhook deduplicates deliveries on, as the contract
// specifies:
//
//  1. the id of the first message: entries and their changes are scanned in order and the first
//     change with a non-empty messages array gives messages[0].id;
//  2. for a payload with no messages, "<id>:<status>" of the first status, found the same way;
//  3. otherwise the hex SHA-256 of the body re-serialised canonically (see CanonicalJSON) with
//     the volatile fields removed (see volatileEntryFields).
//
// A first message without an id, or a first status without an id or status, falls through to
// the hash rather than yield an id that every such payload would share.
//
// p is the result of Parse(body); when nil, InboundEventID parses body itself. An error means
// body is not a single JSON object and wraps ErrMalformed.
func InboundEventID(body []byte, p *Payload) (string, error) {
	if p == nil {
		var err error
		if p, err = Parse(body); err != nil {
			return "", err
		}
	}
	if m, ok := firstMessage(p); ok {
		if m.ID != "" {
			return m.ID, nil
		}
	} else if s, ok := firstStatus(p); ok {
		if s.ID != "" && s.Status != "" {
			return s.ID + ":" + s.Status, nil
		}
	}
	return canonicalHash(body)
}

func firstMessage(p *Payload) (*InboundMessage, bool) {
	for i := range p.Entry {
		for j := range p.Entry[i].Changes {
			if ms := p.Entry[i].Changes[j].Value.Messages; len(ms) > 0 {
				return &ms[0], true
			}
		}
	}
	return nil, false
}

func firstStatus(p *Payload) (*StatusUpdate, bool) {
	for i := range p.Entry {
		for j := range p.Entry[i].Changes {
			if ss := p.Entry[i].Changes[j].Value.Statuses; len(ss) > 0 {
				return &ss[0], true
			}
		}
	}
	return nil, false
}

// canonicalHash is step 3 of InboundEventID.
func canonicalHash(body []byte) (string, error) {
	v, err := decodeObject(body)
	if err != nil {
		return "", err
	}
	dropVolatile(v)
	h := sha256.New()
	w := bufio.NewWriterSize(h, 4<<10)
	writeCanonical(w, v)
	if err := w.Flush(); err != nil {
		return "", fmt.Errorf("hash canonical payload: %w", err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// CanonicalJSON re-serialises a JSON object canonically: object keys sorted by their UTF-8
// bytes, no insignificant whitespace, numbers exactly as written (1.0 stays 1.0), strings
// with only the escapes JSON requires (", \ and control characters; \u00XX for those without
// a short form), everything else as raw UTF-8. Two bodies that differ only in key order,
// whitespace or optional escaping (\u0041 for A) give the same bytes. Duplicate keys keep the
// last value, as encoding/json does. Volatile fields are not removed here.
func CanonicalJSON(body []byte) ([]byte, error) {
	v, err := decodeObject(body)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	buf.Grow(len(body))
	writeCanonical(&buf, v)
	return buf.Bytes(), nil
}

func decodeObject(body []byte) (map[string]any, error) {
	if !startsWithObject(body) {
		return nil, malformed("body is not a JSON object", nil)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber() // numbers stay as written: no float rounding changes the hash
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, malformed("invalid JSON", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, malformed("data after the JSON object", nil)
	}
	return m, nil
}

func dropVolatile(v map[string]any) {
	entries, _ := v["entry"].([]any)
	for _, e := range entries {
		if obj, ok := e.(map[string]any); ok {
			for _, k := range volatileEntryFields {
				delete(obj, k)
			}
		}
	}
}

// canonicalWriter is what writeCanonical needs; *bufio.Writer and *bytes.Buffer have it.
type canonicalWriter interface {
	io.Writer
	io.ByteWriter
	io.StringWriter
}

func writeCanonical(w canonicalWriter, v any) {
	switch v := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys) // Go compares strings bytewise: UTF-8 byte order
		w.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				w.WriteByte(',')
			}
			writeString(w, k)
			w.WriteByte(':')
			writeCanonical(w, v[k])
		}
		w.WriteByte('}')
	case []any:
		w.WriteByte('[')
		for i, e := range v {
			if i > 0 {
				w.WriteByte(',')
			}
			writeCanonical(w, e)
		}
		w.WriteByte(']')
	case string:
		writeString(w, v)
	case json.Number:
		w.WriteString(string(v))
	case bool:
		if v {
			w.WriteString("true")
		} else {
			w.WriteString("false")
		}
	case nil:
		w.WriteString("null")
	default:
		// decodeObject produces only the types above.
		panic(fmt.Sprintf("whatsapp: unexpected JSON value of type %T", v))
	}
}

const hexDigits = "0123456789abcdef"

func writeString(w canonicalWriter, s string) {
	w.WriteByte('"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		// Bytes of multi-byte runes are all >= 0x80 and pass through unchanged; the decoder
		// already replaced invalid UTF-8 with U+FFFD.
		if c >= 0x20 && c != '"' && c != '\\' {
			i++
			continue
		}
		w.WriteString(s[start:i])
		switch c {
		case '"':
			w.WriteString(`\"`)
		case '\\':
			w.WriteString(`\\`)
		case '\b':
			w.WriteString(`\b`)
		case '\f':
			w.WriteString(`\f`)
		case '\n':
			w.WriteString(`\n`)
		case '\r':
			w.WriteString(`\r`)
		case '\t':
			w.WriteString(`\t`)
		default:
			w.WriteString(`\u00`)
			w.WriteByte(hexDigits[c>>4])
			w.WriteByte(hexDigits[c&0xF])
		}
		i++
		start = i
	}
	w.WriteString(s[start:])
	w.WriteByte('"')
}
