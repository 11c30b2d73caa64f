package devstack_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/wapipe/wapipe/internal/devstack"
	"github.com/wapipe/wapipe/internal/keyedid"
	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/internal/logging/logcheck"
	"github.com/wapipe/wapipe/internal/testenv"
	"github.com/wapipe/wapipe/internal/webhook"
	"github.com/wapipe/wapipe/internal/whatsapp"
	"github.com/wapipe/wapipe/tasks"
)

func TestMain(m *testing.M) { os.Exit(testenv.RunWithFirestore(m)) }

// keptSpans is an in-memory exporter whose spans survive the provider's shutdown (the stock one
// clears them), so the test can read them after the stack has flushed.
type keptSpans struct{ *tracetest.InMemoryExporter }

func (keptSpans) Shutdown(context.Context) error { return nil }

const (
	customerPhone = "447700900123"
	customerText  = "Can I move my booking to Friday at 7pm?"
)

// TestOneTracePerMessage runs one message through webhook → process_inbound → process_outbound →
// Graph and finds one trace id on every hop's log lines and spans. It also reads every log line of
// the run for anything private. (One test, not two: tracing is process-wide.)
func TestOneTracePerMessage(t *testing.T) {
	host := testenv.FirestoreHost(t)
	_, project := testenv.Firestore(t)
	exp := keptSpans{tracetest.NewInMemoryExporter()}
	logs := &testenv.LogBuffer{}
	st, err := devstack.Start(context.Background(), devstack.Options{
		FirestoreHost: host, Project: project, Queues: testenv.FastQueues(t),
		Logs:         func(string) io.Writer { return logs },
		SpanExporter: exp,
	})
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			st.Stop()
		}
	}()

	msgID := whatsapp.NewMessageID()
	o := whatsapp.SampleOptions{From: customerPhone, MessageID: msgID}
	post(t, st, whatsapp.SampleText(o, customerText))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	sends, err := st.Graph.WaitForSends(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	// A failed status names the customer's number too: it must not reach the logs either.
	post(t, st, whatsapp.SampleFailedStatus(whatsapp.SampleOptions{From: customerPhone, MessageID: sends[0].MessageID,
		BizOpaqueCallbackData: tasks.IdempotencyKey(keyedid.Dev(), msgID)}, 131026, "Message undeliverable", "recipient "+customerPhone))
	testenv.Eventually(t, 20*time.Second, func() bool {
		return strings.Contains(logs.String(), `"event":"status_applied"`)
	}, "the status was not applied")
	testenv.Eventually(t, 10*time.Second, func() bool {
		return strings.Contains(logs.String(), `"event":"outbound_sent"`)
	}, "no outbound_sent log line")
	st.Stop() // flushes the spans
	stopped = true

	// Logs: every line about this message carries the same trace.
	traces := map[string]bool{}
	events := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line is not JSON: %s", line)
		}
		if m["event_ref"] != logging.DevHasher().Ref(msgID) {
			continue
		}
		tr, _ := m["logging.googleapis.com/trace"].(string)
		if tr == "" || m["logging.googleapis.com/spanId"] == nil {
			t.Errorf("log line without trace fields: %s", line)
		}
		traces[tr] = true
		events[m["event"].(string)] = true
		if m["correlation_id"] == nil {
			t.Errorf("log line without correlation_id: %s", line)
		}
	}
	for _, ev := range []string{"webhook_accepted", "inbound_fanout", "outbound_sent"} {
		if !events[ev] {
			t.Errorf("no %s line for the message (events seen: %v)", ev, events)
		}
	}
	if len(traces) != 1 {
		t.Fatalf("the message's log lines carry %d traces, want 1: %v", len(traces), traces)
	}
	var traceID string
	for tr := range traces {
		traceID = tr[strings.LastIndex(tr, "/")+1:]
	}

	// Spans: the three hops and the Graph call are in that trace.
	names := map[string]bool{}
	for _, s := range exp.GetSpans() {
		if s.SpanContext.TraceID().String() == traceID {
			names[s.Name] = true
		}
	}
	for _, want := range []string{"POST " + webhook.Path, "POST " + tasks.ProcessInboundPath, "POST " + tasks.ProcessOutboundPath, "HTTP POST"} {
		if !names[want] {
			t.Errorf("no span %q in the trace (spans: %v)", want, names)
		}
	}

	// Privacy over the whole run: no wamid, phone number or unkeyed hash of either (ids appear
	// as event_ref and message_ref, the number as its ph_ ref).
	all := logs.String()
	logcheck.Check(t, all, []string{customerPhone}, []string{msgID, sends[0].MessageID})
	if want := `"to":"` + logging.DevHasher().Phone(customerPhone) + `"`; !strings.Contains(all, want) {
		t.Errorf("no outbound line carries %s", want)
	}
	for _, secret := range []string{customerPhone, customerText, st.AppSecret, st.InternalToken, devstack.DevAccessToken, st.VerifyToken} {
		if strings.Contains(all, secret) {
			t.Errorf("the logs contain %q", secret)
		}
	}
}

func post(t testing.TB, st *devstack.Stack, body []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, st.WebhookURL, bytes.NewReader(body))
	req.Header.Set("X-Hub-Signature-256", whatsapp.Sign(body, st.AppSecret))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("webhook answered %d", resp.StatusCode)
	}
}

var _ sdktrace.SpanExporter = keptSpans{}
