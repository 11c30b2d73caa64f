package whatsapp

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

// EventID is InboundEventID for the webhook's hot path: it checks that body is exactly one JSON
// object (as Parse does, failing with ErrMalformed otherwise) and derives the id while decoding
// only what the id needs, the first message's id or the first status's id and status, with no
// allocation beyond the id itself. A body the quick walk does not settle (escaped, duplicate or
// case-variant keys, a field of an unexpected type, an empty id) and a body with neither messages
// nor statuses take InboundEventID's full path, so the answer is always InboundEventID's.
func EventID(body []byte) (string, error) {
	if !startsWithObject(body) {
		return "", malformed("body is not a JSON object", nil)
	}
	if !json.Valid(body) {
		return "", malformed("invalid JSON", nil)
	}
	if id, ok := quickEventID(body); ok {
		return id, nil
	}
	return InboundEventID(body, nil)
}

// idWalk walks a valid JSON object along entry[].changes[].value and keeps the first message's
// id and the first status's id and status, as slices of the body.
type idWalk struct {
	w                       walker
	hasMsg, hasStatus       bool
	msgID, statusID, status []byte
}

// quickEventID is InboundEventID's rules on what idWalk found; ok is false when the walk cannot
// settle the id by itself.
func quickEventID(body []byte) (id string, ok bool) {
	e := idWalk{w: walker{b: body}}
	if !e.w.object(e.member("entry", func() bool { return e.w.array(e.entry) })) {
		return "", false
	}
	switch {
	case e.hasMsg:
		return string(e.msgID), len(e.msgID) > 0
	case e.hasStatus && len(e.statusID) > 0 && len(e.status) > 0:
		return string(e.statusID) + ":" + string(e.status), true
	default:
		return "", false // an empty id, or no messages and no statuses: the canonical hash
	}
}

// member returns an object walker's member function that hands name's value to value and skips
// every other member. It gives up (false) on a second name, and on a key encoding/json would match
// to name case-insensitively, since encoding/json's own rules then decide.
func (e *idWalk) member(name string, value func() bool) func(key []byte) bool {
	seen := false
	return func(key []byte) bool {
		switch {
		case string(key) == name && !seen:
			seen = true
			return value()
		case bytes.EqualFold(key, []byte(name)):
			return false
		default:
			return e.w.skip()
		}
	}
}

func (e *idWalk) entry() bool {
	return e.w.object(e.member("changes", func() bool { return e.w.array(e.change) }))
}

func (e *idWalk) change() bool {
	return e.w.object(e.member("value", e.value))
}

func (e *idWalk) value() bool {
	messages := e.member("messages", func() bool {
		return e.w.array(func() bool {
			if e.hasMsg {
				return e.w.skip()
			}
			e.hasMsg = true
			return e.w.object(e.member("id", func() bool { return e.str(&e.msgID) }))
		})
	})
	statuses := e.member("statuses", func() bool {
		return e.w.array(func() bool {
			if e.hasStatus {
				return e.w.skip()
			}
			e.hasStatus = true
			id := e.member("id", func() bool { return e.str(&e.statusID) })
			status := e.member("status", func() bool { return e.str(&e.status) })
			return e.w.object(func(key []byte) bool {
				if bytes.EqualFold(key, []byte("status")) {
					return status(key)
				}
				return id(key)
			})
		})
	})
	return e.w.object(func(key []byte) bool {
		if bytes.EqualFold(key, []byte("statuses")) {
			return statuses(key)
		}
		return messages(key)
	})
}

// str reads a JSON string without escapes, in valid UTF-8, into dst; anything else gives up.
func (e *idWalk) str(dst *[]byte) bool {
	if e.w.i >= len(e.w.b) || e.w.b[e.w.i] != '"' {
		return false
	}
	start := e.w.i + 1
	if !e.w.str() {
		return false
	}
	v := e.w.b[start : e.w.i-1]
	// encoding/json unescapes, and replaces invalid UTF-8 with U+FFFD: leave both to it.
	if bytes.IndexByte(v, '\\') >= 0 || !utf8.Valid(v) {
		return false
	}
	*dst = v
	return true
}
