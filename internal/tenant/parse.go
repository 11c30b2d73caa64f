package tenant

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Parse reads a tenant file: strict YAML (one document, unknown keys are errors), durations
// written as Go durations ("30s", "5m"). It fills the defaults of absent fields, then
// validates. On failure the error is Problems: every problem found, one a line, with the
// field path and the file's line. A field written with an explicit zero keeps it (so
// "per_second: 0" is an error rather than the default).
func Parse(data []byte) (*Tenant, error) {
	if len(data) > MaxFileSize {
		return nil, Problems{{Message: fmt.Sprintf("the file is %d bytes; a tenant file is at most %d", len(data), MaxFileSize)}}
	}
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, Problems{{Message: "the file is empty"}}
		}
		// yaml's own word for an indenting tab ("found character that cannot start any token")
		// does not say what to change.
		if n := tabIndentedLine(data); n > 0 {
			return nil, Problems{{Line: n, Message: "tabs are not allowed in YAML, use spaces"}}
		}
		return nil, Problems{{Message: "not valid YAML: " + strings.TrimPrefix(err.Error(), "yaml: ")}}
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, Problems{{Line: extra.Line, Message: "more than one YAML document: a file holds one tenant"}}
	}
	root := &doc
	if root.Kind == yaml.DocumentNode {
		if len(root.Content) == 0 {
			return nil, Problems{{Message: "the file is empty"}}
		}
		root = root.Content[0]
	}

	// First the shape: unknown keys, duplicate keys, values of the wrong kind, all of them
	// with their path; decoding only after, so the struct never holds half a file.
	s := shape{lines: map[string]int{}, present: map[string]bool{}}
	s.check(root, reflect.TypeFor[Tenant](), "")
	if len(s.problems) > 0 {
		sortByLine(s.problems)
		return nil, s.problems
	}
	var t Tenant
	strict := yaml.NewDecoder(bytes.NewReader(data))
	strict.KnownFields(true)
	if err := strict.Decode(&t); err != nil {
		// The shape check should have caught it; report what yaml says rather than nothing.
		return nil, Problems{{Message: strings.TrimPrefix(err.Error(), "yaml: ")}}
	}
	applyDefaults(&t, s.present)
	if ps := t.validate(); len(ps) > 0 {
		ps = withLines(ps, s.lines)
		sortByLine(ps)
		return nil, ps
	}
	return &t, nil
}

