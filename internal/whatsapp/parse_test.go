package whatsapp

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParse(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		body    string
		wantErr bool
		want    *Payload
	}{
		{name: "empty", body: "", wantErr: true},
		{name: "whitespace", body: " \n\t", wantErr: true},
		{name: "null", body: "null", wantErr: true},
		{name: "array", body: `[{"object":"whatsapp_business_account"}]`, wantErr: true},
		{name: "string", body: `"x"`, wantErr: true},
		{name: "number", body: `42`, wantErr: true},
		{name: "truncated", body: `{"object":"whatsapp_business_account","entry":[`, wantErr: true},
		{name: "two objects", body: `{} {}`, wantErr: true},
		{name: "trailing garbage", body: `{}x`, wantErr: true},
		{name: "not JSON", body: `object=whatsapp`, wantErr: true},
		{name: "empty object", body: `{}`, want: &Payload{}},
		{name: "surrounding whitespace", body: " \r\n{\"object\":\"whatsapp_business_account\"}\n", want: &Payload{Object: "whatsapp_business_account"}},
		{
			name: "unknown fields and types are kept quietly",
			body: `{"object":"whatsapp_business_account","future":{"x":1},"entry":[{"id":"1","changes":[{"field":"messages","value":{"metadata":{"phone_number_id":"2"},"messages":[{"id":"wamid.A","type":"hologram","hologram":{"depth":3}}]}}]}]}`,
			want: &Payload{Object: "whatsapp_business_account", Entry: []Entry{{ID: "1", Changes: []Change{{Field: "messages", Value: Value{
				Metadata: Metadata{PhoneNumberID: "2"},
				Messages: []InboundMessage{{ID: "wamid.A", Type: "hologram", Raw: []byte(`{"id":"wamid.A","type":"hologram","hologram":{"depth":3}}`)}},
			}}}}}},
		},
		{
			name: "a field of an unexpected type is skipped, not fatal",
			body: `{"object":"whatsapp_business_account","entry":[{"id":"1","changes":[{"field":"messages","value":{"messages":[{"id":"wamid.B","timestamp":1749416383,"type":"text","text":{"body":"hi"}}]}}]}]}`,
			want: &Payload{Object: "whatsapp_business_account", Entry: []Entry{{ID: "1", Changes: []Change{{Field: "messages", Value: Value{
				Messages: []InboundMessage{{ID: "wamid.B", Type: "text", Text: &Text{Body: "hi"}, Raw: []byte(`{"id":"wamid.B","timestamp":1749416383,"type":"text","text":{"body":"hi"}}`)}},
			}}}}}},
		},
		{
			name: "a non-number where Meta documents a number is skipped",
			body: `{"entry":[{"id":"1","time":"yesterday","changes":[]}]}`,
			want: &Payload{Entry: []Entry{{ID: "1", Changes: []Change{}}}},
		},
		{
			name: "numbers stay as written",
			body: `{"entry":[{"id":"1","time":1749416500}]}`,
			want: &Payload{Entry: []Entry{{ID: "1", Time: "1749416500"}}},
		},
		{
			name: "entry of the wrong type",
			body: `{"object":"whatsapp_business_account","entry":{"id":"1"}}`,
			want: &Payload{Object: "whatsapp_business_account"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := Parse([]byte(tc.body))
			if tc.wantErr {
				if !errors.Is(err, ErrMalformed) {
					t.Fatalf("Parse error = %v; want one wrapping ErrMalformed", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Parse (-want, +got):\n%s", diff)
			}
		})
	}
}

// TestParseErrorHidesContent guards the privacy rule: a parse error is logged, so it must not
// echo the body.
func TestParseErrorHidesContent(t *testing.T) {
	t.Parallel()
	const secret = "my card number is 4111111111111111"
	for _, body := range []string{
		`{"text":{"body":"` + secret + `"}`,
		`{"text":{"body":"` + secret + `"}}}`,
		`{"text":{"body":"` + secret + "\x01" + `"}}`,
	} {
		_, err := Parse([]byte(body))
		if err == nil {
			t.Fatalf("Parse(%q) succeeded; want an error", body)
		}
		if strings.Contains(err.Error(), "4111") || strings.Contains(err.Error(), "card") {
			t.Errorf("Parse error %q leaks the body", err)
		}
	}
}

// TestParseFastPathMatchesSlowPath checks the fast path on every sample and on bodies built to
// send Parse down the slow path.
func TestParseFastPathMatchesSlowPath(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join("testdata", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	bodies := map[string][]byte{
		"duplicate entry":       []byte(`{"entry":[{"changes":[{"value":{"messages":[{"id":"a","type":"text"}]}}]}],"entry":[{"id":"2"}]}`),
		"case-variant messages": []byte(`{"entry":[{"changes":[{"value":{"messages":[{"id":"a"}],"Messages":[{"id":"b"}]}}]}]}`),
		"escaped key":           []byte(`{"entry":[{"changes":[{"value":{"m\u0065ssages":[{"id":"a"}]}}]}]}`),
		"null message":          []byte(`{"entry":[{"changes":[{"value":{"messages":[null,{"id":"b"}]}}]}]}`),
		"null messages":         []byte(`{"entry":[{"changes":[{"value":{"messages":null}}]}]}`),
		"value not an object":   []byte(`{"entry":[{"changes":[{"value":[{"messages":[{"id":"a"}]}]}]}]}`),
		"empty arrays":          []byte(`{"entry":[],"x":[{"changes":[]}]}`),
		"strings with escapes":  []byte(`{"entry":[{"changes":[{"value":{"messages":[{"id":"a\"}]\\","text":{"body":"}{]["}}]}}]}]}`),
	}
	for _, f := range files {
		bodies[filepath.Base(f)] = readTestdata(t, filepath.Base(f))
	}
	for name, body := range bodies {
		got, err := Parse(body)
		if err != nil {
			t.Errorf("%s: Parse: %v", name, err)
			continue
		}
		want, _ := parseSlow(body)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: fast and slow paths differ (-slow, +fast):\n%s", name, diff)
		}
	}
}
