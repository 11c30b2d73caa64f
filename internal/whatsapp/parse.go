package whatsapp

import (
	"bytes"
	"encoding/json"
)

// Parse decodes a webhook body. It fails, wrapping ErrMalformed, only when the body is not
// exactly one JSON object: empty, not JSON, a JSON array/string/number/null, or an object
// followed by more data.
//
// Parse is deliberately lenient with what is inside the object: unknown fields are ignored
// and a field whose JSON type differs from the one documented (say, a number where Meta
// documents a string) is left at its zero value instead of failing the body. Failing would make
// the webhook answer 400, and Meta would redeliver the same body for days to no avail; the
// message is still kept whole in InboundMessage.Raw.
//
// Error strings name the problem and never contain the body's content.
func Parse(body []byte) (*Payload, error) {
	if !startsWithObject(body) {
		return nil, malformed("body is not a JSON object", nil)
	}
	// The fast path: one cheap walk finds every message's bytes (for Raw) and the length of
	// every slice on the way, so the decoder fills slices allocated once at the right size
	// instead of growing them. A message-level UnmarshalJSON that keeps its own bytes would be
	// simpler, but encoding/json would then scan every message twice more (once to skip it,
	// once to validate it again): on a 3 MB batch the fast path takes about half the time.
	spans, shaped := messageSpans(body)
	var p Payload
	if shaped {
		p.Entry = spans.presized()
	}
	// json.Unmarshal checks the whole input is one valid JSON value (trailing data included)
	// before it decodes anything, so a type error can only follow a syntactically valid body.
	if err := json.Unmarshal(body, &p); err != nil && !isTypeError(err) {
		return nil, malformed("invalid JSON", err)
	}
	if shaped && spans.attach(body, &p) {
		return &p, nil
	}
	// The body's shape is unusual (duplicate or case-variant keys on the way to the messages,
	// escaped key names, an envelope level of the wrong JSON type): decode it again the
	// straightforward way, where each message keeps its own bytes, rather than mirror
	// encoding/json's rules for such bodies in the walk.
	var sp slowPayload
	if err := json.Unmarshal(body, &sp); err != nil && !isTypeError(err) {
		return nil, malformed("invalid JSON", err)
	}
	return sp.payload(), nil
}

// startsWithObject reports whether the first non-whitespace byte opens a JSON object. It is
// the cheap half of "a single JSON object": Unmarshal checks the rest, but would accept null.
func startsWithObject(b []byte) bool {
	for _, c := range b {
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		case '{':
			return true
		default:
			return false
		}
	}
	return false
}

// The slow* types decode like Payload, except that messages are rawMessage, which keeps its own
// bytes. Each embeds the real type and shadows only the field on the way to the messages
// (encoding/json prefers the shallower of two fields of one name).
type (
	rawMessage InboundMessage
	slowValue  struct {
		Value
		Messages []rawMessage `json:"messages"`
	}
	slowChange struct {
		Change
		Value slowValue `json:"value"`
	}
	slowEntry struct {
		Entry
		Changes []slowChange `json:"changes"`
	}
	slowPayload struct {
		Payload
		Entry []slowEntry `json:"entry"`
	}
)

// UnmarshalJSON decodes the message and keeps a copy of its bytes in Raw. A field of an
// unexpected JSON type is skipped rather than failing the message (see Parse).
func (m *rawMessage) UnmarshalJSON(b []byte) error {
	var im InboundMessage // has no UnmarshalJSON: no recursion
	if err := json.Unmarshal(b, &im); err != nil && !isTypeError(err) {
		return err
	}
	im.Raw = append(json.RawMessage(nil), b...) // b belongs to the decoder's caller
	*m = rawMessage(im)
	return nil
}

func (sp *slowPayload) payload() *Payload {
	p := sp.Payload
	p.Entry = nil
	if sp.Entry != nil {
		p.Entry = make([]Entry, len(sp.Entry))
	}
	for i, se := range sp.Entry {
		e := se.Entry
		e.Changes = nil
		if se.Changes != nil {
			e.Changes = make([]Change, len(se.Changes))
		}
		for j, sc := range se.Changes {
			c := sc.Change
			c.Value = sc.Value.Value
			c.Value.Messages = nil
			if sc.Value.Messages != nil {
				c.Value.Messages = make([]InboundMessage, len(sc.Value.Messages))
			}
			for k, m := range sc.Value.Messages {
				c.Value.Messages[k] = InboundMessage(m)
			}
			e.Changes[j] = c
		}
		p.Entry[i] = e
	}
	return &p
}

// envelopeSpans records where the messages are: [entry][change][message]. A nil level means
// the key was absent, an empty one an empty array, as encoding/json distinguishes them.
type envelopeSpans struct {
	entries [][][]span
	total   int
}

// presized allocates the entry, change and message slices at their final lengths. Unmarshal
// decodes array elements in place into a slice that is already long enough.
func (s *envelopeSpans) presized() []Entry {
	if s.entries == nil {
		return nil
	}
	entries := make([]Entry, len(s.entries))
	for i, changes := range s.entries {
		if changes == nil {
			continue
		}
		entries[i].Changes = make([]Change, len(changes))
		for j, msgs := range changes {
			if msgs != nil {
				entries[i].Changes[j].Value.Messages = make([]InboundMessage, len(msgs))
			}
		}
	}
	return entries
}

