package tenant

import (
	"fmt"
	"maps"
	"slices"
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
		if len(x.Label) > 0 {
			var ls []string
			for _, lang := range slices.Sorted(maps.Keys(x.Label)) {
				ls = append(ls, lang+": "+x.Label[lang])
			}
			parts[i] = x.Name + ": {type: " + string(x.Type) + ", label: {" + strings.Join(ls, ", ") + "}}"
		}
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
		if v.Kind == yaml.MappingNode {
			// The long form: {type: money, label: {en: Price, id: Harga}}.
			var long struct {
				Type  FieldType         `yaml:"type"`
				Label map[string]string `yaml:"label"`
			}
			dec := v.Decode(&long)
			if dec != nil || long.Type == "" {
				ps = append(ps, Problem{Path: k.Value, Line: v.Line, Message: "the long form is {type: …, label: {en: …, id: …}}"})
				continue
			}
			for i := 0; i+1 < len(v.Content); i += 2 {
				if key := v.Content[i].Value; key != "type" && key != "label" {
					ps = append(ps, Problem{Path: k.Value + "." + key, Line: v.Content[i].Line, Message: "unknown key; a field takes type and label"})
				}
			}
			out = append(out, Field{Name: k.Value, Type: long.Type, Label: long.Label})
			continue
		}
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
		v := &yaml.Node{Kind: yaml.ScalarNode, Value: string(x.Type)}
		if len(x.Label) > 0 {
			v = &yaml.Node{Kind: yaml.MappingNode, Style: yaml.FlowStyle}
			if err := v.Encode(struct {
				Type  FieldType         `yaml:"type"`
				Label map[string]string `yaml:"label"`
			}{x.Type, x.Label}); err != nil {
				return nil, err
			}
			v.Style = yaml.FlowStyle
		}
		n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: x.Name}, v)
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
