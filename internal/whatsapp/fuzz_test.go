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
