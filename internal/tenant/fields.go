package tenant

import (
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"
)

// Fields are an intent's fields in file order. The file writes them as a mapping of name to
// type ({client: string, date: date}); a Go map would lose the order, which the model's
// response schema and the prompt keep.
type Fields []Field

// Names returns the field names in order.
func (f Fields) Names() []string {
	names := make([]string, len(f))
	for i, x := range f {
		names[i] = x.Name
	}
	return names
}

// Lookup returns the field called name.
func (f Fields) Lookup(name string) (Field, bool) {
	for _, x := range f {
		if x.Name == name {
			return x, true
		}
	}
	return Field{}, false
}

// String renders the fields as the file's flow mapping: {client: string, date: date}.
func (f Fields) String() string {
	parts := make([]string, len(f))
	for i, x := range f {
		parts[i] = x.Name + ": " + string(x.Type)
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// UnmarshalYAML reads a mapping of field name to type, keeping its order. Problems carry the
// path below the mapping (the field name) and the line.
func (f *Fields) UnmarshalYAML(n *yaml.Node) error {
	n = resolve(n)
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		*f = nil
		return nil
	}
	if n.Kind != yaml.MappingNode {
		return Problems{{Line: n.Line, Message: "must be a mapping of field name to type, such as {date: date}"}}
	}
	var ps Problems
	out := make(Fields, 0, len(n.Content)/2)
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := resolve(n.Content[i]), resolve(n.Content[i+1])
		if k.Kind != yaml.ScalarNode {
			ps = append(ps, Problem{Line: k.Line, Message: "a field name must be a word"})
			continue
		}
		if line, dup := seen[k.Value]; dup {
			ps = append(ps, Problem{Path: k.Value, Line: k.Line, Message: fmt.Sprintf("listed twice (first on line %d)", line)})
			continue
		}
		seen[k.Value] = k.Line
		if v.Kind != yaml.ScalarNode || v.Tag == "!!null" {
			ps = append(ps, Problem{Path: k.Value, Line: k.Line, Message: "needs a type: " + fieldTypeList()})
			continue
		}
		out = append(out, Field{Name: k.Value, Type: FieldType(v.Value)})
	}
	if len(ps) > 0 {
		return ps
	}
	*f = out
	return nil
}

// MarshalYAML writes the fields back as a flow mapping, in order.
func (f Fields) MarshalYAML() (any, error) {
	n := &yaml.Node{Kind: yaml.MappingNode, Style: yaml.FlowStyle}
	for _, x := range f {
		n.Content = append(n.Content,
			&yaml.Node{Kind: yaml.ScalarNode, Value: x.Name},
			&yaml.Node{Kind: yaml.ScalarNode, Value: string(x.Type)})
	}
	return n, nil
}

func fieldTypeList() string {
	var names []string
	for _, t := range FieldTypes() {
		names = append(names, string(t))
	}
	return "one of " + strings.Join(names, ", ")
}
