package telemetry

import (
	"context"
	"encoding/json"
	"io"
	"sync"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// jsonExporter writes one line per span, for looking at traces locally without a collector.
type jsonExporter struct {
	mu sync.Mutex
	w  io.Writer
}

type spanLine struct {
	Trace    string `json:"trace_id"`
	Span     string `json:"span_id"`
	Parent   string `json:"parent_span_id,omitempty"`
	Name     string `json:"name"`
	Service  string `json:"service,omitempty"`
	Duration int64  `json:"duration_us"`
	Status   string `json:"status"`
}

func (e *jsonExporter) ExportSpans(_ context.Context, spans []sdktrace.ReadOnlySpan) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	enc := json.NewEncoder(e.w)
	for _, s := range spans {
		l := spanLine{
			Trace:    s.SpanContext().TraceID().String(),
			Span:     s.SpanContext().SpanID().String(),
			Name:     s.Name(),
			Duration: s.EndTime().Sub(s.StartTime()).Microseconds(),
			Status:   s.Status().Code.String(),
		}
		if s.Parent().IsValid() {
			l.Parent = s.Parent().SpanID().String()
		}
		for _, kv := range s.Resource().Attributes() {
			if kv.Key == "service.name" {
				l.Service = kv.Value.AsString()
			}
		}
		if err := enc.Encode(l); err != nil {
			return err
		}
	}
	return nil
}

func (e *jsonExporter) Shutdown(context.Context) error { return nil }
