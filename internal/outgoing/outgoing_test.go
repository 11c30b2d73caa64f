package outgoing_test

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/wapipe/wapipe/internal/graph"
	"github.com/wapipe/wapipe/internal/outgoing"
)

// TestRecordedFormStays: a message recorded as JSON by a revision from before the package
// existed (responder.Reply, whose Graph message was the field Message) decodes to the same
// message, and a message encodes to that form.
func TestRecordedFormStays(t *testing.T) {
	t.Parallel()
	recorded := `{"Text":"","Message":{"type":"interactive","interactive":{"type":"button","body":{"text":"Correct?"}}},"Quote":true}`
	var got outgoing.Message
	if err := json.Unmarshal([]byte(recorded), &got); err != nil {
		t.Fatalf("decode: %v", err)
	}
	if got.Graph == nil || got.Graph.Interactive == nil || got.Graph.Interactive.Body.Text != "Correct?" || !got.Quote {
		t.Fatalf("decoded %+v, want the interactive message, quoted", got)
	}
	b, err := json.Marshal(outgoing.Message{Graph: &graph.Message{Type: "text"}})
	if err != nil {
		t.Fatalf("encode: %v", err)
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(b, &keys); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
	if diff := cmp.Diff([]string{"Message", "Quote", "Text"}, sortedKeys(keys)); diff != "" {
		t.Errorf("keys of %s (-want, +got):\n%s", b, diff)
	}
}

func sortedKeys(m map[string]json.RawMessage) []string {
	var out []string
	for _, k := range []string{"Message", "Quote", "Text", "Graph"} {
		if _, ok := m[k]; ok {
			out = append(out, k)
		}
	}
	return out
}

func TestIsZero(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		m    outgoing.Message
		want bool
	}{
		{"nothing", outgoing.Message{}, true},
		{"a quote alone", outgoing.Message{Quote: true}, true},
		{"text", outgoing.Message{Text: "hi"}, false},
		{"a Graph message", outgoing.Message{Graph: &graph.Message{Type: "text"}}, false},
	}
	for _, tc := range tests {
		if got := tc.m.IsZero(); got != tc.want {
			t.Errorf("%s: IsZero = %v, want %v", tc.name, got, tc.want)
		}
	}
}
