package logging_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/trace"

	"github.com/wapipe/wapipe/internal/logging"
)

func TestSeverityAndMessage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		level slog.Level
		want  string
	}{
		{slog.LevelDebug, "DEBUG"},
		{slog.LevelInfo, "INFO"},
		{slog.LevelWarn, "WARNING"},
		{slog.LevelError, "ERROR"},
		{logging.LevelCritical, "CRITICAL"},
	}
	for _, tc := range tests {
		var buf bytes.Buffer
		l := logging.New(&buf, logging.Options{Level: slog.LevelDebug})
		l.Log(context.Background(), tc.level, "hello", "event", "x")
		var got map[string]any
		if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
			t.Fatalf("not one JSON object: %q", buf.String())
		}
		if got["severity"] != tc.want || got["message"] != "hello" || got["event"] != "x" {
			t.Errorf("level %v: got %v, want severity %s", tc.level, got, tc.want)
		}
		if _, ok := got["level"]; ok {
			t.Errorf("level key still present: %v", got)
		}
	}
}

func TestTraceFields(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	l := logging.New(&buf, logging.Options{ProjectID: "proj"})
	tid, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	sid, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	ctx := trace.ContextWithSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled,
	}))
	l.InfoContext(ctx, "m")
	var got map[string]any
	if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if got["logging.googleapis.com/trace"] != "projects/proj/traces/4bf92f3577b34da6a3ce929d0e0e4736" ||
		got["logging.googleapis.com/spanId"] != "00f067aa0ba902b7" || got["logging.googleapis.com/trace_sampled"] != true {
		t.Errorf("trace fields = %v", got)
	}
}

func TestContextLogger(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	ctx := logging.WithLogger(context.Background(), logging.New(&buf, logging.Options{}))
	ctx, _ = logging.With(ctx, "correlation_id", "c1")
	logging.FromContext(ctx).InfoContext(ctx, "m")
	if !strings.Contains(buf.String(), `"correlation_id":"c1"`) {
		t.Errorf("attached attribute missing: %s", buf.String())
	}
}

func TestMaskPhone(t *testing.T) {
	t.Parallel()
	if got := logging.MaskPhone("16505551234"); got != "*********34" {
		t.Errorf("MaskPhone = %s", got)
	}
}
