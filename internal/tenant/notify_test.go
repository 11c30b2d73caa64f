package tenant

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestParseNotify: an intent's notify roles must be known roles, each once; templates.notify
// is checked like templates.reengage.
func TestParseNotify(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		file string
		want []string // problems; none for a good file
	}{
		{"owner and admin", base + llm + "      notify: [owner, admin]\n", nil},
		{"member role too", base + llm + "      notify: [member]\n", nil},
		{"with the template", base + llm + "      notify: [admin]\ntemplates:\n  notify: {name: new_request, language: en_US}\n", nil},
		{"unknown role", base + llm + "      notify: [admin, driver]\n", []string{
			`assistant.intents[0].notify[1]: must be owner, admin or member, not "driver" (line 15)`}},
		{"role twice", base + llm + "      notify: [admin, admin]\n", []string{
			"assistant.intents[0].notify[1]: admin is listed twice (line 15)"}},
		{"not a list", base + llm + "      notify: admin\n", []string{
			"assistant.intents[0].notify: must be a list (line 15)"}},
		{"template name missing", base + "templates:\n  notify: {language: id}\n", []string{
			"templates.notify.name: required: the approved template's name (line 8)"}},
		{"template name", base + "templates:\n  notify: {name: New Request, language: id}\n", []string{
			"templates.notify.name: must be a template name: lower-case letters, digits and _ (line 8)"}},
		{"template language", base + "templates:\n  notify: {name: new_request, language: english}\n", []string{
			"templates.notify.language: must be a template language code, such as id or en_US (line 8)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if tt.want == nil {
				if _, err := Parse([]byte(tt.file)); err != nil {
					t.Fatalf("Parse:\n%v", err)
				}
				return
			}
			_, err := Parse([]byte(tt.file))
			if err == nil {
				t.Fatal("Parse succeeded")
			}
			if diff := cmp.Diff(tt.want, strings.Split(err.Error(), "\n")); diff != "" {
				t.Errorf("problems (-want, +got):\n%s", diff)
			}
		})
	}
}

// TestParseNotifyKeepsTheRolesAndTemplate: what the file says is what the tenant holds.
func TestParseNotifyKeepsTheRolesAndTemplate(t *testing.T) {
	t.Parallel()
	tn, err := Parse([]byte(base + llm + "      notify: [owner, admin]\ntemplates:\n  notify: {name: new_request, language: en_US}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := tn.Assistant.Intents[0].Notify; !slices.Equal(got, []Role{RoleOwner, RoleAdmin}) {
		t.Errorf("notify = %v, want [owner admin]", got)
	}
	if got := tn.Templates.Notify; got == nil || got.Name != "new_request" || got.Language != "en_US" {
		t.Errorf("templates.notify = %+v, want new_request (en_US)", got)
	}
	back, err := Marshal(tn)
	if err != nil {
		t.Fatal(err)
	}
	again, err := Parse(back)
	if err != nil {
		t.Fatalf("Parse(Marshal): %v", err)
	}
	if d := Diff(tn, again); len(d) != 0 {
		t.Errorf("a marshalled tenant reads back changed: %v", d)
	}
}
