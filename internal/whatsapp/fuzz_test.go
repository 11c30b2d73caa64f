package whatsapp

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/wapipe/wapipe/internal/contact"
)

func addTestdataSeeds(f *testing.F) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.json"))
	if err != nil || len(files) == 0 {
		f.Fatalf("no seed corpus in testdata: %v", err)
	}
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, s := range []string{"", "{}", "null", "[]", `{"entry":[{"changes":[{"value":{"messages":[{}]}}]}]}`,
		`{"entry":[{"changes":[{"value":{"messages":[{"id":"a"}],"Messages":[{"id":"b"}]}}]}]}`,
		`{"entry":[{"time":"x","changes":[{"value":{"statuses":[{"id":"s","status":"read"}]}}]}]}`} {
		f.Add([]byte(s))
	}
}

// parseSlow is Parse without the fast path: the reference the fast path must agree with.
func parseSlow(body []byte) (*Payload, error) {
	if !startsWithObject(body) {
		return nil, ErrMalformed
	}
	var sp slowPayload
	if err := json.Unmarshal(body, &sp); err != nil && !isTypeError(err) {
		return nil, ErrMalformed
	}
	return sp.payload(), nil
}

// FuzzParse: Parse never panics, agrees with the straightforward decoding, and whatever it
// accepts Normalize and InboundEventID handle.
func FuzzParse(f *testing.F) {
	addTestdataSeeds(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		p, err := Parse(body)
		want, wantErr := parseSlow(body)
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("Parse error = %v; the slow path's = %v", err, wantErr)
		}
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("Parse error %v does not wrap ErrMalformed", err)
			}
			return
		}
		if diff := cmp.Diff(want, p); diff != "" {
			t.Fatalf("Parse disagrees with the slow path (-slow, +fast):\n%s", diff)
		}
		msgs, _ := Normalize(p)
		for _, m := range msgs {
			if !json.Valid(m.Raw) {
				t.Fatalf("Raw is not JSON: %q", m.Raw)
			}
		}
		if _, err := InboundEventID(body, p); err != nil {
			t.Fatalf("InboundEventID of a body Parse accepted: %v", err)
		}
	})
}

// FuzzInboundEventID: InboundEventID never panics, succeeds on every JSON object, and gives
// the same id when the object's keys are re-ordered and it is re-indented and re-escaped.
func FuzzInboundEventID(f *testing.F) {
	addTestdataSeeds(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		id, err := InboundEventID(body, nil)
		if !json.Valid(body) || !startsWithObject(body) {
			if err == nil {
				t.Fatalf("InboundEventID accepted a body that is not a JSON object")
			}
			return
		}
		if err != nil {
			t.Fatalf("InboundEventID of a JSON object: %v", err)
		}
		if id == "" {
			t.Fatalf("empty id")
		}
		tree, err := readTree(body)
		if err != nil {
			t.Fatalf("readTree of valid JSON: %v", err)
		}
		var buf bytes.Buffer
		tree.write(&buf, 0)
		id2, err := InboundEventID(buf.Bytes(), nil)
		if err != nil {
			t.Fatalf("InboundEventID of the reshuffled body: %v\n%s", err, buf.Bytes())
		}
		if id != id2 {
			t.Fatalf("id changed with key order/whitespace: %q != %q\noriginal: %s\nreshuffled: %s", id, id2, body, buf.Bytes())
		}
	})
}

// node is a JSON value with object members kept in order, duplicates included.
type node struct {
	members []member // object
	elems   []node   // array
	isObj   bool
	isArr   bool
	scalar  any // string, json.Number, bool or nil
}

type member struct {
	key string
	val node
}

func readTree(b []byte) (node, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	n, err := readNode(dec)
	if err != nil {
		return node{}, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return node{}, errors.New("trailing data")
	}
	return n, nil
}

func readNode(dec *json.Decoder) (node, error) {
	tok, err := dec.Token()
	if err != nil {
		return node{}, err
	}
	switch tok {
	case json.Delim('{'):
		n := node{isObj: true}
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return node{}, err
			}
			v, err := readNode(dec)
			if err != nil {
				return node{}, err
			}
			n.members = append(n.members, member{key: k.(string), val: v})
		}
		_, err := dec.Token()
		return n, err
	case json.Delim('['):
		n := node{isArr: true}
		for dec.More() {
			v, err := readNode(dec)
			if err != nil {
				return node{}, err
			}
			n.elems = append(n.elems, v)
		}
		_, err := dec.Token()
		return n, err
	default:
		return node{scalar: tok}, nil
	}
}