// Marshal writes t as a tenant file that Parse reads back to the same tenant.
func Marshal(t *Tenant) ([]byte, error) {
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(t); err != nil {
		return nil, fmt.Errorf("yaml encode tenant: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("yaml encode tenant: %w", err)
	}
	return b.Bytes(), nil
}

// MaxFileSize bounds a tenant file; the largest sensible one (long instructions, many
// members) is far smaller.
const MaxFileSize = 1 << 20

// maxNodes bounds the nodes the shape check visits, aliases expanded, so a file of nested
// aliases ("billion laughs") fails fast instead of walking forever.
const maxNodes = 100_000

var (
	durationType    = reflect.TypeFor[time.Duration]()
	unmarshalerType = reflect.TypeFor[yaml.Unmarshaler]()
)

// shape walks the YAML tree alongside the Go type it decodes into.
type shape struct {
	problems Problems
	// lines maps each field path in the file to its line, to place validation problems.
	lines map[string]int
	// present holds the paths the file sets to a non-null value.
	present map[string]bool
	// visited counts nodes against maxNodes.
	visited int
}

func (s *shape) add(path string, line int, format string, args ...any) {
	s.problems = append(s.problems, Problem{Path: path, Line: line, Message: fmt.Sprintf(format, args...)})
}

func (s *shape) check(n *yaml.Node, t reflect.Type, path string) {
	if s.visited++; s.visited > maxNodes {
		if s.visited == maxNodes+1 {
			s.add("", n.Line, "too many values (more than %d, aliases expanded)", maxNodes)
		}
		return
	}
	n = resolve(n)
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return // absent: the zero value
	}
	s.present[path] = true
	if reflect.PointerTo(t).Implements(unmarshalerType) {
		err := n.Decode(reflect.New(t).Interface())
		var ps Problems
		switch {
		case errors.As(err, &ps):
			for _, p := range ps {
				s.add(join(path, p.Path), p.Line, "%s", p.Message)
			}
		case err != nil:
			s.add(path, n.Line, "%s", strings.TrimPrefix(err.Error(), "yaml: "))
		}
		// Record the lines of the keys below, for validation problems.
		if n.Kind == yaml.MappingNode {
			for i := 0; i+1 < len(n.Content); i += 2 {
				s.lines[join(path, n.Content[i].Value)] = n.Content[i].Line
			}
		}
		return
	}
	switch t.Kind() {
	case reflect.Pointer:
		s.check(n, t.Elem(), path)
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			s.add(path, n.Line, "must be a mapping with keys %s", strings.Join(keys(t), ", "))
			return
		}
		seen := map[string]int{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := resolve(n.Content[i]), n.Content[i+1]
			name := k.Value
			p := join(path, name)
			if first, dup := seen[name]; dup {
				s.add(p, k.Line, "set twice (first on line %d)", first)
				continue
			}
			seen[name] = k.Line
			f, ok := fieldByTag(t, name)
			if !ok {
				s.add(p, k.Line, "unknown key; %s takes %s", orFile(path), strings.Join(keys(t), ", "))
				continue
			}
			s.lines[p] = k.Line
			s.check(v, f.Type, p)
		}
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			s.add(path, n.Line, "must be a list")
			return
		}
		for i, item := range n.Content {
			p := index(path, i)
			s.lines[p] = resolve(item).Line
			s.check(item, t.Elem(), p)
		}
	default:
		if n.Kind != yaml.ScalarNode {
			s.add(path, n.Line, "%s", expected(t))
			return
		}
		// yaml.v3 truncates a float into an int field (2.5 → 2); a whole number must be one.
		isInt := t != durationType && t.Kind() >= reflect.Int && t.Kind() <= reflect.Uint64
		if err := n.Decode(reflect.New(t).Interface()); err != nil || (isInt && n.ShortTag() != "!!int") {
			s.add(path, n.Line, "%s", expected(t))
		}
	}
}

// expected says what a scalar of type t must look like.
func expected(t reflect.Type) string {
	switch {
	case t == durationType:
		return "must be a duration such as 30s, 5m or 1h"
	case t.Kind() == reflect.Bool:
		return "must be true or false"
	case t.Kind() >= reflect.Int && t.Kind() <= reflect.Uint64:
		return "must be a whole number"
	case t.Kind() == reflect.Float32 || t.Kind() == reflect.Float64:
		return "must be a number"
	default:
		return "must be a single value (text)"
	}
}

func orFile(path string) string {
	if path == "" {
		return "the file"
	}
	return path
}

// resolve follows YAML aliases (*anchor) to the node they name.
func resolve(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

// keys lists the YAML keys of struct type t, in declaration order.
func keys(t reflect.Type) []string {
	var out []string
	for f := range t.Fields() {
		if name := yamlName(f); name != "" {
			out = append(out, name)
		}
	}
	return out
}

func fieldByTag(t reflect.Type, name string) (reflect.StructField, bool) {
	for f := range t.Fields() {
		if yamlName(f) == name {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

func yamlName(f reflect.StructField) string {
	if !f.IsExported() {
		return ""
	}
	name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
	if name == "-" {
		return ""
	}
	if name == "" {
		return strings.ToLower(f.Name)
	}
	return name
}

// tabIndentedLine returns the first line (1-based) whose indentation holds a tab, 0 when none.
func tabIndentedLine(data []byte) int {
	for i, line := range bytes.Split(data, []byte("\n")) {
		indent := line[:len(line)-len(bytes.TrimLeft(line, " \t"))]
		if bytes.IndexByte(indent, '\t') >= 0 {
			return i + 1
		}
	}
	return 0
}
