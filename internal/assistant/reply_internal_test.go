package assistant

import (
	"testing"

	"github.com/wapipe/wapipe/internal/tenant"
)

// TestDataLines: the data lines under a confirmation are the intent's fields with a value, in the
// file's order, each value as the action's JSON carries it; a string that could draw a line of
// its own or reorder the text is quoted.
func TestDataLines(t *testing.T) {
	t.Parallel()
	in := tenant.Intent{Name: "create_booking", Fields: tenant.Fields{
		{Name: "client", Type: tenant.FieldString}, {Name: "date", Type: tenant.FieldDate}, {Name: "route", Type: tenant.FieldString},
		{Name: "seats", Type: tenant.FieldInteger}, {Name: "price", Type: tenant.FieldNumber}, {Name: "ac", Type: tenant.FieldBoolean},
	}}
	tests := []struct {
		name string
		data map[string]any
		want string
	}{
		{"file order, absent fields left out", map[string]any{"price": 1.5, "client": "Pak Agus", "seats": int64(40)},
			"client: Pak Agus\nseats: 40\nprice: 1.5"},
		{"numbers and booleans as JSON", map[string]any{"seats": int64(15000000), "price": 1e21, "ac": false},
			"seats: 15000000\nprice: 1e+21\nac: false"},
		{"a line break is quoted", map[string]any{"client": "Pak Agus\ndate: 2027-03-01", "date": "2027-03-09"},
			"client: \"Pak Agus\\ndate: 2027-03-01\"\ndate: 2027-03-09"},
		{"a direction override is quoted", map[string]any{"route": "Jakarta \u202eagnudnaB"},
			"route: \"Jakarta \\u202eagnudnaB\""},
		{"letters of any script stay as they are", map[string]any{"client": "جولات السوق", "route": "Ciamis – Tasikmalaya"},
			"client: جولات السوق\nroute: Ciamis – Tasikmalaya"},
		{"nothing", map[string]any{}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := dataLines(in, actionData(in, tt.data)); got != tt.want {
				t.Errorf("dataLines = %q, want %q", got, tt.want)
			}
		})
	}
	if got := actionData(in, map[string]any{"client": "x", "callback": "https://evil.example", "date": nil}); len(got) != 1 || got["client"] != "x" {
		t.Errorf("actionData = %v, want the declared fields with a value only", got)
	}
}
