package tenant

import (
	"fmt"
	"slices"
	"strings"
)

// ContactNamePlaceholder, in a text parameter of a template's components, is replaced with
// the contact's name when the template is sent.
const ContactNamePlaceholder = "{{contact_name}}"

// TemplateComponent fills one part of a template, as Meta's send body does: Type header, body
// or button (a button with SubType quick_reply or url, and Index).
type TemplateComponent struct {
	Type       string              `yaml:"type" firestore:"type"`
	SubType    string              `yaml:"sub_type,omitempty" firestore:"sub_type,omitempty"`
	Index      string              `yaml:"index,omitempty" firestore:"index,omitempty"`
	Parameters []TemplateParameter `yaml:"parameters,omitempty" firestore:"parameters,omitempty"`
}

// TemplateParameter is one variable of a component: Type text (Text) or payload (a quick reply
// button's Payload). ParameterName names it in a template with named parameters.
type TemplateParameter struct {
	Type          string `yaml:"type" firestore:"type"`
	ParameterName string `yaml:"parameter_name,omitempty" firestore:"parameter_name,omitempty"`
	Text          string `yaml:"text,omitempty" firestore:"text,omitempty"`
	Payload       string `yaml:"payload,omitempty" firestore:"payload,omitempty"`
}

// Meta's bounds on a template's send components.
const (
	maxTemplateParamText = 1024 // a body text parameter
	maxComponents        = 12   // a header, a body and up to ten buttons
)

// validateComponents adds the problems of a template's components under path.
func validateComponents(c *problems, path string, comps []TemplateComponent) {
	if len(comps) > maxComponents {
		c.add(path, "at most %d components", maxComponents)
		return
	}
	for i, comp := range comps {
		p := fmt.Sprintf("%s[%d]", path, i)
		switch comp.Type {
		case "header", "body":
			if comp.SubType != "" || comp.Index != "" {
				c.add(p, "sub_type and index are for buttons only")
			}
		case "button":
			// A quick reply button takes a payload, a url button the text of its URL's suffix.
			if want := map[string]string{"quick_reply": "payload", "url": "text"}[comp.SubType]; want == "" {
				c.add(p+".sub_type", "must be quick_reply or url")
			} else if slices.ContainsFunc(comp.Parameters, func(prm TemplateParameter) bool { return prm.Type != want }) {
				c.add(p+".parameters", "a %s button takes %s parameters", comp.SubType, want)
			}
			if comp.Index == "" || strings.Trim(comp.Index, "0123456789") != "" {
				c.add(p+".index", "required: the button's position, from 0")
			}
		default:
			c.add(p+".type", "must be header, body or button")
		}
		if len(comp.Parameters) == 0 {
			c.add(p+".parameters", "required: at least one parameter")
		}
		for j, prm := range comp.Parameters {
			validateParameter(c, fmt.Sprintf("%s.parameters[%d]", p, j), prm)
		}
	}
}

func validateParameter(c *problems, p string, prm TemplateParameter) {
	switch prm.Type {
	case "text":
		switch {
		case strings.TrimSpace(prm.Text) == "":
			c.add(p+".text", "required for a text parameter")
		case len([]rune(prm.Text)) > maxTemplateParamText:
			c.add(p+".text", "at most %d characters", maxTemplateParamText)
		}
		if prm.Payload != "" {
			c.add(p+".payload", "only for a payload parameter")
		}
	case "payload":
		if prm.Payload == "" {
			c.add(p+".payload", "required for a payload parameter")
		}
		if prm.Text != "" {
			c.add(p+".text", "only for a text parameter")
		}
	default:
		c.add(p+".type", "must be text or payload")
	}
}

// WABAs are the WhatsApp Business Accounts of t's numbers, each once, in the file's order.
func (t *Tenant) WABAs() []string {
	var out []string
	for _, p := range t.PhoneNumbers {
		if p.WABAID != "" && !slices.Contains(out, p.WABAID) {
			out = append(out, p.WABAID)
		}
	}
	return out
}

// SharesWABA reports whether waba is the account of a number t lists as shared: other tenants
// may then list the same account, and its templates are theirs too.
func (t *Tenant) SharesWABA(waba string) bool {
	for _, p := range t.PhoneNumbers {
		if p.Shared && p.WABAID == waba {
			return true
		}
	}
	return false
}

// fmtComponents renders components for a diff line: each component's type and parameters.
func fmtComponents(comps []TemplateComponent) string {
	if len(comps) == 0 {
		return ""
	}
	parts := make([]string, len(comps))
	for i, comp := range comps {
		vals := make([]string, len(comp.Parameters))
		for j, p := range comp.Parameters {
			vals[j] = fmt.Sprintf("%q", p.Text+p.Payload)
		}
		name := comp.Type
		if comp.Type == "button" {
			name += "/" + comp.SubType + "/" + comp.Index
		}
		parts[i] = name + ": " + strings.Join(vals, ", ")
	}
	return " [" + strings.Join(parts, "; ") + "]"
}