// write re-serialises n with keys in reverse order, odd whitespace and encoding/json's escaping
// (\u003c for <, …) instead of the original's.
//
// Keys that encoding/json treats as the same field (equal under Unicode case folding, which
// includes exact duplicates) keep their relative order: with duplicate names the last one wins,
// so swapping those would change what the object means, not just how it is written.
func (n node) write(w *bytes.Buffer, depth int) {
	indent := "\n" + strings.Repeat("\t ", depth+1)
	switch {
	case n.isObj:
		ms := slices.Clone(n.members)
		slices.SortStableFunc(ms, func(a, b member) int { return strings.Compare(foldKey(b.key), foldKey(a.key)) })
		w.WriteString("{")
		for i, m := range ms {
			if i > 0 {
				w.WriteString(" ,")
			}
			w.WriteString(indent)
			k, _ := json.Marshal(m.key)
			w.Write(k)
			w.WriteString(" :\r\n ")
			m.val.write(w, depth+1)
		}
		w.WriteString("\n}")
	case n.isArr:
		w.WriteString("[ ")
		for i, e := range n.elems {
			if i > 0 {
				w.WriteString(",\t")
			}
			e.write(w, depth+1)
		}
		w.WriteString(" ]")
	default:
		switch v := n.scalar.(type) {
		case json.Number:
			w.WriteString(string(v))
		default:
			b, _ := json.Marshal(v)
			w.Write(b)
		}
	}
}

// foldKey maps keys encoding/json matches to one struct field onto the same string (its
// case-insensitive matching folds every rune to the smallest of its case-fold orbit).
func foldKey(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r < utf8.RuneSelf {
			b.WriteRune(unicode.ToUpper(r))
			continue
		}
		for {
			r2 := unicode.SimpleFold(r)
			if r2 <= r {
				r = r2
				break
			}
			r = r2
		}
		b.WriteRune(r)
	}
	return b.String()
}

// identitySeeds are bodies built to make the parser name someone wrongly: identifiers in the
// wrong field, padded, escaped or spelt twice, profiles that could attach to the wrong sender.
// With the bsuid_*.json payloads (one per row of usernames.md, added with the rest of testdata)
// they seed FuzzNormalize.
func identitySeeds() [][]byte {
	return [][]byte{
		// A BSUID in the phone fields, a phone with a plus, padded identifiers.
		message(`{"from":"US.1234","from_user_id":"US.1234","id":"wamid.A","type":"text","text":{"body":"x"}}`),
		message(`{"from":"+16505551234","from_user_id":" US.99 ","from_parent_user_id":"US.99","id":"wamid.A","type":"text"}`),
		// Escaped characters, and two spellings of one key (encoding/json keeps the last match).
		message(`{"from_user_id":"US.\u0037\u0033","From_User_ID":"US.74","id":"wamid.A","type":"text"}`),
		// Two senders, profiles that match by parent only, and a profile with no identifier.
		change(FieldMessages, `{`+meta+`,"contacts":[{"profile":{"name":"A","username":"@a"},"parent_user_id":"US.ENT.1"},`+
			`{"profile":{"name":"Nobody"}},{"profile":{"name":"B"},"wa_id":"16505550000","user_id":"US.2"}],`+
			`"messages":[{"from_parent_user_id":"US.ENT.1","id":"wamid.1"},{"from_user_id":"US.2","id":"wamid.2"},{"id":"wamid.3"}]}`),
		// Identity changes: no previous_user_id, the sender already new, nothing at all.
		message(`{"from_user_id":"US.8","id":"wamid.A","type":"system","system":{"type":"user_changed_user_id","user_id":"US.8"}}`),
		message(`{"id":"wamid.A","type":"system","system":{"type":"user_changed_number","new_wa_id":"16505559999","previous_user_id":"US.1"}}`),
		change(FieldUserIDUpdate, `{`+meta+`,"user_id_update":[{"user_id":{"previous":"US.1","current":"US.2"}},{},{"wa_id":"US.3"}]}`),
		// Calls either way and with no direction; an echo whose business number is a contact's.
		change(FieldCalls, `{`+meta+`,"calls":[{"id":"c1","from":"15550783881","to_user_id":"US.5"},{"id":"c2","from_user_id":"US.5","direction":"BUSINESS_INITIATED"}]}`),
		change(FieldMessageEchoes, `{`+meta+`,"contacts":[{"profile":{"name":"Biz?"},"wa_id":"15550783881"}],"message_echoes":[{"from":"15550783881","to_user_id":"US.6","id":"e"}]}`),
		// Statuses with both parent spellings at once, and with no recipient.
		change(FieldMessages, `{`+meta+`,"statuses":[{"id":"s","status":"read","recipient_user_id":"US.7","recipient_parent_user_id":"US.ENT.7","parent_recipient_user_id":"US.ENT.8"},{"id":"t","status":"failed"}]}`),
	}
}

