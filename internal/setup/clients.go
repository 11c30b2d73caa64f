package setup

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"cloud.google.com/go/firestore"

	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/internal/server"
	"github.com/wapipe/wapipe/internal/taskqueue"
	"github.com/wapipe/wapipe/internal/telemetry"
)

// Logger returns the service's JSON logger in Cloud Logging's format.
func (b *Base) Logger() *slog.Logger {
	return logging.New(os.Stdout, logging.Options{Level: logging.ParseLevel(b.LogLevel), ProjectID: b.ProjectID})
}

// Telemetry sets up tracing for the service. The returned function flushes and stops it on its own
// short deadline (the service's context has ended by then); defer it after the server drains.
func (b *Base) Telemetry(ctx context.Context, service string, logger *slog.Logger) (func(), error) {
	shutdown, err := telemetry.Setup(ctx, telemetry.Options{
		ServiceName: service,
		ProjectID:   b.ProjectID,
		Exporter:    b.TraceExporter,
		Dev:         b.IsDev(),
		SampleRatio: b.TraceSampleRatio,
		Logger:      logger,
	})
	if err != nil {
		return nil, err
	}
	return func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := shutdown(ctx); err != nil {
			logger.Warn("telemetry not flushed", "event", "telemetry_error", "error", err)
		}
	}, nil
}

// Firestore connects to the configured database (the emulator when FIRESTORE_EMULATOR_HOST is
// set: the client library reads that itself).
func (b *Base) Firestore(ctx context.Context) (*firestore.Client, error) {
	c, err := firestore.NewClientWithDatabase(ctx, b.ProjectID, b.FirestoreDatabase)
	if err != nil {
		return nil, fmt.Errorf("firestore.NewClientWithDatabase: %w", err)
	}
	return c, nil
}

// Clients connects both services' shared clients, Firestore and the task producer, and returns a
// function that closes them.
func (b *Base) Clients(ctx context.Context) (*firestore.Client, *taskqueue.Client, func(), error) {
	fs, err := b.Firestore(ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	tq, err := b.Tasks(ctx)
	if err != nil {
		fs.Close()
		return nil, nil, nil, err
	}
	return fs, tq, func() { tq.Close(); fs.Close() }, nil
}

// Tasks connects to Cloud Tasks (or CLOUD_TASKS_EMULATOR_HOST) with the task settings of b.
func (b *Base) Tasks(ctx context.Context) (*taskqueue.Client, error) {
	c, err := taskqueue.New(ctx, taskqueue.Config{
		ProjectID:           b.ProjectID,
		Location:            b.TasksLocation,
		EmulatorHost:        b.TasksEmulatorHost,
		BaseURL:             b.InternalTaskBaseURL,
		Token:               b.InternalTaskToken,
		ServiceAccountEmail: b.TasksServiceAccountEmail,
	})
	if err != nil {
		return nil, fmt.Errorf("taskqueue.New: %w", err)
	}
	return c, nil
}

// Serve runs a service the way both binaries do: tracing set up first, the service built, served
// on ln (or on :$PORT when ln is nil) until ctx ends, then drained, its clients closed and its
// telemetry flushed.
func (b *Base) Serve(ctx context.Context, name string, ln net.Listener, logger *slog.Logger,
	build func(context.Context) (http.Handler, func(), error)) error {
	stopTelemetry, err := b.Telemetry(ctx, name, logger)
	if err != nil {
		return err
	}
	defer stopTelemetry()
	h, closeClients, err := build(ctx)
	if err != nil {
		return err
	}
	defer closeClients()
	if ln == nil {
		if ln, err = net.Listen("tcp", ":"+b.Port); err != nil {
			return fmt.Errorf("listen on :%s: %w", b.Port, err)
		}
	}
	return server.ServeListener(ctx, ln, h, logger)
}