// attach sets every message's Raw to a copy of its bytes. It reports false when the decoded
// payload does not have the shape the walk found, which would be a bug in the walk: the caller
// then takes the slow path.
func (s *envelopeSpans) attach(body []byte, p *Payload) bool {
	if len(p.Entry) != len(s.entries) {
		return false
	}
	for i, changes := range s.entries {
		if len(p.Entry[i].Changes) != len(changes) {
			return false
		}
		for j, msgs := range changes {
			if len(p.Entry[i].Changes[j].Value.Messages) != len(msgs) {
				return false
			}
		}
	}
	// One allocation for all the copies: Raw must not alias the caller's body.
	buf := make([]byte, 0, s.total)
	for i, changes := range s.entries {
		for j, msgs := range changes {
			ms := p.Entry[i].Changes[j].Value.Messages
			for k, sp := range msgs {
				n := len(buf)
				buf = append(buf, body[sp.start:sp.end]...)
				ms[k].Raw = buf[n:len(buf):len(buf)]
			}
		}
	}
	return true
}

// messageSpans walks body along entry[].changes[].value.messages[] and records where each
// message is. ok is false when the envelope is not plainly shaped (see Parse) or the body is
// not valid JSON; the walk never panics on bad input, and Unmarshal rejects it afterwards.
func messageSpans(body []byte) (s envelopeSpans, ok bool) {
	w := walker{b: body}
	ok = w.object(func(key []byte) bool {
		if !bytes.EqualFold(key, []byte("entry")) {
			return w.skip()
		}
		if s.entries != nil {
			return false // a second "entry": encoding/json's merge rules apply, go slow
		}
		s.entries = [][][]span{}
		return w.array(func() bool {
			var changes [][]span
			ok := w.object(func(key []byte) bool {
				if !bytes.EqualFold(key, []byte("changes")) {
					return w.skip()
				}
				if changes != nil {
					return false
				}
				changes = [][]span{}
				return w.array(func() bool {
					var msgs []span
					seenValue := false
					ok := w.object(func(key []byte) bool {
						if !bytes.EqualFold(key, []byte("value")) {
							return w.skip()
						}
						if seenValue {
							return false
						}
						seenValue = true
						return w.object(func(key []byte) bool {
							if !bytes.EqualFold(key, []byte("messages")) {
								return w.skip()
							}
							if msgs != nil {
								return false
							}
							msgs = []span{}
							return w.array(func() bool {
								if w.i >= len(w.b) || w.b[w.i] != '{' {
									return false
								}
								start := w.i
								if !w.skip() {
									return false
								}
								msgs = append(msgs, span{start, w.i})
								s.total += w.i - start
								return true
							})
						})
					})
					changes = append(changes, msgs)
					return ok
				})
			})
			s.entries = append(s.entries, changes)
			return ok
		})
	})
	if ok {
		w.ws()
		ok = w.i == len(w.b)
	}
	return s, ok
}

type span struct{ start, end int }

// walker moves through JSON that encoding/json has already validated, so it only needs to
// find where values end. Its methods report false for anything the fast path does not handle.
type walker struct {
	b []byte
	i int
}

func (w *walker) ws() {
	for w.i < len(w.b) {
		switch w.b[w.i] {
		case ' ', '\t', '\n', '\r':
			w.i++
		default:
			return
		}
	}
}

// object calls member for each key, with w positioned on the value; member must consume it.
// A value that is not an object, and a key with escapes, report false.
func (w *walker) object(member func(key []byte) bool) bool {
	w.ws()
	if w.i >= len(w.b) || w.b[w.i] != '{' {
		return false
	}
	w.i++
	for {
		w.ws()
		if w.i >= len(w.b) {
			return false
		}
		switch w.b[w.i] {
		case '}':
			w.i++
			return true
		case ',':
			w.i++
			continue
		case '"':
		default:
			return false
		}
		start := w.i + 1
		if !w.str() {
			return false
		}
		key := w.b[start : w.i-1]
		if bytes.IndexByte(key, '\\') >= 0 {
			return false
		}
		w.ws()
		if w.i >= len(w.b) || w.b[w.i] != ':' {
			return false
		}
		w.i++
		w.ws()
		if !member(key) {
			return false
		}
	}
}

// array calls elem for each element, with w positioned on it; elem must consume it. A value
// that is not an array reports false.
func (w *walker) array(elem func() bool) bool {
	w.ws()
	if w.i >= len(w.b) || w.b[w.i] != '[' {
		return false
	}
	w.i++
	for {
		w.ws()
		if w.i >= len(w.b) {
			return false
		}
		switch w.b[w.i] {
		case ']':
			w.i++
			return true
		case ',':
			w.i++
			continue
		}
		if !elem() {
			return false
		}
	}
}

// str consumes a string starting at w.i (on its opening quote).
func (w *walker) str() bool {
	w.i++
	for {
		n := bytes.IndexAny(w.b[w.i:], `"\`)
		if n < 0 {
			return false
		}
		w.i += n
		if w.b[w.i] == '"' {
			w.i++
			return true
		}
		w.i += 2 // a backslash and the character it escapes
		if w.i > len(w.b) {
			return false
		}
	}
}

// skip consumes any value.
func (w *walker) skip() bool {
	w.ws()
	if w.i >= len(w.b) {
		return false
	}
	switch w.b[w.i] {
	case '"':
		return w.str()
	case '{', '[':
		depth := 0
		for w.i < len(w.b) {
			switch w.b[w.i] {
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					w.i++
					return true
				}
			case '"':
				if !w.str() {
					return false
				}
				continue
			}
			w.i++
		}
		return false
	default:
		// A number, true, false or null: up to the next delimiter.
		for w.i < len(w.b) {
			switch w.b[w.i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return true
			}
			w.i++
		}
		return true
	}
}
