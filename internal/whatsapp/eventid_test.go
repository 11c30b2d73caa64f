package whatsapp

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

func TestInboundEventID(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		body []byte
		want string
	}{
		{name: "message", body: readTestdata(t, "text.json"), want: "wamid.HBgLMTY1MDU1NTEyMzQVAgASGBQzQTRBNjU5OUZFRDAwMkE4RTFDMgA="},
		{name: "interactive message", body: readTestdata(t, "interactive_list_reply.json"), want: "wamid.HBgLMTY1MDU1NTEyMzQVAgASGBQzQTY5NjBCRUQ2REJCMTk2NkFENwA="},
		{name: "status only", body: readTestdata(t, "status_failed.json"), want: "wamid.HBgLMTY1MDU1NTEyMzQVAgARGBI3OEI3QjY2RjA4NUI2RDU2RUUA:failed"},
		{name: "status read", body: readTestdata(t, "status_read.json"), want: "wamid.HBgLMTY1MDU1NTEyMzQVAgARGBI3OEI3QjY2RjA4NUI2RDU2RUUA:read"},
		{
			// The first entry has only a status; a message anywhere wins over statuses, and the
			// first message in entry/change order is the one.
			name: "multi entry: first message of the first change that has messages",
			body: readTestdata(t, "multi_entry.json"),
			want: "wamid.HBgLMTY1MDU1NTEyMzUVAgASGBQzQTAwMDAwMDAwMDAwMDAwMDAwMQA=",
		},
		{
			name: "empty messages arrays are skipped",
			body: []byte(`{"entry":[{"changes":[{"value":{"messages":[]}},{"value":{"messages":[{"id":"wamid.second"}]}}]}]}`),
			want: "wamid.second",
		},
		{
			name: "statuses across entries: the first one",
			body: []byte(`{"entry":[{"changes":[{"value":{}}]},{"changes":[{"value":{"statuses":[{"id":"wamid.s1","status":"sent"},{"id":"wamid.s2","status":"read"}]}}]}]}`),
			want: "wamid.s1:sent",
		},
		{
			name: "neither: hash of the canonical body",
			body: []byte("{ \"object\" : \"whatsapp_business_account\",\n \"entry\": [ {\"id\": \"1\", \"changes\": [] } ] }"),
			want: sha256Hex(`{"entry":[{"changes":[],"id":"1"}],"object":"whatsapp_business_account"}`),
		},
		{
			name: "neither: entry time is volatile",
			body: []byte(`{"object":"whatsapp_business_account","entry":[{"id":"1","time":1749416500,"changes":[]}]}`),
			want: sha256Hex(`{"entry":[{"changes":[],"id":"1"}],"object":"whatsapp_business_account"}`),
		},
		{
			name: "message without an id falls through to the hash",
			body: []byte(`{"entry":[{"changes":[{"value":{"messages":[{"type":"text"}]}}]}]}`),
			want: sha256Hex(`{"entry":[{"changes":[{"value":{"messages":[{"type":"text"}]}}]}]}`),
		},
		{
			name: "status without a status falls through to the hash",
			body: []byte(`{"entry":[{"changes":[{"value":{"statuses":[{"id":"wamid.s"}]}}]}]}`),
			want: sha256Hex(`{"entry":[{"changes":[{"value":{"statuses":[{"id":"wamid.s"}]}}]}]}`),
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p, err := Parse(tc.body)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			got, err := InboundEventID(tc.body, p)
			if err != nil {
				t.Fatalf("InboundEventID: %v", err)
			}
			if got != tc.want {
				t.Errorf("InboundEventID = %q; want %q", got, tc.want)
			}
			// Without a parsed payload it parses the body itself, with the same answer.
			got2, err := InboundEventID(tc.body, nil)
			if err != nil || got2 != got {
				t.Errorf("InboundEventID(body, nil) = %q, %v; want %q, nil", got2, err, got)
			}
		})
	}
}

func TestInboundEventIDMalformed(t *testing.T) {
	t.Parallel()
	for _, body := range []string{"", "null", "[]", "{", `{"a":1} {}`} {
		if _, err := InboundEventID([]byte(body), nil); !errors.Is(err, ErrMalformed) {
			t.Errorf("InboundEventID(%q) error = %v; want ErrMalformed", body, err)
		}
	}
	// A parsed payload with a malformed body can only reach the hash, which rejects it too.
	if _, err := InboundEventID([]byte(`{"x":`), &Payload{}); !errors.Is(err, ErrMalformed) {
		t.Errorf("InboundEventID of a truncated body = %v; want ErrMalformed", err)
	}
}

