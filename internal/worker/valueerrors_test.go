package worker_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/wapipe/wapipe/internal/fanout"
	"github.com/wapipe/wapipe/internal/logging/logcheck"
	"github.com/wapipe/wapipe/tasks"
)

// TestInboundLogsValueErrors: Meta's value.errors (an error about a whole change, here 131051
// beside a message) are logged by process_inbound at ERROR, one line each, with Meta's code and
// title; neither Meta's message and details, the message's text, nor the contact's number reach
// the log, and the delivery is processed as usual.
func TestInboundLogsValueErrors(t *testing.T) {
	t.Parallel()
	const (
		text    = "private words of the contact"
		details = "details that quote private words"
	)
	payload := []byte(`{"object":"whatsapp_business_account","entry":[{"id":"102290129340398","changes":[{"field":"messages","value":{
		"messaging_product":"whatsapp","metadata":{"display_phone_number":"15550001111","phone_number_id":"106540352242922"},
		"contacts":[{"profile":{"name":"A"},"wa_id":"` + customerPhone + `"}],
		"messages":[{"from":"` + customerPhone + `","id":"wamid.valueerr1","timestamp":"1700000000","type":"text","text":{"body":"` + text + `"}}],
		"errors":[{"code":131051,"title":"Message type unknown","message":"` + details + `","error_data":{"details":"` + details + `"}},
		          {"code":131000,"title":"Something went wrong"}]}}]}]}`)
	hs := newHarness(t)
	got := hs.run(tasks.ProcessInboundPath, inboundTask("evt-value-errors", payload), attempt{})
	if got.Code != 200 {
		t.Fatalf("status %d (%v), want 200", got.Code, got.Body)
	}
	logs := hs.logs.String()
	if n := logcheck.Check(t, logs, []string{customerPhone}, nil); n == 0 {
		t.Fatal("no log line")
	}
	var lines []map[string]any
	for line := range strings.Lines(logs) {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil || m["event"] != fanout.EventMetaValueError {
			continue
		}
		lines = append(lines, m)
	}
	want := []struct {
		code  float64
		title string
	}{{131051, "Message type unknown"}, {131000, "Something went wrong"}}
	if len(lines) != len(want) {
		t.Fatalf("%d %s lines, want %d:\n%s", len(lines), fanout.EventMetaValueError, len(want), logs)
	}
	for i, w := range want {
		m := lines[i]
		if m["severity"] != "ERROR" || m["meta_error_code"] != w.code || m["meta_error_title"] != w.title ||
			m["phone_number_id"] != "106540352242922" || m["field"] != "messages" {
			t.Errorf("line %d = %v, want severity ERROR, code %v, title %q, the number and the field", i, m, w.code, w.title)
		}
	}
	for _, secret := range []string{text, details} {
		if strings.Contains(logs, secret) {
			t.Errorf("the logs hold %q:\n%s", secret, logs)
		}
	}
}
