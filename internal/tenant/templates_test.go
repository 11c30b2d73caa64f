package tenant

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestReengageComponents: templates.reengage may carry Meta's send components, parsed as
// written and kept by the diff; bad ones are refused with one problem each, naming the path.
func TestReengageComponents(t *testing.T) {
	t.Parallel()
	file := base + `templates:
  reengage:
    name: resume_conversation
    language: id
    components:
      - type: body
        parameters:
          - {type: text, text: "Halo {{contact_name}}"}
      - type: button
        sub_type: quick_reply
        index: "0"
        parameters:
          - {type: payload, payload: resume}
`
	tn, err := Parse([]byte(file))
	if err != nil {
		t.Fatal(err)
	}
	want := []TemplateComponent{
		{Type: "body", Parameters: []TemplateParameter{{Type: "text", Text: "Halo {{contact_name}}"}}},
		{Type: "button", SubType: "quick_reply", Index: "0", Parameters: []TemplateParameter{{Type: "payload", Payload: "resume"}}},
	}
	if diff := cmp.Diff(want, tn.Templates.Reengage.Components); diff != "" {
		t.Errorf("components (-want +got):\n%s", diff)
	}
	prev, _ := Parse([]byte(file))
	tn.Templates.Reengage.Components[0].Parameters[0].Text = "Hi {{contact_name}}"
	got := lines(Diff(prev, tn))
	// A change of the components is a change of the template (long values are told by length).
	wantDiff := []string{"~ templates.reengage: changed (88 -> 86 characters)"}
	if diff := cmp.Diff(wantDiff, got); diff != "" {
		t.Errorf("Diff (-want +got):\n%s", diff)
	}

	head := base + "templates:\n  reengage:\n    name: resume\n    language: id\n    components:\n"
	for _, tc := range []struct{ name, comps, want string }{
		{"type", "      - {type: footer, parameters: [{type: text, text: x}]}\n", "templates.reengage.components[0].type: must be header, body or button"},
		{"no parameters", "      - {type: body}\n", "templates.reengage.components[0].parameters: required"},
		{"empty text", "      - {type: body, parameters: [{type: text, text: \" \"}]}\n", "templates.reengage.components[0].parameters[0].text: required"},
		{"parameter type", "      - {type: body, parameters: [{type: image}]}\n", "templates.reengage.components[0].parameters[0].type: must be text or payload"},
		{"button sub_type", "      - {type: button, index: \"0\", parameters: [{type: payload, payload: p}]}\n", "templates.reengage.components[0].sub_type: must be quick_reply or url"},
		{"button parameter", "      - {type: button, sub_type: quick_reply, index: \"0\", parameters: [{type: text, text: p}]}\n", "templates.reengage.components[0].parameters: a quick_reply button takes payload parameters"},
		{"button index", "      - {type: button, sub_type: url, parameters: [{type: text, text: p}]}\n", "templates.reengage.components[0].index: required"},
		{"payload without payload", "      - {type: button, sub_type: quick_reply, index: \"0\", parameters: [{type: payload}]}\n", "templates.reengage.components[0].parameters[0].payload: required"},
	} {
		_, err := Parse([]byte(head + tc.comps))
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Count(err.Error(), "\n") != 0 {
			t.Errorf("%s: %v, want one problem: %s", tc.name, err, tc.want)
		}
	}
}

func TestNotifyTakesNoComponents(t *testing.T) {
	t.Parallel()
	file := base + "templates:\n  notify:\n    name: new_request\n    language: en\n    components:\n      - {type: body, parameters: [{type: text, text: x}]}\n"
	_, err := Parse([]byte(file))
	if err == nil || !strings.Contains(err.Error(), "templates.notify.components: not taken") {
		t.Errorf("notify with components: %v, want refused", err)
	}
}

func TestWABAs(t *testing.T) {
	t.Parallel()
	tn := &Tenant{PhoneNumbers: []PhoneNumber{{PhoneNumberID: "1", WABAID: "9"}, {PhoneNumberID: "2", WABAID: "8"}, {PhoneNumberID: "3", WABAID: "9"}}}
	if got := tn.WABAs(); !cmp.Equal(got, []string{"9", "8"}) {
		t.Errorf("WABAs() = %v, want [9 8]", got)
	}
}