// TestCanonicalHashStability lists bodies that are the same event (same id) and bodies that
// are not (different ids).
func TestCanonicalHashStability(t *testing.T) {
	t.Parallel()
	const base = `{"object":"whatsapp_business_account","entry":[{"id":"1","time":100,"changes":[{"field":"account_update","value":{"event":"VERIFIED_ACCOUNT","n":1.50,"s":"A<b>&é"}}]}]}`
	same := []struct{ name, body string }{
		{"keys reordered", `{"entry":[{"changes":[{"value":{"s":"A<b>&é","n":1.50,"event":"VERIFIED_ACCOUNT"},"field":"account_update"}],"time":100,"id":"1"}],"object":"whatsapp_business_account"}`},
		{"indented", "{\n  \"object\": \"whatsapp_business_account\",\n  \"entry\": [\n    {\n      \"id\": \"1\",\n      \"time\": 100,\n      \"changes\": [\n        {\n          \"field\": \"account_update\",\n          \"value\": { \"event\": \"VERIFIED_ACCOUNT\", \"n\": 1.50, \"s\": \"A<b>&é\" }\n        }\n      ]\n    }\n  ]\n}\n"},
		{"optional escapes", `{"object":"whatsapp_business_account","entry":[{"id":"1","time":100,"changes":[{"field":"account_update","value":{"event":"VERIFIED_ACCOUNT","n":1.50,"s":"\u0041\u003cb\u003e\u0026\u00e9"}}]}]}`},
		{"redelivery with a new entry time", `{"object":"whatsapp_business_account","entry":[{"id":"1","time":999,"changes":[{"field":"account_update","value":{"event":"VERIFIED_ACCOUNT","n":1.50,"s":"A<b>&é"}}]}]}`},
		{"entry time absent", `{"object":"whatsapp_business_account","entry":[{"id":"1","changes":[{"field":"account_update","value":{"event":"VERIFIED_ACCOUNT","n":1.50,"s":"A<b>&é"}}]}]}`},
	}
	different := []struct{ name, body string }{
		{"number written differently", `{"object":"whatsapp_business_account","entry":[{"id":"1","time":100,"changes":[{"field":"account_update","value":{"event":"VERIFIED_ACCOUNT","n":1.5,"s":"A<b>&é"}}]}]}`},
		{"other value", `{"object":"whatsapp_business_account","entry":[{"id":"1","time":100,"changes":[{"field":"account_update","value":{"event":"DISABLED_UPDATE","n":1.50,"s":"A<b>&é"}}]}]}`},
		{"time elsewhere is not volatile", `{"object":"whatsapp_business_account","entry":[{"id":"1","time":100,"changes":[{"field":"account_update","value":{"event":"VERIFIED_ACCOUNT","n":1.50,"s":"A<b>&é","time":5}}]}]}`},
		{"other entry id", `{"object":"whatsapp_business_account","entry":[{"id":"2","time":100,"changes":[{"field":"account_update","value":{"event":"VERIFIED_ACCOUNT","n":1.50,"s":"A<b>&é"}}]}]}`},
	}
	id := func(body string) string {
		t.Helper()
		got, err := InboundEventID([]byte(body), nil)
		if err != nil {
			t.Fatalf("InboundEventID: %v", err)
		}
		return got
	}
	want := id(base)
	for _, tc := range same {
		if got := id(tc.body); got != want {
			t.Errorf("%s: id = %s; want %s (same event)", tc.name, got, want)
		}
	}
	for _, tc := range different {
		if got := id(tc.body); got == want {
			t.Errorf("%s: id = %s; want a different id", tc.name, got)
		}
	}
	// Redeliveries of a real non-message payload keep their id.
	tmpl := readTestdata(t, "template_status_update.json")
	redelivered := []byte(`{"entry":[{"changes":[{"field":"message_template_status_update","value":{"reason":"NONE","message_template_language":"en_US","message_template_name":"order_confirmation","message_template_id":1689556908129832,"event":"APPROVED"}}],"time":1749419999,"id":"102290129340398"}],"object":"whatsapp_business_account"}`)
	if a, b := id(string(tmpl)), id(string(redelivered)); a != b {
		t.Errorf("template status update redelivered: id %s != %s", a, b)
	}
}

func TestCanonicalJSON(t *testing.T) {
	t.Parallel()
	cases := []struct{ in, want string }{
		{`{}`, `{}`},
		{` { "b" : [ 1 , 2.0 , -3e10 , true , false , null ] , "a" : { } } `, `{"a":{},"b":[1,2.0,-3e10,true,false,null]}`},
		{`{"s":"\"\\\/\b\f\n\r\t\u0001\u001f\u007f"}`, "{\"s\":\"\\\"\\\\/\\b\\f\\n\\r\\t\\u0001\\u001f\x7f\"}"},
		{`{"s":"\ud83d\udc4d é \u2028"}`, "{\"s\":\"\U0001F44D é \u2028\"}"},
		{`{"b":1,"a":2,"b":3}`, `{"a":2,"b":3}`},
		{`{"é":1,"z":2,"Z":3}`, `{"Z":3,"z":2,"é":1}`},
	}
	for _, tc := range cases {
		got, err := CanonicalJSON([]byte(tc.in))
		if err != nil {
			t.Errorf("CanonicalJSON(%s): %v", tc.in, err)
			continue
		}
		if diff := cmp.Diff(tc.want, string(got)); diff != "" {
			t.Errorf("CanonicalJSON(%s) (-want, +got):\n%s", tc.in, diff)
		}
	}
}
