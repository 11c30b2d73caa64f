package webhook

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/wapipe/wapipe/tasks"
)

// TestAppendInboundIsEncodingJSON: the hand-built task body is byte for byte what encoding/json
// makes of the same task (without HTML escaping), whatever the ids hold.
func TestAppendInboundIsEncodingJSON(t *testing.T) {
	t.Parallel()
	received := time.Date(2026, 11, 23, 12, 0, 0, 123456789, time.UTC)
	payload := []byte("{ \"entry\" : [ {\"text\": \"<b>&\\u2028 caf\u00e9\"} ] }\n")
	for _, id := range []string{
		"wamid.HBgLMTY1MDU1NTEyMzQVAgASGBQzRUIwQzc2N0Q3MTk0NjE5RUY0QQA=",
		"wamid.S:delivered",
		"quote\" backslash\\ tab\t nl\n cr\r bs\b ff\f nul\x00 esc\x1b",
		"line\u2028para\u2029 <html>&amp; caf\u00e9 \U0001F600",
		"bad utf-8 \xff\xfe end",
		"",
	} {
		in := tasks.Inbound{InboundEventID: id, CorrelationID: id, ReceivedAt: received}
		got, err := appendInbound(nil, in, payload)
		if err != nil {
			t.Fatal(err)
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, payload); err != nil {
			t.Fatal(err)
		}
		in.Payload = compact.Bytes()
		want, err := encodeTask(in)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("id %q:\n got %s\nwant %s", id, got, want)
		}
	}
}