// FuzzNormalize: whatever body Parse accepts, Normalize, Events, Message.Identity,
// Message.IdentityChange and Status.Recipient never panic, and never name a person by an
// identifier the body does not hold. A message's sender is named only by identifiers of the
// message object itself (Raw) and of the contacts[] entry that shares one of them (Meta gives
// some identifiers only there), never by another sender's entry; its identity change only by the
// message's own; a name or a username only as the body spells it somewhere.
func FuzzNormalize(f *testing.F) {
	addTestdataSeeds(f)
	for _, b := range identitySeeds() {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		p, err := Parse(body)
		if err != nil {
			return
		}
		all := jsonStrings(t, body)
		linked := linkedIdentifiers(t, p)
		msgs, sts := Normalize(p)
		for i, m := range msgs {
			own := jsonStrings(t, m.Raw)
			checkNamed(t, "sender of "+m.ID, m.Identity(), append(own, linked[i]...), all)
			if ch, ok := m.IdentityChange(); ok {
				if m.Type != "system" || m.System == nil {
					t.Fatalf("message %s of type %q announces a change %+v", m.ID, m.Type, ch)
				}
				checkIdentifiers(t, "previous identity of "+m.ID, ch.Previous, own)
				checkIdentifiers(t, "current identity of "+m.ID, ch.Current, own)
			}
		}
		for _, s := range sts {
			checkNamed(t, "recipient of "+s.ID, s.Recipient(), all, all)
		}
		for _, e := range Events(p) {
			checkNamed(t, e.Field+" contact", e.Contact, all, all)
			if e.Echo != nil {
				checkNamed(t, "echo sender", e.Echo.Identity(), all, all)
			}
			if ch := e.IdentityChange; ch != nil {
				checkIdentifiers(t, "previous identity", ch.Previous, all)
				checkIdentifiers(t, "current identity", ch.Current, all)
			}
		}
	})
}

// linkedIdentifiers returns, for each message in Normalize's order, the identifiers of the
// contacts[] entries of its change that share an identifier with the message object itself.
func linkedIdentifiers(t *testing.T, p *Payload) [][]string {
	t.Helper()
	var out [][]string
	for _, e := range p.Entry {
		for _, c := range e.Changes {
			for _, m := range c.Value.Messages {
				own := jsonStrings(t, m.Raw)
				var linked []string
				for _, ct := range c.Value.Contacts {
					keys := contact.FromWebhook(ct.WaID, ct.UserID, ct.ParentUserID, "", "").Keys()
					if slices.ContainsFunc(keys, func(k contact.Key) bool { return inSome(own, k.Value) }) {
						for _, k := range keys {
							linked = append(linked, k.Value)
						}
					}
				}
				out = append(out, linked)
			}
		}
	}
	return out
}

// checkNamed fails unless every identifier of id is in one of the strings in ids, its name and
// username are in one of all, and it carries a profile only with an identifier.
func checkNamed(t *testing.T, what string, id contact.Identity, ids, all []string) {
	t.Helper()
	checkIdentifiers(t, what, id, ids)
	for _, s := range []string{id.Username, id.Name} {
		if s != "" && !inSome(all, s) {
			t.Fatalf("%s has the profile %q, which the body does not hold (%+v)", what, s, id)
		}
	}
	if id.IsZero() && (id.Username != "" || id.Name != "") {
		t.Fatalf("%s names nobody but carries a profile: %+v", what, id)
	}
}

func checkIdentifiers(t *testing.T, what string, id contact.Identity, ids []string) {
	t.Helper()
	for _, k := range id.Keys() {
		if !inSome(ids, k.Value) {
			t.Fatalf("%s claims %s %q, which is not in its input (%+v)", what, k.Kind, k.Value, id)
		}
	}
}

func inSome(ss []string, sub string) bool {
	for _, s := range ss {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// jsonStrings is every string value (not key) of the JSON document b, decoded, duplicates and
// case-variant keys included: whatever encoding/json may have put in a string field.
func jsonStrings(t *testing.T, b []byte) []string {
	t.Helper()
	n, err := readTree(b)
	if err != nil {
		t.Fatalf("a body or message Parse accepted is not JSON: %v", err)
	}
	var out []string
	var walk func(node)
	walk = func(n node) {
		for _, m := range n.members {
			walk(m.val)
		}
		for _, e := range n.elems {
			walk(e)
		}
		if s, ok := n.scalar.(string); ok {
			out = append(out, s)
		}
	}
	walk(n)
	return out
}
