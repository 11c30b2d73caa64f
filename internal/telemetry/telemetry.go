// Package telemetry sets up OpenTelemetry tracing for a service: W3C trace context propagation
// (so webhook → process_inbound → process_outbound → Graph is one trace through the traceparent
// every task carries), an SDK tracer provider so every request has trace and span ids for the
// logs, and an exporter: Cloud Trace in production, none in dev unless TRACE_EXPORTER asks. An
// exporter that cannot be set up or is down never stops the service.
package telemetry

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	texporter "github.com/GoogleCloudPlatform/opentelemetry-operations-go/exporter/trace"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// Exporters TRACE_EXPORTER selects.
const (
	ExporterNone       = "none"
	ExporterCloudTrace = "cloudtrace"
	ExporterStdout     = "stdout"
)

// Options configure Setup.
type Options struct {
	ServiceName string
	ProjectID   string
	// Exporter is none, cloudtrace or stdout; empty means cloudtrace unless dev is true.
	Exporter string
	Dev      bool
	// SampleRatio is the share of new traces sampled (children follow their parent), 0 to 1; nil
	// samples every trace.
	SampleRatio *float64
	// SpanExporter, when set, replaces the exporter (tests pass an in-memory one).
	SpanExporter sdktrace.SpanExporter
	Logger       *slog.Logger
}

// Setup installs the global tracer provider and propagator. The returned function flushes and
// stops them; call it on shutdown (SIGTERM), before the process exits.
func Setup(ctx context.Context, opts Options) (func(context.Context) error, error) {
	logger := opts.Logger
	if logger == nil {
		logger = slog.Default()
	}
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	// An exporter failing at run time is logged, never fatal.
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		logger.Warn("telemetry error", "event", "telemetry_error", "error", err)
	}))

	ratio := 1.0
	if opts.SampleRatio != nil {
		ratio = *opts.SampleRatio
	}
	res, err := resource.New(ctx, resource.WithAttributes(attribute.String("service.name", opts.ServiceName)))
	if err != nil {
		return nil, fmt.Errorf("telemetry resource: %w", err)
	}
	tpOpts := []sdktrace.TracerProviderOption{
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(ratio))),
		sdktrace.WithResource(res),
	}

	exp := opts.SpanExporter
	if exp == nil {
		exp = newExporter(opts, logger)
	}
	if exp != nil {
		tpOpts = append(tpOpts, sdktrace.WithBatcher(exp))
	}
	tp := sdktrace.NewTracerProvider(tpOpts...)
	otel.SetTracerProvider(tp)
	return tp.Shutdown, nil
}

// Flush flushes and stops tracing through shutdown (what Setup returned) on its own short
// deadline, as the service's context has ended by then. A failure is logged: it never stops a
// service from exiting.
func Flush(ctx context.Context, shutdown func(context.Context) error, logger *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := shutdown(ctx); err != nil {
		logger.Warn("telemetry not flushed", "event", "telemetry_error", "error", err)
	}
}

func newExporter(opts Options, logger *slog.Logger) sdktrace.SpanExporter {
	name := opts.Exporter
	if name == "" {
		name = ExporterCloudTrace
		if opts.Dev {
			name = ExporterNone
		}
	}
	switch name {
	case ExporterNone:
		return nil
	case ExporterStdout:
		return &jsonExporter{w: os.Stderr}
	case ExporterCloudTrace:
		exp, err := texporter.New(texporter.WithProjectID(opts.ProjectID))
		if err != nil {
			logger.Warn("Cloud Trace exporter unavailable: tracing without export", "event", "telemetry_error", "error", err)
			return nil
		}
		return exp
	default:
		logger.Warn("unknown TRACE_EXPORTER: tracing without export", "event", "telemetry_error", "exporter", name)
		return nil
	}
}
