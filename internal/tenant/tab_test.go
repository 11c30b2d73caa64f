package tenant

import (
	"testing"
)

// TestParseTabIndent: a tab in the indentation is named as such, with its line, instead of
// yaml's "found character that cannot start any token".
func TestParseTabIndent(t *testing.T) {
	for _, tc := range []struct {
		name, file, want string
	}{
		{"tab indent", "id: shop\nassistant:\n\tmode: llm\n", "tabs are not allowed in YAML, use spaces (line 3)"},
		{"tab after spaces", "id: shop\nphone_numbers:\n  - phone_number_id: \"1\"\n  \t waba_id: \"2\"\n", "tabs are not allowed in YAML, use spaces (line 4)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.file))
			if err == nil || err.Error() != tc.want {
				t.Errorf("Parse: %v, want %q", err, tc.want)
			}
		})
	}
}
