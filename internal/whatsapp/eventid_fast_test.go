package whatsapp

import (
	"errors"
	"testing"
)

// eventIDCases are bodies whose shape the quick walk must either settle exactly as InboundEventID
// does or hand over to it.
var eventIDCases = []string{
	`{"entry":[{"changes":[{"value":{"messages":[{"id":"wamid.A","type":"text"}]}}]}]}`,
	`{"entry":[{"changes":[{"value":{"statuses":[{"id":"wamid.S","status":"read"}]}}]}]}`,
	`{"entry":[{"changes":[{"value":{"statuses":[{"status":"sent","id":"wamid.S"}],"messages":[{"id":"wamid.M"}]}}]}]}`,
	`{"entry":[{"changes":[{"value":{"statuses":[{"id":"s1","status":"read"}]}},{"value":{"messages":[{"id":"m2"}]}}]}]}`,
	`{"entry":[{"changes":[{"value":{"messages":[]}},{"value":{"messages":[{"id":"second"}]}}]}]}`,
	`{"entry":[{"changes":[{"value":{"messages":[{"id":""}],"statuses":[{"id":"s","status":"read"}]}}]}]}`,
	`{"entry":[{"changes":[{"value":{"messages":[{"type":"text"}]}}]}]}`,
	`{"entry":[{"changes":[{"value":{"messages":[{"id":7}]}}]}]}`,
	`{"entry":[{"changes":[{"value":{"messages":[{"id":"a\u0041"}]}}]}]}`,
	`{"entry":[{"changes":[{"value":{"messages":[{"id":"a","id":"b"}]}}]}]}`,
	`{"entry":[{"changes":[{"value":{"messages":[{"ID":"upper"}]}}]}]}`,
	`{"entry":[{"changes":[{"value":{"Messages":[{"id":"b"}],"messages":[{"id":"a"}]}}]}]}`,
	`{"Entry":[{"changes":[{"value":{"messages":[{"id":"a"}]}}]}]}`,
	`{"entry":[{"changes":[{"value":{"messages":[{"id":"a"}]}}]}],"entry":[]}`,
	`{"entry":[{"changes":[{"value":{"messages":null}}]}]}`,
	`{"entry":[{"changes":[{"value":{"messages":[1,{"id":"x"}]}}]}]}`,
	`{"entry":[{"changes":[{"value":{"messages":[{"id":"x"},1]}}]}]}`,
	`{"entry":[{"changes":[{"value":{"statuses":[{"id":"s","status":""}]}}]}]}`,
	`{"entry":[{"changes":[{"value":{"statuses":[{"id":"s","Status":"read"}]}}]}]}`,
	`{"entry":[{"time":1,"changes":[{"value":{"errors":[{"code":1}]}}]}]}`,
	`{"entry":[{"id":"W","changes":[{"field":"messages","value":{"messaging_product":"whatsapp","metadata":{"phone_number_id":"P"},"contacts":[{"wa_id":"1"}],"messages":[{"from":"1","id":"wamid.full","timestamp":"1","type":"text","text":{"body":"hi \" there"}}]}}]}]}`,
	` {"entry":[]} `,
	"{\"entry\":[{\"changes\":[{\"value\":{\"messages\":[{\"id\":\"bad\xff\"}]}}]}]}",
	`{}`,
}

// TestEventIDAgreesWithInboundEventID: the hot path's id is the contract's id, for every shape.
func TestEventIDAgreesWithInboundEventID(t *testing.T) {
	t.Parallel()
	for _, body := range eventIDCases {
		want, wantErr := InboundEventID([]byte(body), nil)
		got, err := EventID([]byte(body))
		if got != want || (err != nil) != (wantErr != nil) {
			t.Errorf("EventID(%s) = %q, %v; InboundEventID = %q, %v", body, got, err, want, wantErr)
		}
	}
}

// TestEventIDMalformed: what Parse refuses, EventID refuses, with ErrMalformed.
func TestEventIDMalformed(t *testing.T) {
	t.Parallel()
	for _, body := range []string{"", "null", "[1]", `"s"`, `{"entry":`, `{"a":1} {"b":2}`, `{"a":1}x`} {
		if _, err := EventID([]byte(body)); !errors.Is(err, ErrMalformed) {
			t.Errorf("EventID(%q) error = %v, want ErrMalformed", body, err)
		}
	}
}

// FuzzEventID: EventID never panics and always agrees with InboundEventID.
func FuzzEventID(f *testing.F) {
	addTestdataSeeds(f)
	for _, body := range eventIDCases {
		f.Add([]byte(body))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		want, wantErr := InboundEventID(body, nil)
		got, err := EventID(body)
		if got != want || (err != nil) != (wantErr != nil) {
			t.Fatalf("EventID = %q, %v; InboundEventID = %q, %v", got, err, want, wantErr)
		}
	})
}

// BenchmarkEventID is the hot path's decoding of a 1 KB text delivery.
func BenchmarkEventID(b *testing.B) {
	body := SampleText(SampleOptions{}, "I would like to book a table for two at eight tonight, please")
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := EventID(body); err != nil {
			b.Fatal(err)
		}
	}
}
